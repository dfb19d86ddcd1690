package termtext

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestLineAndText(t *testing.T) {
	tests := []struct {
		name, in, line, text string
	}{
		{"plain text is unchanged", "notes.txt", "notes.txt", "notes.txt"},
		{"non-ASCII letters stay", "grüße 日本 😀", "grüße 日本 😀", "grüße 日本 😀"},
		{"CSI", "a\x1b[2K\rb.txt", `a\x1b[2K\rb.txt`, `a\x1b[2K\rb.txt`},
		{"OSC 52", "\x1b]52;c;aGk=\x07", `\x1b]52;c;aGk=\x07`, `\x1b]52;c;aGk=\x07`},
		{"tab and newline", "a\tb\nc", `a\tb\nc`, "a\tb\nc"},
		{"DEL and NUL", "a\x7fb\x00", `a\x7fb\x00`, `a\x7fb\x00`},
		{"C1 CSI", "a\u009b2Jb", `a\u009b2Jb`, `a\u009b2Jb`},
		{"bidi override", "abc\u202etxt.exe", `abc\u202etxt.exe`, `abc\u202etxt.exe`},
		{"bidi isolate", "\u2066x\u2069", `\u2066x\u2069`, `\u2066x\u2069`},
		{"line separator", "a\u2028b", `a\u2028b`, `a\u2028b`},
		{"invalid UTF-8", "a\xffb\xe2\x82", `a\xffb\xe2\x82`, `a\xffb\xe2\x82`},
		{"lone backslash stays", `C:\dir\file`, `C:\dir\file`, `C:\dir\file`},
		{"backslash before an escape letter is doubled", `\x1b and \n`, `\\x1b and \\n`, `\\x1b and \\n`},
		{"backslash before an escaped character is doubled", "\\\x1b", `\\\x1b`, `\\\x1b`},
		{"backslash before a kept newline", "a\\\nb", `a\\\nb`, "a\\\nb"},
		{"trailing backslash", `a\`, `a\`, `a\`},
		{"a workflow command at the start", "::warning file=a::x", `\x3a:warning file=a::x`, `\x3a:warning file=a::x`},
		{"a workflow command after spaces", " \u00a0::stop-commands::t", " \u00a0" + `\x3a:stop-commands::t`, " \u00a0" + `\x3a:stop-commands::t`},
		{"a workflow command after a line break", "a\n ::error::x", `a\n ::error::x`, "a\n " + `\x3a:error::x`},
		{"an escaped tab ends the line's start", "\t::x", `\t::x`, "\t" + `\x3a:x`},
		{"colons inside a line stay", "a ::b ::1", "a ::b ::1", "a ::b ::1"},
		{"a legacy workflow command anywhere", "x ##[add-matcher]m.json ###[", `x ##\x5badd-matcher]m.json ###\x5b`, `x ##\x5badd-matcher]m.json ###\x5b`},
		{"a backslash before a legacy command", `\##[`, `\##\x5b`, `\##\x5b`},
		{"an escape's text is kept apart", `\x3a:a`, `\\x3a:a`, `\\x3a:a`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Line(tt.in); got != tt.line {
				t.Errorf("Line(%q) = %q, want %q", tt.in, got, tt.line)
			}
			if got := Text(tt.in); got != tt.text {
				t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.text)
			}
			if got := Unescape(Line(tt.in)); got != tt.in {
				t.Errorf("Unescape(Line(%q)) = %q", tt.in, got)
			}
		})
	}
}

func TestJSONKeepsTheValue(t *testing.T) {
	tests := []string{
		"plain",
		"\x1b[2J\u009b\u202e\u2066\x7f",
		`back\slash "quoted" \x1b`,
		"line\nbreak\ttab",
		"::warning::x ##[add-mask]y\n::error::z",
	}
	for _, s := range tests {
		data, err := json.Marshal(map[string]string{"s": s})
		if err != nil {
			t.Fatal(err)
		}
		shown := JSON(string(data))
		if !json.Valid([]byte(shown)) {
			t.Fatalf("JSON(%s) = %s: not JSON", data, shown)
		}
		var back map[string]string
		if err := json.Unmarshal([]byte(shown), &back); err != nil || back["s"] != s {
			t.Errorf("JSON(%s) = %s means %q, want %q (%v)", data, shown, back["s"], s, err)
		}
		assertNoControls(t, shown, true)
		assertNoWorkflowCommand(t, shown)
	}
}

