package lint

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/toolscript/toolscript/host/platform/termtext"
)

// Format is an output format of a lint report.
type Format string

// The formats.
const (
	// FormatText writes one line per diagnostic:
	// file:line:col: severity: message [rule]
	FormatText Format = "text"
	// FormatJSON writes one JSON array of diagnostics.
	FormatJSON Format = "json"
	// FormatGitHub writes GitHub Actions workflow commands, which GitHub
	// shows as annotations on the files.
	FormatGitHub Format = "github"
	// FormatSARIF writes a SARIF 2.1.0 log, for code scanning.
	FormatSARIF Format = "sarif"
)

// Formats returns every format's name.
func Formats() []string {
	return []string{string(FormatText), string(FormatJSON), string(FormatGitHub), string(FormatSARIF)}
}

// ParseFormat returns the format named name.
func ParseFormat(name string) (Format, error) {
	for _, f := range Formats() {
		if name == f {
			return Format(name), nil
		}
	}
	return "", fmt.Errorf("lint: unknown format %q (formats: %s)", name, strings.Join(Formats(), ", "))
}

// Tool identifies the linter in SARIF logs.
type Tool struct {
	Name    string // default "toolscript"
	Version string // optional
	// InformationURI is the tool's home page (optional).
	InformationURI string
}

