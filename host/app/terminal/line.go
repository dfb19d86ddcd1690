// Package terminal owns what toolscript shows a person about a script's
// effects on a terminal, and what it asks them there: an effect as one
// line (the dry run's listing and the approval prompt show the same
// line), and the prompt under `toolscript run` that asks a person about an
// effect a rule asks about (an effects.Asker). Every text a script, a spec
// or an upstream controls passes host/platform/termtext before it is
// shown, so that nothing in it can act on the terminal.
package terminal

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/platform/termtext"
	"github.com/toolscript/toolscript/host/runtime/result"
)

// EffectLine is one effect on one line, as a person reviews it: a write's
// path, size and sha256, a call's function, method, URL, headers and body
// (cut), an io op and its path. Every field is escaped as one line.
func EffectLine(e effects.Effect) string {
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

// DiffLines are a write's diff, each line escaped as one line (nil for
// an effect without a diff).
func DiffLines(e effects.Effect) []string {
	if e.Diff == "" {
		return nil
	}
	var lines []string
	for line := range strings.SplitSeq(strings.TrimSuffix(e.Diff, "\n"), "\n") {
		lines = append(lines, termtext.Line(line))
	}
	return lines
}

// maxBodyShown is how much of a call's body a line shows, in bytes.
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
