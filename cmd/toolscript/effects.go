package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/toolscript/toolscript/host/effects"
	"github.com/toolscript/toolscript/host/result"
)

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
		if e.Diff != "" {
			for line := range strings.SplitSeq(strings.TrimSuffix(e.Diff, "\n"), "\n") {
				fmt.Fprintf(w, "       %s\n", line)
			}
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

// describeEffect is one effect on one line.
func describeEffect(e effects.Effect) string {
	switch e.Op {
	case effects.OpWrite:
		size := int64(0)
		if e.Bytes != nil {
			size = *e.Bytes
		}
		return fmt.Sprintf("write  %s (%s, sha256 %s)", e.Path, result.Plural(int(size), "byte", "bytes"), e.SHA256)
	case effects.OpRename:
		return fmt.Sprintf("rename %s -> %s", e.Path, e.To)
	case effects.OpCall:
		line := "call   " + e.Function
		if e.Method != "" {
			line += ": " + e.Method + " " + e.URL
		}
		if len(e.Headers) > 0 {
			line += " headers " + effects.FormatHeaders(e.Headers)
		}
		switch {
		case len(e.Body) > 0:
			body := string(e.Body)
			if len(body) > 200 {
				body = strings.ToValidUTF8(body[:200], "") + "..."
			}
			line += " " + body
		case e.BodySHA256 != "":
			line += fmt.Sprintf(" (body of %s, sha256 %s)", result.Plural(int(e.BodyBytes), "byte", "bytes"), e.BodySHA256)
		}
		return line
	}
	return fmt.Sprintf("%-6s %s", e.Op, e.Path)
}
