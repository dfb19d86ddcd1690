package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

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

// describeEffect is one effect on one line, with what the rules decided
// of it when they did: `[denied by rule "no deletes"]`.
func describeEffect(e effects.Effect) string {
	line := describeOp(e)
	switch {
	case e.Decision != "" && e.Rule != "":
		line += fmt.Sprintf(" [%s by rule %q]", termtext.Line(e.Decision), e.Rule) // %q escapes control characters
	case e.Decision != "" && e.Decision != effects.DecisionAllowed:
		line += fmt.Sprintf(" [%s by [effects] default]", termtext.Line(e.Decision))
	}
	return line
}

// describeOp is what an effect does, on one line.
func describeOp(e effects.Effect) string {
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
