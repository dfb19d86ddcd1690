package testconfig

import (
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
)

// TestQuoteRoundTrips: a quoted string reads back as itself in TOML,
// whatever bytes it holds.
func TestQuoteRoundTrips(t *testing.T) {
	for _, s := range []string{"", "plain", `C:\dir\file`, `say "hi"`, "line\nbreak\ttab\x00\x1b[2J", "<&>", "ünïcödé ☃", "del\x7f"} {
		var got struct{ V string }
		if _, err := toml.Decode("v = "+Quote(s), &got); err != nil || got.V != s {
			t.Errorf("Quote(%q) = %s: decoded %q, %v", s, Quote(s), got.V, err)
		}
	}
}

func FuzzQuote(f *testing.F) {
	f.Add("a\"b\\c\n")
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			t.Skip("a TOML file is UTF-8")
		}
		var got struct{ V string }
		if _, err := toml.Decode("v = "+Quote(s), &got); err != nil || got.V != s {
			t.Errorf("Quote(%q) = %s: decoded %q, %v", s, Quote(s), got.V, err)
		}
	})
}

// TestWrite: the text is the directory's toolscript.toml.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	if got := Write(t, dir, "[io]\nenabled = false\n"); got != dir {
		t.Errorf("Write returned %q, want %q", got, dir)
	}
	b, err := os.ReadFile(filepath.Join(dir, "toolscript.toml"))
	if err != nil || string(b) != "[io]\nenabled = false\n" {
		t.Errorf("toolscript.toml holds %q, %v", b, err)
	}
}
