package app

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/lint"
	"github.com/toolscript/toolscript/host/platform/progressbar"
	"github.com/toolscript/toolscript/host/platform/termtext"
	"github.com/toolscript/toolscript/host/runtime/result"
)

// The listings below are what the command line prints for a person about
// a run, a plan and a lint report: the command needs no package but this
// one to print them.
//
// The listings below are for a person reviewing what a script did or
// would do, and the script wrote much of their text (file names, contents,
// URLs, bodies): every such field is escaped by host/platform/termtext, one line
// each, so that nothing it holds can move the cursor, clear what is shown,
// or start a line of its own. One effect is one line; each line of a diff
// is one line below it, with its prefix.

// PrintEffects writes a dry run's effects for a person: one line each, in
// order, a write's diff indented below it.
func PrintEffects(w io.Writer, res *result.Result) {
	n := len(res.Effects) + res.EffectsOmitted
	if n == 0 {
		fmt.Fprintln(w, "dry run: no effects (nothing would be changed)")
		return
	}
	fmt.Fprintf(w, "dry run: %s (nothing was changed):\n", result.Plural(n, "effect", "effects"))
	for i, e := range res.Effects {
		fmt.Fprintf(w, "%3d. %s\n", i+1, describeEffect(e))
		if e.Diff != "" {
			for line := range strings.SplitSeq(strings.TrimSuffix(e.Diff, "\n"), "\n") {
				fmt.Fprintf(w, "       %s\n", termtext.Line(line))
			}
		}
	}
	if res.EffectsOmitted > 0 {
		fmt.Fprintf(w, "     ... %s more left out\n", result.Plural(res.EffectsOmitted, "effect", "effects"))
	}
}

// PrintApplied writes what a plan run carried out for a person: the
// effects applied, in order, and the plan's entries left over, numbered
// as in the plan (the applied ones are its first entries).
func PrintApplied(w io.Writer, res *result.Result) {
	n := len(res.Effects) + res.EffectsOmitted
	fmt.Fprintf(w, "plan: %s applied:\n", result.Plural(n, "effect", "effects"))
	for i, e := range res.Effects {
		fmt.Fprintf(w, "%3d. %s\n", i+1, describeEffect(e))
	}
	if res.EffectsOmitted > 0 {
		fmt.Fprintf(w, "     ... %s more left out\n", result.Plural(res.EffectsOmitted, "effect", "effects"))
	}
	if unused := len(res.PlanUnused) + res.PlanUnusedOmitted; unused > 0 {
		fmt.Fprintf(w, "plan: %s not carried out:\n", result.Plural(unused, "entry", "entries"))
		for i, e := range res.PlanUnused {
			fmt.Fprintf(w, "%3d. %s\n", n+i+1, describeEffect(e))
		}
		if res.PlanUnusedOmitted > 0 {
			fmt.Fprintf(w, "     ... %s more left out\n", result.Plural(res.PlanUnusedOmitted, "entry", "entries"))
		}
	}
}

// describeEffect is one effect on one line.
func describeEffect(e effects.Effect) string {
	switch e.Op {
	case effects.OpWrite:
		size := int64(0)
		if e.Bytes != nil {
			size = *e.Bytes
		}
		return fmt.Sprintf("write  %s (%s, sha256 %s)", termtext.Line(e.Path), result.Plural(int(size), "byte", "bytes"), termtext.Line(e.SHA256))
	case effects.OpRename:
		return fmt.Sprintf("rename %s -> %s", termtext.Line(e.Path), termtext.Line(e.To))
	case effects.OpCall:
		line := "call   " + termtext.Line(e.Function)
		if e.Method != "" {
			line += ": " + termtext.Line(e.Method) + " " + termtext.Line(e.URL)
		}
		if len(e.Headers) > 0 {
			line += " headers " + termtext.Line(effects.FormatHeaders(e.Headers))
		}
		switch {
		case len(e.Body) > 0:
			line += " " + showBody(e.Body)
		case e.BodySHA256 != "":
			line += fmt.Sprintf(" (body of %s, sha256 %s)", result.Plural(int(e.BodyBytes), "byte", "bytes"), termtext.Line(e.BodySHA256))
		}
		return line
	}
	return fmt.Sprintf("%-6s %s", termtext.Line(string(e.Op)), termtext.Line(e.Path))
}

// maxBodyShown is how much of a call's body a listing shows, in bytes.
const maxBodyShown = 200

// showBody is a call's body on one line: JSON compacted (its line breaks
// are whitespace), cut at maxBodyShown bytes, and escaped as JSON.
func showBody(body []byte) string {
	var compact bytes.Buffer
	text := string(body)
	if json.Compact(&compact, body) == nil {
		text = compact.String()
	}
	cut := ""
	if len(text) > maxBodyShown {
		n := maxBodyShown
		for n > 0 && !utf8.RuneStart(text[n]) {
			n--
		}
		text, cut = text[:n], "..."
	}
	// Compact JSON has no line break; a body that is not JSON is
	// escaped as a line.
	if strings.ContainsAny(text, "\n\t") {
		return termtext.Line(text) + cut
	}
	return termtext.JSON(text) + cut
}

// DescribeError renders an execution error for a person, each line of it
// escaped as one line (a script or an upstream wrote it): runtime errors
// as "error: script:3: boom", other kinds named ("timeout error: ...");
// syntax errors one a line ("syntax error: hello.luau:4:1: ...").
func DescribeError(e *result.Error) string {
	if e.Kind == result.Runtime {
		return "error: " + termtext.Line(e.Message)
	}
	if e.Kind == result.Syntax {
		lines := strings.Split(e.Message, "\n")
		for i, line := range lines {
			lines[i] = "syntax error: " + termtext.Line(line)
		}
		return strings.Join(lines, "\n")
	}
	return fmt.Sprintf("%s error: %s", e.Kind, termtext.Line(e.Message))
}

// ProgressBar returns a bar drawing the script's progress() calls on w when
// w is a terminal, else nil: standard error redirected to a file or a pipe
// gets nothing.
func ProgressBar(w io.Writer) *progressbar.Bar {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	fd := int(f.Fd())
	cols := func() int {
		if w, _, err := term.GetSize(fd); err == nil && w > 0 {
			return w
		}
		return 80
	}
	return progressbar.New(f, cols, progressbar.DefaultInterval)
}

// LintSummary is the last line of lint's text output, on standard error.
func LintSummary(r *lint.Report) string {
	errs, warns := r.Count()
	return fmt.Sprintf("toolscript lint: %s, %s in %s", count(errs, "error"), count(warns, "warning"), count(r.Files, "file"))
}

// ListLintRules writes lint's rules as a table: name, severity and what
// each reports.
func ListLintRules(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "RULE\tSEVERITY\tREPORTS")
	for _, r := range lint.Rules() {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Name, r.Severity, r.Summary)
	}
	return tw.Flush()
}