func TestWriterPassesEscapedTextUnchanged(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	in := "name: " + Line("a\x1b[2K\\x\nb") + "\nraw: \x1b]0;title\x07 \\x41\n"
	if _, err := w.Write([]byte(in)); err != nil {
		t.Fatal(err)
	}
	want := `name: a\x1b[2K\\x\nb` + "\n" + `raw: \x1b]0;title\x07 \x41` + "\n"
	if out.String() != want {
		t.Errorf("wrote %q, want %q", out.String(), want)
	}
	if Raw(w) != &out {
		t.Error("Raw(w) is not the writer beneath")
	}
	if Raw(&out) != &out {
		t.Error("Raw of a plain writer is not itself")
	}
}

// A Writer knows where its lines start across Writes: a Write that goes
// on a line (a tabwriter's cell) is not a line's start, one after a
// newline or white space only is.
func TestWriterEscapesWorkflowCommandsAtLineStarts(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	for _, p := range []string{"::a", " x", "::b\n", "  ", "::c ##[d\n", "\t::e\n"} {
		if _, err := w.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	want := `\x3a:a x::b` + "\n  " + `\x3a:c ##\x5bd` + "\n\t" + `\x3a:e` + "\n"
	if out.String() != want {
		t.Errorf("wrote %q, want %q", out.String(), want)
	}
}

// A JSON line writer (the hosted mode's standard error) writes each
// record as the same JSON value, nothing in it acting on a terminal.
func TestJSONWriterKeepsEachRecordsValue(t *testing.T) {
	var out bytes.Buffer
	w := NewJSONWriter(&out)
	record := map[string]string{"msg": "upstream said \u009b2J\u202etxt.exe ##[error]x \x1b]52;c;aGk=\x07"}
	data, _ := json.Marshal(record)
	if _, err := w.Write(append(data, '\n')); err != nil {
		t.Fatal(err)
	}
	var back map[string]string
	if err := json.Unmarshal(out.Bytes(), &back); err != nil || back["msg"] != record["msg"] {
		t.Fatalf("wrote %s: %v, %q", out.String(), err, back["msg"])
	}
	assertNoControls(t, out.String(), true)
	assertNoWorkflowCommand(t, out.String())
}

// A Writer is shared by goroutines (an upstream's standard error, the
// server's warnings): run with -race.
func TestWriterIsSafeForConcurrentWrites(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	done := make(chan struct{})
	for range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 100 {
				w.Write([]byte("::x\n"))
			}
		}()
	}
	for range 4 {
		<-done
	}
	if want := strings.Repeat(`\x3a:x`+"\n", 400); out.String() != want {
		t.Errorf("wrote %d bytes, want %d", out.Len(), len(want))
	}
}

// assertNoControls fails if s holds a character the rule escapes, tab and
// newline aside when lines are allowed.
func assertNoControls(t *testing.T, s string, lines bool) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Fatalf("%q is not UTF-8", s)
	}
	for _, r := range s {
		if Escapes(r) && !(lines && (r == '\t' || r == '\n')) {
			t.Fatalf("%q holds %U", s, r)
		}
	}
}

// assertNoWorkflowCommand fails if a line of s is one a GitHub Actions
// runner reads as a workflow command: "::" after leading white space, or
// the legacy "##[" anywhere.
func assertNoWorkflowCommand(t *testing.T, s string) {
	t.Helper()
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimLeftFunc(l, unicode.IsSpace), "::") || strings.Contains(l, "##[") {
			t.Fatalf("%q has a workflow command in the line %q", s, l)
		}
	}
}

func FuzzEscape(f *testing.F) {
	for _, s := range []string{"::warning::x", " \n\t::a", "###[x]", "a\x1b[6A\r\x1b[J", `\x1b`, "\\\x1b", "\u202e\u009b\x7f", "a\\", "\xff\xfe", "x\n\t\\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		line, text := Line(s), Text(s)
		assertNoControls(t, line, false)
		assertNoControls(t, text, true)
		// Distinct texts stay distinct: each escaping is undone exactly.
		if got := Unescape(line); got != s {
			t.Fatalf("Unescape(Line(%q)) = %q", s, got)
		}
		if got := Unescape(text); got != s {
			t.Fatalf("Unescape(Text(%q)) = %q", s, got)
		}
		// Text escaped once passes the Writer unchanged.
		var out bytes.Buffer
		if _, err := NewWriter(&out).Write([]byte(text)); err != nil || out.String() != text {
			t.Fatalf("Writer changed %q to %q (%v)", text, out.String(), err)
		}
		var raw bytes.Buffer
		NewWriter(&raw).Write([]byte(s))
		assertNoControls(t, raw.String(), true)
		if strings.Count(line, "\n") != 0 {
			t.Fatalf("Line(%q) has a newline", s)
		}
		assertNoWorkflowCommand(t, line)
		assertNoWorkflowCommand(t, text)
		assertNoWorkflowCommand(t, raw.String())
	})
}
