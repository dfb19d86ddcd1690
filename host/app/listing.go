package app

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"golang.org/x/term"

	"github.com/toolscript/toolscript/host/app/terminal"
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
		for _, line := range terminal.DiffLines(e) {
			fmt.Fprintf(w, "       %s\n", line)
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

// describeEffect is one effect on one line (terminal.EffectLine: the
// prompt shows the same line), with what the rules decided of it when
// they did: `[denied by rule "no deletes"]`.
func describeEffect(e effects.Effect) string {
	line := terminal.EffectLine(e)
	switch {
	case e.Decision != "" && e.Rule != "":
		line += fmt.Sprintf(" [%s by rule %q]", termtext.Line(e.Decision), e.Rule) // %q escapes control characters
	case e.Decision != "" && e.Decision != effects.DecisionAllowed:
		line += fmt.Sprintf(" [%s by [effects] default]", termtext.Line(e.Decision))
	}
	return line
}

// DescribeError renders an execution error for a person, each line of it
// escaped as one line (a script or an upstream wrote it): runtime errors
// as "error: script:3: boom", other kinds named ("timeout error: ...");
// syntax and type errors one a line ("syntax error: hello.luau:4:1: ...").
func DescribeError(e *result.Error) string {
	if e.Kind == result.Runtime {
		return "error: " + termtext.Line(e.Message)
	}
	if e.Kind == result.Syntax || e.Kind == result.Type {
		lines := strings.Split(e.Message, "\n")
		for i, line := range lines {
			lines[i] = string(e.Kind) + " error: " + termtext.Line(line)
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
