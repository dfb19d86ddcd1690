package lint

import (
	"bytes"
	"cmp"
	"slices"
	"unicode/utf8"

	"github.com/toolscript/toolscript/host/runtime/luau"
)

// charColumns turns the byte columns of the module's records for text into
// columns in characters (Unicode code points), in place, and returns how
// many bytes it decoded. Lines and columns are 1-based; like Luau's lexer,
// only \n ends a line. Bytes that are not valid UTF-8 count one character
// each; positions past the end of the text count as bytes; positions
// outside the text's lines are left as they are.
//
// The positions are visited in order, each line's from a cursor that only
// moves forward, so the work is linear in the text (plus sorting the
// positions), however many records share a line: a hostile script with
// 500,000 syntax errors on one line costs one pass over it.
func charColumns(text []byte, diags []luau.LintDiagnostic) (decoded int) {
	if len(diags) == 0 {
		return 0
	}
	type position struct {
		line, column int
		to           *int
	}
	positions := make([]position, 0, 2*len(diags))
	for i := range diags {
		d := &diags[i]
		positions = append(positions, position{d.Line, d.Column, &d.Column}, position{d.EndLine, d.EndColumn, &d.EndColumn})
	}
	slices.SortFunc(positions, func(a, b position) int {
		return cmp.Or(cmp.Compare(a.line, b.line), cmp.Compare(a.column, b.column))
	})

	lines := lineStarts(text)
	line, at, chars := 0, 0, 0 // the cursor: chars characters from the line's start to byte at
	for _, p := range positions {
		if p.line < 1 || p.line > len(lines) || p.column < 1 {
			continue
		}
		if p.line != line {
			line, at, chars = p.line, lines[p.line-1], 0
		}
		end := lines[p.line-1] + p.column - 1
		past := 0
		if end > len(text) {
			past = end - len(text)
			end = len(text)
		}
		// Move the cursor over the whole characters before end, decoding
		// them in the full text; a character end falls inside counts its
		// bytes before end one each, as utf8.RuneCount of the line up to
		// end does.
		for at < end {
			_, size := utf8.DecodeRune(text[at:])
			if at+size > end {
				break
			}
			at += size
			chars++
			decoded += size
		}
		decoded += end - min(at, end)
		*p.to = chars + utf8.RuneCount(text[min(at, end):end]) + past + 1
	}
	return decoded
}

// lineStarts returns the byte offset at which each line starts. Like Luau's
// lexer, only \n ends a line.
func lineStarts(text []byte) []int {
	starts := []int{0}
	for i := 0; ; {
		j := bytes.IndexByte(text[i:], '\n')
		if j < 0 {
			return starts
		}
		i += j + 1
		starts = append(starts, i)
	}
}
