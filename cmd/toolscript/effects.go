package main

import (
	"fmt"
	"io"

	"github.com/toolscript/toolscript/host/app/terminal"
	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/platform/termtext"
	"github.com/toolscript/toolscript/host/runtime/result"
)

// The listings below are for a person reviewing what a script did or
// would do, and the script wrote much of their text (file names, contents,
// URLs, bodies): every such field is escaped by host/platform/termtext, one line
// each, so that nothing it holds can move the cursor, clear what is shown,
// or start a line of its own. One effect is one line; each line of a diff
// is one line below it, with its prefix.

// printEffects writes a dry run's effects for a person: one line each, in
// order, a write's diff indented below it.
func printEffects(w io.Writer, res *result.Result) {
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

// printApplied writes what a plan run carried out for a person: the
// effects applied, in order, and the plan's entries left over, numbered
// as in the plan (the applied ones are its first entries).
func printApplied(w io.Writer, res *result.Result) {
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
