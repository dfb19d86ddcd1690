//go:build unix

package sandboxio

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestGrep(t *testing.T) {
	dir, out := t.TempDir(), outside(t)
	tree(t, dir, map[string]string{
		"a.txt":         "one needle\ntwo\nneedle three\n",
		"a/b.txt":       "needle in a/b\n",
		"c.csv":         "id,needle\r\n1,hay\r\n",
		"sub/deep/d.md": "no\nNeedle upper\n",
		"bin.dat":       "needle\x00binary\n",
		"link.txt":      "->a.txt", // not followed in a walk, followed when named
		"out":           "->" + out,
		"last.txt":      "needle at the end without a newline",
	})
	s := New(dir, Limits{MaxBytes: 1 << 20})
	defer s.Touched()
	for _, c := range []struct{ pattern, path, filter, want string }{
		{"needle", ".", "", "[{a.txt 1 one needle} {a.txt 3 needle three} {a/b.txt 1 needle in a/b} {c.csv 1 id,needle} {last.txt 1 needle at the end without a newline}]"},
		{"needle", ".", "*.csv", "[{c.csv 1 id,needle}]"},
		{"(?i)^needle", "sub", "", "[{sub/deep/d.md 2 Needle upper}]"},
		{"needle", ".", "a/*.txt", "[{a/b.txt 1 needle in a/b}]"},
		{"needle", ".", "**/*.md", "[]"},
		{"needle", "link.txt", "", "[{link.txt 1 one needle} {link.txt 3 needle three}]"},
		{"t[wh]", "a.txt", "", "[{a.txt 2 two} {a.txt 3 needle three}]"},
		{"^$", "a.txt", "", "[]"},
	} {
		got, err := s.Grep(context.Background(), c.pattern, c.path, c.filter)
		if err != nil || fmt.Sprint(got) != c.want {
			t.Errorf("Grep(%q, %q, %q) = %v, %v;\nwant %s", c.pattern, c.path, c.filter, got, err, c.want)
		}
	}
	for _, c := range []struct{ pattern, path, want string }{
		{`(a)\1`, ".", `io.grep: invalid pattern '(a)\1': invalid escape sequence: ` + "`\\1`"},
		{`(?=a)`, ".", "io.grep: invalid pattern '(?=a)': invalid or unsupported Perl syntax: `(?=`"},
		{`a{2000}`, ".", "io.grep: invalid pattern 'a{2000}': invalid repeat count: `{2000}`"},
		{strings.Repeat("a", 1<<20), ".", "io.grep: invalid pattern '" + strings.Repeat("a", 200) + "...': the pattern is too long (1048576 bytes; at most 16384)"},
		{"x", "missing", "io.grep: 'missing': no such file or directory"},
		{"x", "out", "io.grep: 'out': path escapes the io directory (through a symbolic link)"},
		{"x", "../etc", "io.grep: '../etc': '..' is not allowed: paths must stay inside the io directory"},
	} {
		_, err := s.Grep(context.Background(), c.pattern, c.path, "")
		if kind, ok := kindOf(err); !ok || kind != KindIO || err.Error() != c.want {
			t.Errorf("Grep(%.40q, %q) = %v;\nwant %s", c.pattern, c.path, err, c.want)
		}
	}
	if _, err := s.Grep(context.Background(), "x", ".", "[z"); err == nil || !strings.Contains(err.Error(), "invalid pattern '[z'") {
		t.Errorf("Grep with a bad filter: %v", err)
	}
}

// A line longer than MaxGrepLine is matched on its start and reported cut
// there; the next line keeps its number.
func TestGrepLongLine(t *testing.T) {
	dir := t.TempDir()
	long := "needle" + strings.Repeat("x", 3*MaxGrepLine) + "needle-at-the-end"
	tree(t, dir, map[string]string{"f.txt": long + "\nneedle two\n"})
	s := New(dir, Limits{MaxBytes: 1 << 20})
	defer s.Touched()
	got, err := s.Grep(context.Background(), "needle", "f.txt", "")
	if err != nil || len(got) != 2 || len(got[0].Text) != MaxGrepLine || got[1] != (Match{"f.txt", 2, "needle two"}) {
		t.Fatalf("Grep = %d matches, %v", len(got), err)
	}
	if got, _ := s.Grep(context.Background(), "needle-at-the-end", "f.txt", ""); len(got) != 0 {
		t.Errorf("a match past the cut: %v", got)
	}
}

// A grep over a file of 1 GiB stops at its bound of bytes read, having
// read no more than a line past it; one over many matches at its bound
// of matches.
func TestGrepStopsAtBounds(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "huge.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// Text first (not binary), then a hole of 1 GiB that reads as zeros.
	f.WriteString(strings.Repeat("needle\n", binarySniff))
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	s := New(dir, Limits{MaxBytes: 1 << 20})
	defer s.Touched()
	_, err = s.Grep(context.Background(), "nothing", "huge.txt", "")
	if kind, ok := kindOf(err); !ok || kind != KindLimit || !strings.Contains(err.Error(), "bound of 67108864 bytes read") {
		t.Errorf("Grep over 1 GiB: %v", err)
	}
	if s.grepRead > MaxGrepBytes+MaxGrepLine {
		t.Errorf("read %d bytes, the bound is %d", s.grepRead, MaxGrepBytes)
	}
	_, err = s.Grep(context.Background(), "needle", "huge.txt", "")
	if kind, ok := kindOf(err); !ok || kind != KindLimit || !strings.Contains(err.Error(), "bound of 1000 matches") {
		t.Errorf("Grep with many matches: %v", err)
	}

	// 200 lines of 60 KiB match: more than the matches may hold.
	long := strings.Repeat(strings.Repeat("y", 60<<10)+"\n", 200)
	tree(t, dir, map[string]string{"long.txt": long})
	_, err = s.Grep(context.Background(), "y", "long.txt", "")
	if kind, ok := kindOf(err); !ok || kind != KindLimit || !strings.Contains(err.Error(), "bound of 8388608 bytes of matches") {
		t.Errorf("Grep with large matches: %v", err)
	}
}

