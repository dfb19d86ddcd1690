// Package termtext owns the one rule for text that a person's terminal
// shows and that someone other than toolscript controls: a script (its
// print lines, errors, file names, the content it writes), a spec (titles,
// summaries, descriptions, names), a file name, an upstream (its errors,
// descriptions, standard error).
//
// The rule: every character that can act on a terminal or change what it
// shows is shown visibly escaped instead, so that what is on the screen
// is the text that was there, and nothing the text says can move the
// cursor, clear the screen, set the clipboard or window title, or reorder
// what is shown. The characters escaped (Escapes) are the C0 controls
// (ESC among them, so every CSI and OSC sequence), DEL, the C1 controls
// U+0080 to U+009F, the bidirectional formatting characters (U+061C,
// U+200E, U+200F, U+202A to U+202E, U+2066 to U+2069), the line and
// paragraph separators U+2028 and U+2029, and bytes that are not UTF-8.
// Tab and newline are kept only where the text may span lines (Text).
//
// A terminal is often a CI job's log, and a GitHub Actions runner reads
// two sequences in it as workflow commands (which annotate, mask, stop
// the commands that follow, load problem matchers): "::" at a line's
// start after its white space, and the legacy "##[" anywhere in a line.
// The first colon of such a "::" is escaped (\x3a; in JSON \u003a), at
// the text's start (a Writer's: a line's) and after each newline kept,
// and the bracket of "##[" is (\x5b), so that no line the text makes is
// such a command. Outputs that write workflow commands of their own
// (lint's GitHub format) take the writer beneath (Raw).
//
// The escapes: \t, \n and \r by name, other bytes below 0x80 and bytes
// that are not UTF-8 as \xHH, characters from U+0080 on as \uHHHH (lower
// case hex). A backslash that would otherwise read as the start of an
// escape is doubled, so distinct texts stay distinct (Unescape inverts
// Line and Text).
//
// The forms:
//   - Line: a field of a listing that is one line (a file name, an error,
//     a diagnostic): tab and newline are escaped too, so the text cannot
//     start a line of its own or break the listing's columns.
//   - Text: text that may span lines (a script's print, a spec's docs).
//   - JSON: a JSON text shown to a person; each escape is a JSON \uHHHH
//     escape, so the text stays the same JSON value.
//   - Writer: the net under every human text output of the command: it
//     escapes what Text escapes and leaves backslashes alone, so that text
//     already escaped passes through unchanged. Outputs that are exact
//     data (JSON, SARIF, the MCP protocol) take the writer beneath (Raw).
package termtext

import (
	"io"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Escapes reports whether the rule escapes r wherever it appears (tab and
// newline, which Text keeps, included).
func Escapes(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true // C0, DEL, C1
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true // bidirectional formatting
	case r == 0x2028, r == 0x2029:
		return true // line and paragraph separators
	}
	return false
}

// Line returns s escaped to show as one line of a listing.
func Line(s string) string { return escape(s, form{doubleBackslash: true}) }

// Text returns s escaped to show as lines: tab and newline are kept.
func Text(s string) string { return escape(s, form{keepLines: true, doubleBackslash: true}) }

// JSON returns the JSON text s escaped to show to a person: each
// character the rule escapes becomes a \uHHHH escape (where such a
// character can only stand in valid JSON: inside a string), so the text
// means the same JSON value. Tab and newline, which valid JSON has only
// as whitespace between tokens, are kept; a caller that shows the value
// on one line compacts it first (encoding/json's Compact).
func JSON(s string) string { return escape(s, form{keepLines: true, json: true}) }

// form is how escape writes.
type form struct {
	keepLines       bool // tab and newline pass as they are
	doubleBackslash bool // a backslash that starts an escape is doubled
	json            bool // every escape is \uHHHH
}

// escape applies the rule to s in form f, s starting a line.
func escape(s string, f form) string { return escapeAt(s, f, true) }

// escapeAt applies the rule to s in form f; lineStart says whether s
// starts a line (nothing but white space before it on its line).
func escapeAt(s string, f form, lineStart bool) string {
	if clean(s, f) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		raw := false
		switch {
		case r == utf8.RuneError && size == 1:
			writeHex(&b, 'x', rune(s[i]), 2)
		case r == '\\' && f.doubleBackslash && startsEscape(s[i+1:], f):
			b.WriteString(`\\`)
		case lineStart && r == ':' && strings.HasPrefix(s[i+1:], ":"),
			r == '[' && strings.HasSuffix(s[:i], "##"):
			writeCommandEscape(&b, r, f)
		case kept(r, f) || !Escapes(r):
			b.WriteString(s[i : i+size])
			raw = true
		default:
			writeEscape(&b, r, f)
		}
		lineStart = raw && (r == '\n' || lineStart && unicode.IsSpace(r))
		i += size
	}
	return b.String()
}

// clean reports whether s needs no change: the common case, without
// allocating. A "::" or "##[" anywhere takes the slow path, which finds
// whether it is a workflow command.
func clean(s string, f form) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x80 || c == 0x7f || (c < 0x20 && !(f.keepLines && (c == '\t' || c == '\n'))) || (c == '\\' && f.doubleBackslash) {
			return false
		}
		if (c == ':' && strings.HasPrefix(s[i+1:], ":")) || (c == '[' && strings.HasSuffix(s[:i], "##")) {
			return false
		}
	}
	return true
}

