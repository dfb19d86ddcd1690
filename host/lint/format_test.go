package lint_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/lint"
)

func sampleReport() *lint.Report {
	return &lint.Report{Files: 2, Diagnostics: []lint.Diagnostic{
		{File: "scripts/a b.luau", Line: 3, Column: 5, EndLine: 3, EndColumn: 10, Severity: lint.Error, Rule: "unknown_global",
			Message: "unknown global 'pirnt': it does not exist in the toolscript sandbox; did you mean 'print'?"},
		{File: "jobs,x:1.lua", Line: 1, Column: 7, EndLine: 1, EndColumn: 8, Severity: lint.Warning, Rule: "unused_local",
			Message: "100% unused\nsecond line"},
	}}
}

func TestWriteFormats(t *testing.T) {
	cases := []struct {
		format lint.Format
		want   string
	}{
		{lint.FormatText, "" +
			"scripts/a b.luau:3:5: error: unknown global 'pirnt': it does not exist in the toolscript sandbox; did you mean 'print'? [unknown_global]\n" +
			"jobs,x:1.lua:1:7: warning: 100% unused\\nsecond line [unused_local]\n"},
		{lint.FormatGitHub, "" +
			"::error file=scripts/a b.luau,line=3,col=5,title=unknown_global::unknown global 'pirnt': it does not exist in the toolscript sandbox; did you mean 'print'?\n" +
			"::warning file=jobs%2Cx%3A1.lua,line=1,col=7,title=unused_local::100%25 unused%0Asecond line\n"},
		{lint.FormatJSON, `[
  {
    "file": "scripts/a b.luau",
    "line": 3,
    "column": 5,
    "end_line": 3,
    "end_column": 10,
    "severity": "error",
    "rule": "unknown_global",
    "message": "unknown global 'pirnt': it does not exist in the toolscript sandbox; did you mean 'print'?"
  },
  {
    "file": "jobs,x:1.lua",
    "line": 1,
    "column": 7,
    "end_line": 1,
    "end_column": 8,
    "severity": "warning",
    "rule": "unused_local",
    "message": "100% unused\nsecond line"
  }
]
`},
	}
	for _, c := range cases {
		t.Run(string(c.format), func(t *testing.T) {
			var buf bytes.Buffer
			if err := lint.Write(&buf, c.format, sampleReport(), lint.Tool{}); err != nil {
				t.Fatal(err)
			}
			if buf.String() != c.want {
				t.Errorf("got:\n%s\nwant:\n%s", buf.String(), c.want)
			}
		})
	}
}

func TestWriteEmpty(t *testing.T) {
	for _, f := range lint.Formats() {
		var buf bytes.Buffer
		if err := lint.Write(&buf, lint.Format(f), &lint.Report{}, lint.Tool{}); err != nil {
			t.Fatal(err)
		}
		switch lint.Format(f) {
		case lint.FormatJSON:
			if buf.String() != "[]\n" {
				t.Errorf("json: %q", buf.String())
			}
		case lint.FormatSARIF:
			var log struct {
				Runs []struct {
					Results []any `json:"results"`
				} `json:"runs"`
			}
			if err := json.Unmarshal(buf.Bytes(), &log); err != nil || len(log.Runs) != 1 || log.Runs[0].Results == nil {
				t.Errorf("sarif: %v: %s", err, buf.String())
			}
		default:
			if buf.Len() != 0 {
				t.Errorf("%s: %q", f, buf.String())
			}
		}
	}
}

func TestSARIFStructure(t *testing.T) {
	var buf bytes.Buffer
	if err := lint.Write(&buf, lint.FormatSARIF, sampleReport(), lint.Tool{Name: "toolscript", Version: "1.2.3"}); err != nil {
		t.Fatal(err)
	}
	var log struct {
		Schema  string `json:"$schema"`
		Version string `json:"version"`
		Runs    []struct {
			Tool struct {
				Driver struct {
					Name    string `json:"name"`
					Version string `json:"version"`
					Rules   []struct {
						ID     string `json:"id"`
						Config struct {
							Level string `json:"level"`
						} `json:"defaultConfiguration"`
					} `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			ColumnKind string `json:"columnKind"`
			Results    []struct {
				RuleID    string `json:"ruleId"`
				RuleIndex int    `json:"ruleIndex"`
				Level     string `json:"level"`
				Locations []struct {
					Physical struct {
						Artifact struct {
							URI string `json:"uri"`
						} `json:"artifactLocation"`
						Region struct {
							StartLine, StartColumn, EndLine, EndColumn int
						} `json:"region"`
					} `json:"physicalLocation"`
				} `json:"locations"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(buf.Bytes(), &log); err != nil {
		t.Fatal(err)
	}
	if log.Version != "2.1.0" || log.Schema != lint.SARIFSchema || len(log.Runs) != 1 {
		t.Fatalf("header: %+v", log)
	}
	run := log.Runs[0]
	if run.Tool.Driver.Name != "toolscript" || run.Tool.Driver.Version != "1.2.3" || run.ColumnKind != "unicodeCodePoints" {
		t.Errorf("driver: %+v", run.Tool.Driver)
	}
	if len(run.Tool.Driver.Rules) != len(lint.Rules()) {
		t.Fatalf("%d rules", len(run.Tool.Driver.Rules))
	}
	for i, r := range lint.Rules() {
		got := run.Tool.Driver.Rules[i]
		if got.ID != r.Name || got.Config.Level != string(r.Severity) {
			t.Errorf("rule %d: %+v, want %s/%s", i, got, r.Name, r.Severity)
		}
	}
	if len(run.Results) != 2 {
		t.Fatalf("%d results", len(run.Results))
	}
	for i, res := range run.Results {
		d := sampleReport().Diagnostics[i]
		if res.RuleID != d.Rule || run.Tool.Driver.Rules[res.RuleIndex].ID != d.Rule || res.Level != string(d.Severity) {
			t.Errorf("result %d: %+v", i, res)
		}
		reg := res.Locations[0].Physical.Region
		if reg.StartLine != d.Line || reg.StartColumn != d.Column || reg.EndLine != d.EndLine || reg.EndColumn != d.EndColumn {
			t.Errorf("result %d region: %+v", i, reg)
		}
	}
	if uri := run.Results[0].Locations[0].Physical.Artifact.URI; uri != "scripts/a%20b.luau" {
		t.Errorf("uri = %q", uri)
	}
	if uri := run.Results[1].Locations[0].Physical.Artifact.URI; uri != "./jobs,x:1.lua" {
		t.Errorf("uri = %q (a colon in the first segment needs ./)", uri)
	}
}

func TestParseFormat(t *testing.T) {
	for _, f := range lint.Formats() {
		if got, err := lint.ParseFormat(f); err != nil || string(got) != f {
			t.Errorf("ParseFormat(%q) = %q, %v", f, got, err)
		}
	}
	if _, err := lint.ParseFormat("xml"); err == nil || !strings.Contains(err.Error(), "text, json, github, sarif") {
		t.Errorf("ParseFormat(xml) = %v", err)
	}
}
