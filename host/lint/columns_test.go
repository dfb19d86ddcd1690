package lint

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"unicode/utf8"

	"github.com/toolscript/toolscript/host/runtime/luau"
)

// referenceColumn is the definition charColumns keeps: a 1-based byte
// column on a 1-based line becomes the number of characters before it plus
// one; bytes that are not valid UTF-8 count one character each; positions
// past the end of the text count as bytes; positions outside the text's
// lines stay as they are.
func referenceColumn(text []byte, line, byteColumn int) int {
	lines := lineStarts(text)
	if line < 1 || line > len(lines) || byteColumn < 1 {
		return byteColumn
	}
	start := lines[line-1]
	end := start + byteColumn - 1
	past := 0
	if end > len(text) {
		past = end - len(text)
		end = len(text)
	}
	return utf8.RuneCount(text[start:end]) + past + 1
}

// errorsOnOneLine is n syntax errors on one line of n two-byte characters
// each followed by ')', in a shuffled order.
func errorsOnOneLine(n int) ([]byte, []luau.LintDiagnostic) {
	text := bytes.Repeat([]byte("é)"), n)
	diags := make([]luau.LintDiagnostic, n)
	for i := range diags {
		col := 3*i + 3 // the ')' after i+1 characters é
		diags[i] = luau.LintDiagnostic{Rule: luau.RuleSyntax, Line: 1, Column: col, EndLine: 1, EndColumn: col + 1}
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(n, func(i, j int) { diags[i], diags[j] = diags[j], diags[i] })
	return text, diags
}

// Converting the columns of many diagnostics on one line decodes each byte
// of the line once, whatever their order: the work for 2N diagnostics is
// twice the work for N, not four times.
func TestCharColumnsLinear(t *testing.T) {
	var work [2]int
	for k, n := range []int{2000, 4000} {
		text, diags := errorsOnOneLine(n)
		want := make([][2]int, n)
		for i, d := range diags {
			want[i] = [2]int{referenceColumn(text, d.Line, d.Column), referenceColumn(text, d.EndLine, d.EndColumn)}
		}
		work[k] = charColumns(text, diags)
		for i, d := range diags {
			if got := [2]int{d.Column, d.EndColumn}; got != want[i] {
				t.Fatalf("n=%d: diagnostic %d: columns %v, want %v", n, i, got, want[i])
			}
		}
		if bound := len(text) + 3*2*n; work[k] > bound {
			t.Errorf("n=%d: decoded %d bytes of a %d-byte line, want at most %d", n, work[k], len(text), bound)
		}
	}
	if work[1] > 2*work[0]+16 {
		t.Errorf("work for 2N diagnostics is %d, for N %d: not linear", work[1], work[0])
	}
}

func TestCharColumns(t *testing.T) {
	cases := []struct {
		text string
		in   [][2]int // line, byte column
		want []int
	}{
		{"abc\n", [][2]int{{1, 1}, {1, 4}}, []int{1, 4}},
		{"héllo pirnt\n", [][2]int{{1, 8}, {1, 13}}, []int{7, 12}},
		{"a\nxé)é)\n", [][2]int{{2, 7}, {2, 4}, {1, 2}, {2, 1}}, []int{5, 3, 2, 1}},
		{"\xff\xfe)\n", [][2]int{{1, 3}}, []int{3}},
		{"é", [][2]int{{1, 2}, {1, 3}}, []int{2, 2}}, // inside a character, at its end
		{"ab", [][2]int{{1, 6}, {3, 2}, {0, 5}, {1, 0}}, []int{6, 2, 5, 0}},
	}
	for _, c := range cases {
		diags := make([]luau.LintDiagnostic, len(c.in))
		for i, p := range c.in {
			diags[i] = luau.LintDiagnostic{Line: p[0], Column: p[1], EndLine: p[0], EndColumn: p[1]}
		}
		charColumns([]byte(c.text), diags)
		for i, d := range diags {
			if d.Column != c.want[i] || d.EndColumn != c.want[i] {
				t.Errorf("%q at %v: got %d, %d, want %d", c.text, c.in[i], d.Column, d.EndColumn, c.want[i])
			}
		}
	}
}

// charColumns agrees with the definition on any text and positions.
func FuzzCharColumns(f *testing.F) {
	f.Add([]byte("local s = 'héllo' .. pirnt\nreturn s\n"), []byte{1, 22, 1, 27, 2, 1})
	f.Add([]byte("\xc3\n\xa9é\xe2\x82"), []byte{2, 3, 1, 1, 3, 9, 0, 2})
	f.Fuzz(func(t *testing.T, text, positions []byte) {
		var diags []luau.LintDiagnostic
		for i := 0; i+3 < len(positions); i += 4 {
			diags = append(diags, luau.LintDiagnostic{
				Line: int(positions[i]), Column: int(positions[i+1]),
				EndLine: int(positions[i+2]), EndColumn: int(positions[i+3])})
		}
		want := make([]string, len(diags))
		for i, d := range diags {
			want[i] = fmt.Sprint(referenceColumn(text, d.Line, d.Column), referenceColumn(text, d.EndLine, d.EndColumn))
		}
		charColumns(text, diags)
		for i, d := range diags {
			if got := fmt.Sprint(d.Column, d.EndColumn); got != want[i] {
				t.Errorf("diagnostic %d: got %s, want %s", i, got, want[i])
			}
		}
	})
}