// Before the io directory exists, a search of all of it finds nothing.
func TestSearchBeforeTheDirectoryExists(t *testing.T) {
	s := New(filepath.Join(t.TempDir(), "io"), Limits{MaxBytes: 1 << 20})
	defer s.Touched()
	if got, err := s.Grep(context.Background(), "x", ".", ""); err != nil || len(got) != 0 {
		t.Errorf("Grep = %v, %v", got, err)
	}
	if got, err := s.Glob(context.Background(), "**"); err != nil || len(got) != 0 {
		t.Errorf("Glob = %v, %v", got, err)
	}
	if _, err := s.Grep(context.Background(), "x", "sub", ""); err == nil || err.Error() != "io.grep: 'sub': no such file or directory" {
		t.Errorf("Grep(sub) = %v", err)
	}
}

// A regular expression is matched in time linear in the input, but the
// factor is the size of its compiled program: "[a-z]{1000}" repeated 14
// times is 14,000 steps per byte (a 64 KiB line takes the host seconds,
// in one call the execution's deadline cannot stop), and the 16 KiB a
// pattern may have make 1.4 million (a compile of 350 MB). Past
// MaxPatternSize it is an invalid pattern, refused before it is compiled.
func TestGrepPatternSize(t *testing.T) {
	dir := t.TempDir()
	tree(t, dir, map[string]string{"a.txt": "abc\n"})
	s := New(dir, Limits{MaxBytes: 1 << 20})
	defer s.Touched()
	for _, c := range []struct {
		pattern string
		size    int
	}{
		{`[a-z]{1000}x`, 0},
		{`(?:a|b|c){600}`, 0},
		{`(?:(?:a|b){30}){30}x`, 0},
		{strings.Repeat(`[a-z]{1000}`, 3), 3000},
		{strings.Repeat(`[a-z]{1000}`, 14), 14000},
		{`(?:a|aa|aaa|aaaa){1000}x`, -1},
		{strings.Repeat(`a{0,1000}`, 16) + "x", 32001},
		{`(?:(?:ab|cd){30}){30}x`, -1},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := s.Grep(context.Background(), c.pattern, ".", "")
		runtime.ReadMemStats(&after)
		if c.size == 0 {
			if err != nil {
				t.Errorf("Grep(%.40q) = %v", c.pattern, err)
			}
			continue
		}
		want := fmt.Sprintf("the pattern is too large (%d steps for each byte matched; at most %d): use smaller repeat counts", c.size, MaxPatternSize)
		if c.size < 0 { // the parser's factoring decides the count
			want = fmt.Sprintf("steps for each byte matched; at most %d)", MaxPatternSize)
		}
		if kind, ok := kindOf(err); !ok || kind != KindIO || !strings.Contains(err.Error(), want) {
			t.Errorf("Grep(%.40q) = %v;\nwant %s", c.pattern, err, want)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 4<<20 {
			t.Errorf("Grep(%.40q) allocated %d bytes to refuse it", c.pattern, got)
		}
	}
}

// The execution's deadline is checked as often as the matching costs,
// not only every MiB read: with a pattern of 1,000 steps a byte, a line
// of 64 KiB is work enough to check it before the next.
func TestGrepDeadlineByWork(t *testing.T) {
	dir := t.TempDir()
	line := strings.Repeat("a", MaxGrepLine-1) + "\n"
	tree(t, dir, map[string]string{"f.txt": strings.Repeat(line, 15)}) // under 1 MiB
	s := New(dir, Limits{MaxBytes: 1 << 20})
	defer s.Touched()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// "zz" first: the match itself is quick (a scan for the prefix), the
	// step count is the pattern's.
	_, err := s.Grep(ctx, `zz[a-z]{1000}`, "f.txt", "")
	if kind, ok := kindOf(err); !ok || kind != KindLimit || !strings.Contains(err.Error(), "time ran out") {
		t.Fatalf("Grep after the deadline = %v", err)
	}
	if s.grepRead > 2*int64(len(line)) {
		t.Errorf("Grep read %d bytes after the deadline; want at most two lines of %d", s.grepRead, len(line))
	}
}

// The head of a binary file, read to find that it is one, counts against
// the bytes io.grep reads: 1,100 binary files of 64 KiB (holes that read
// as zeros) are 69 MiB read, past the bound, whichever file holds a
// match.
func TestGrepCountsBinaryFiles(t *testing.T) {
	dir := t.TempDir()
	for i := range 1100 {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("b%04d.bin", i)))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(MaxGrepLine); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	s := New(dir, Limits{MaxBytes: 1 << 20})
	defer s.Touched()
	_, err := s.Grep(context.Background(), "x", ".", "")
	if kind, ok := kindOf(err); !ok || kind != KindLimit || !strings.Contains(err.Error(), "bound of 67108864 bytes read") {
		t.Errorf("Grep over 69 MiB of binary files: %v (counted %d bytes)", err, s.grepRead)
	}
}