// writeCommandEscape escapes r, the character that would make a line a
// workflow command (the colon of "::", the bracket of "##["), as \xHH or,
// in JSON, \uHHHH.
func writeCommandEscape(b *strings.Builder, r rune, f form) {
	if f.json {
		writeHex(b, 'u', r, 4)
		return
	}
	writeHex(b, 'x', r, 2)
}

func kept(r rune, f form) bool { return f.keepLines && (r == '\t' || r == '\n') }

// startsEscape reports whether rest, the text after a backslash, would
// make it read as an escape: it starts with an escape's letter, a
// backslash, or a character that is itself escaped.
func startsEscape(rest string, f form) bool {
	if rest == "" {
		return false
	}
	switch rest[0] {
	case '\\', 'x', 'u', 't', 'n', 'r':
		return true
	}
	r, size := utf8.DecodeRuneInString(rest)
	if r == utf8.RuneError && size == 1 {
		return true
	}
	return Escapes(r) && !kept(r, f)
}

func writeEscape(b *strings.Builder, r rune, f form) {
	switch {
	case f.json:
		writeHex(b, 'u', r, 4)
	case r == '\t':
		b.WriteString(`\t`)
	case r == '\n':
		b.WriteString(`\n`)
	case r == '\r':
		b.WriteString(`\r`)
	case r < 0x80:
		writeHex(b, 'x', r, 2)
	default:
		writeHex(b, 'u', r, 4)
	}
}

const hexDigits = "0123456789abcdef"

// writeHex writes \<letter> and v in digits lower-case hex digits.
func writeHex(b *strings.Builder, letter byte, v rune, digits int) {
	b.WriteByte('\\')
	b.WriteByte(letter)
	for shift := (digits - 1) * 4; shift >= 0; shift -= 4 {
		b.WriteByte(hexDigits[(v>>shift)&0xf])
	}
}

// Unescape inverts Line and Text: it returns the text that was escaped.
// A backslash that starts no escape stands for itself.
func Unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			i++
			continue
		}
		switch c := s[i+1]; {
		case c == '\\':
			b.WriteByte('\\')
			i += 2
		case strings.IndexByte("tnr", c) >= 0:
			b.WriteByte("\t\n\r"[strings.IndexByte("tnr", c)])
			i += 2
		case c == 'x' && hexAt(s, i+2, 2):
			b.WriteByte(byte(hexValue(s[i+2 : i+4])))
			i += 4
		case c == 'u' && hexAt(s, i+2, 4):
			b.WriteRune(rune(hexValue(s[i+2 : i+6])))
			i += 6
		default:
			b.WriteByte('\\')
			i++
		}
	}
	return b.String()
}

func hexAt(s string, i, n int) bool {
	if i+n > len(s) {
		return false
	}
	for _, c := range []byte(s[i : i+n]) {
		if strings.IndexByte(hexDigits, c) < 0 {
			return false
		}
	}
	return true
}

func hexValue(s string) int {
	v := 0
	for _, c := range []byte(s) {
		v = v<<4 | strings.IndexByte(hexDigits, c)
	}
	return v
}

// Writer applies the rule to everything written through it: each Write
// is escaped as Text escapes, except that backslashes pass as they are,
// so that text already escaped (Line, Text, JSON) passes unchanged. A
// character split across two Writes is escaped as the bytes it is made
// of: write whole lines (as fmt's functions do). A Write that goes on a
// line another began does not start a line.
// Writes from several goroutines are serialised.
type Writer struct {
	w       io.Writer
	mu      sync.Mutex
	midLine bool // the last Write left its line with more than white space
}

// NewWriter returns a Writer writing to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write escapes p and writes it; it reports len(p) when all of it was
// written.
func (t *Writer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	text := string(p)
	s := escapeAt(text, form{keepLines: true}, !t.midLine)
	t.midLine = !endsAtLineStart(text, !t.midLine)
	if _, err := io.WriteString(t.w, s); err != nil {
		return 0, err
	}
	return len(p), nil
}

// endsAtLineStart reports whether s, written where lineStart says, leaves
// its last line with nothing but white space shown as it is.
func endsAtLineStart(s string, lineStart bool) bool {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s, lineStart = s[i+1:], true
	}
	for _, r := range s {
		if !unicode.IsSpace(r) || (Escapes(r) && r != '\t') {
			return false
		}
	}
	return lineStart
}

// Raw returns the writer beneath w when w is a Writer, else w: where
// exact data goes (JSON, SARIF, the MCP protocol, a terminal's own
// control sequences such as the progress bar's).
func Raw(w io.Writer) io.Writer {
	if t, ok := w.(*Writer); ok {
		return t.w
	}
	return w
}

// JSONWriter applies JSON's form of the rule to everything written
// through it: for JSON lines shown to a person (the hosted mode's
// standard error, read with `kubectl logs` or `docker logs`). Each Write
// must be whole JSON texts (as slog's JSON handler writes one record a
// Write); each keeps its value.
type JSONWriter struct {
	w io.Writer
}

// NewJSONWriter returns a JSONWriter writing to w.
func NewJSONWriter(w io.Writer) *JSONWriter { return &JSONWriter{w: w} }

// Write escapes p as JSON does and writes it; it reports len(p) when all
// of it was written.
func (t *JSONWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(t.w, JSON(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