// Write writes the report's diagnostics to w in format f.
func Write(w io.Writer, f Format, report *Report, tool Tool) error {
	bw := bufio.NewWriter(w)
	var err error
	switch f {
	case FormatText:
		err = writeText(bw, report)
	case FormatJSON:
		err = writeJSON(bw, report)
	case FormatGitHub:
		err = writeGitHub(bw, report)
	case FormatSARIF:
		err = writeSARIF(bw, report, tool)
	default:
		return fmt.Errorf("lint: unknown format %q", f)
	}
	if err != nil {
		return fmt.Errorf("lint: writing %s output: %w", f, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("lint: writing %s output: %w", f, err)
	}
	return nil
}

// writeText writes the diagnostics, then, with --effects, each script's
// effects (writeEffectsText). Text is for a person's terminal, and the
// scripts (their names, the source a message quotes) wrote much of it:
// each field is escaped as one line by host/platform/termtext, so that one
// diagnostic is one line and nothing in it acts on the terminal.
func writeText(w *bufio.Writer, report *Report) error {
	for _, d := range report.Diagnostics {
		fmt.Fprintf(w, "%s:%d:%d: %s: %s [%s]\n", termtext.Line(d.File), d.Line, d.Column, termtext.Line(string(d.Severity)), termtext.Line(d.Message), termtext.Line(d.Rule))
	}
	if report.Effects != nil {
		writeEffectsText(w, report.Effects)
	}
	return nil
}

// writeJSON writes the array of diagnostics; with --effects, an object
// {"diagnostics": [...], "effects": [...]}.
func writeJSON(w *bufio.Writer, report *Report) error {
	diags := report.Diagnostics
	if diags == nil {
		diags = []Diagnostic{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if report.Effects != nil {
		return enc.Encode(struct {
			Diagnostics []Diagnostic `json:"diagnostics"`
			Effects     []Effects    `json:"effects"`
		}{diags, report.Effects})
	}
	return enc.Encode(diags)
}

// writeGitHub writes workflow commands
// (::error file=F,line=L,col=C,title=T::message), escaped as GitHub's
// toolkit escapes them. The commands are toolscript's, so the output
// takes no termtext.Writer (it would escape them): each field passes
// host/platform/termtext itself (the message as text that may span
// lines), so that nothing in it acts on a terminal or is a command.
func writeGitHub(w *bufio.Writer, report *Report) error {
	for _, d := range report.Diagnostics {
		fmt.Fprintf(w, "::%s file=%s,line=%d,col=%d,title=%s::%s\n",
			d.Severity, escapeProperty(termtext.Line(d.File)), d.Line, d.Column,
			escapeProperty(termtext.Line(d.Rule)), escapeData(termtext.Text(d.Message)))
	}
	return nil
}

func escapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

func escapeProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

// SARIFSchema is the URI of the SARIF 2.1.0 JSON schema (OASIS standard,
// errata 01) that SARIF logs name.
const SARIFSchema = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"

type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool       sarifTool     `json:"tool"`
	ColumnKind string        `json:"columnKind"`
	Results    []sarifResult `json:"results"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	Version        string      `json:"version,omitempty"`
	InformationURI string      `json:"informationUri,omitempty"`
	Rules          []sarifRule `json:"rules"`
}

type sarifRule struct {
	ID                   string        `json:"id"`
	ShortDescription     sarifMessage  `json:"shortDescription"`
	FullDescription      sarifMessage  `json:"fullDescription"`
	Help                 sarifMessage  `json:"help"`
	DefaultConfiguration sarifRuleConf `json:"defaultConfiguration"`
}

type sarifRuleConf struct {
	Level string `json:"level"`
}

type sarifMessage struct {
	Text string `json:"text"`
}

type sarifResult struct {
	RuleID    string          `json:"ruleId"`
	RuleIndex int             `json:"ruleIndex"`
	Level     string          `json:"level"`
	Message   sarifMessage    `json:"message"`
	Locations []sarifLocation `json:"locations"`
}

type sarifLocation struct {
	PhysicalLocation sarifPhysicalLocation `json:"physicalLocation"`
}

type sarifPhysicalLocation struct {
	ArtifactLocation sarifArtifactLocation `json:"artifactLocation"`
	Region           sarifRegion           `json:"region"`
}

type sarifArtifactLocation struct {
	URI string `json:"uri"`
}

type sarifRegion struct {
	StartLine   int `json:"startLine"`
	StartColumn int `json:"startColumn"`
	EndLine     int `json:"endLine"`
	EndColumn   int `json:"endColumn"`
}

func writeSARIF(w *bufio.Writer, report *Report, tool Tool) error {
	if tool.Name == "" {
		tool.Name = "toolscript"
	}
	rules := Rules()
	driver := sarifDriver{Name: tool.Name, Version: tool.Version, InformationURI: tool.InformationURI}
	index := map[string]int{}
	for i, r := range rules {
		index[r.Name] = i
		driver.Rules = append(driver.Rules, sarifRule{
			ID:                   r.Name,
			ShortDescription:     sarifMessage{r.Summary},
			FullDescription:      sarifMessage{r.Summary + " " + r.Help},
			Help:                 sarifMessage{r.Help},
			DefaultConfiguration: sarifRuleConf{string(r.Severity)},
		})
	}
	results := []sarifResult{}
	for _, d := range report.Diagnostics {
		results = append(results, sarifResult{
			RuleID:    d.Rule,
			RuleIndex: index[d.Rule],
			Level:     string(d.Severity),
			Message:   sarifMessage{d.Message},
			Locations: []sarifLocation{{PhysicalLocation: sarifPhysicalLocation{
				ArtifactLocation: sarifArtifactLocation{URI: fileURI(d.File)},
				Region: sarifRegion{
					StartLine: d.Line, StartColumn: d.Column,
					EndLine: d.EndLine, EndColumn: d.EndColumn,
				},
			}}},
		})
	}
	log := sarifLog{
		Schema:  SARIFSchema,
		Version: "2.1.0",
		Runs:    []sarifRun{{Tool: sarifTool{Driver: driver}, ColumnKind: "unicodeCodePoints", Results: results}},
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(log)
}

// fileURI turns a path into a URI reference: relative paths stay relative
// (code scanning resolves them against the repository root), absolute ones
// become file:// URIs.
func fileURI(path string) string {
	slashed := filepath.ToSlash(path)
	if filepath.IsAbs(path) {
		if !strings.HasPrefix(slashed, "/") {
			slashed = "/" + slashed // a Windows drive letter
		}
		return (&url.URL{Scheme: "file", Path: slashed}).String()
	}
	return (&url.URL{Path: strings.TrimPrefix(slashed, "./")}).String()
}
