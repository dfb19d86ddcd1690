//go:build linux

package sandboxio

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/internal/testtree"
)

func write(t *testing.T, s *FS, name, mode, data string) {
	t.Helper()
	id, err := s.Open(name, mode)
	if err != nil {
		t.Fatal(err)
	}
	if data != "" {
		if err := s.Write(id, []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(id); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, s *FS, name string) string {
	t.Helper()
	id, err := s.Open(name, "r")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(id)
	var out []byte
	buf := make([]byte, 7)
	for {
		n, err := s.Read(id, buf)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return string(out)
		}
		out = append(out, buf[:n]...)
	}
}

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func TestOverlay(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("one\ntwo\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "old.txt"), []byte("old\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "sub", "a.txt"), []byte("a\n"), 0o644)
	before := testtree.Snapshot(t, dir)

	run := effects.New(effects.DryRun)
	s := New(dir, Limits{MaxBytes: 1 << 20}).WithEffects(run)
	write(t, s, "keep.txt", "a", "three\n")
	write(t, s, "out/deep/new.txt", "w", "hello\n")
	write(t, s, "out/deep/new.txt", "a", "again\n") // closed and written again: two effects
	write(t, s, "empty.txt", "w", "")               // created, nothing written
	write(t, s, "tmp.txt", "w", "x")
	if err := s.Remove("tmp.txt"); err != nil { // staged only
		t.Fatal(err)
	}
	if err := s.Remove("old.txt"); err != nil {
		t.Fatal(err)
	}
	open, err := s.Open("sub/a.txt", "r+") // left open: its effect comes at the end
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(open, []byte("A")); err != nil {
		t.Fatal(err)
	}

	// The script sees its own writes and removals.
	if got := read(t, s, "keep.txt"); got != "one\ntwo\nthree\n" {
		t.Errorf("keep.txt reads %q", got)
	}
	if got := read(t, s, "out/deep/new.txt"); got != "hello\nagain\n" {
		t.Errorf("new.txt reads %q", got)
	}
	for _, gone := range []string{"old.txt", "tmp.txt"} {
		if _, err := s.Open(gone, "r"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("open %s after its removal: %v", gone, err)
		}
		if err := s.Remove(gone); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("remove %s again: %v", gone, err)
		}
	}
	for dir, want := range map[string]string{".": "[empty.txt keep.txt out sub]", "out": "[deep]", "out/deep": "[new.txt]", "sub": "[a.txt]"} {
		if names, err := s.List(context.Background(), dir); err != nil || fmt.Sprint(names) != want {
			t.Errorf("List(%q) = %v, %v; want %s", dir, names, err, want)
		}
	}
	if _, err := s.List(context.Background(), "keep.txt"); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("List of a file: %v", err)
	}

	s.CloseAll()
	touched, _ := s.Touched()
	if after := testtree.Snapshot(t, dir); after != before {
		t.Errorf("the real directory changed:\n%s\nwas\n%s", after, before)
	}
	if s.ov.tmp != "" {
		t.Error("the overlay was not dropped")
	}

	log, _ := run.Effects()
	var got []string
	for _, e := range log {
		line := string(e.Op) + " " + e.Path
		if e.Bytes != nil {
			line += fmt.Sprintf(" %d %s", *e.Bytes, e.SHA256)
		}
		got = append(got, line)
	}
	want := []string{
		"write keep.txt 14 " + sum("one\ntwo\nthree\n"),
		"mkdir out",
		"mkdir out/deep",
		"write out/deep/new.txt 6 " + sum("hello\n"),
		"write out/deep/new.txt 12 " + sum("hello\nagain\n"),
		"write empty.txt 0 " + sum(""),
		"write tmp.txt 1 " + sum("x"),
		"remove tmp.txt",
		"remove old.txt",
		"write sub/a.txt 2 " + sum("A\n"),
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("effects:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if log[0].Diff != "--- a/keep.txt\n+++ b/keep.txt\n@@ -1,2 +1,3 @@\n one\n two\n+three\n" {
		t.Errorf("diff: %q", log[0].Diff)
	}
	if fmt.Sprint(touched) != "[{empty.txt write 0 true} {keep.txt append 14 true} {old.txt remove 0 true} {out/deep/new.txt write 12 true} {sub/a.txt write 2 true} {tmp.txt remove 0 true}]" {
		t.Errorf("touched: %v", touched)
	}
}

// The overlay counts against the same budgets as real writes, and an io
// directory that does not exist is not created.
func TestOverlayBudgets(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "io")
	s := New(dir, Limits{MaxBytes: 10, MaxFiles: 3}).WithEffects(effects.New(effects.DryRun))
	id, err := s.Open("a/b.txt", "w") // two creations
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(id, []byte("0123456789")); err != nil {
		t.Fatal(err)
	}
	var se *Error
	if err := s.Write(id, []byte("x")); !errors.As(err, &se) || se.Kind != KindLimit {
		t.Errorf("past max_bytes: %v", err)
	}
	s.Close(id)
	write(t, s, "c.txt", "w", "") // the third
	if _, err := s.Open("d.txt", "w"); !errors.As(err, &se) || se.Kind != KindLimit {
		t.Errorf("past max_files: %v", err)
	}
	if names, err := s.List(context.Background(), "."); err != nil || fmt.Sprint(names) != "[a c.txt]" {
		t.Errorf("List: %v %v", names, err)
	}
	s.CloseAll()
	s.Touched()
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the io directory was created: %v", err)
	}
}

// A large file updated in place is copied to the overlay in bounded
// chunks and its effect has no diff (too large to review as text).
func TestOverlayLargeFile(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("line\n", effects.MaxDiffBytes/5+10)
	os.WriteFile(filepath.Join(dir, "big.txt"), []byte(big), 0o644)
	run := effects.New(effects.DryRun)
	s := New(dir, Limits{MaxBytes: 100}).WithEffects(run)
	write(t, s, "big.txt", "a", "end\n")
	id, _ := s.Open("big.txt", "r")
	if _, err := s.Seek(id, 2, -4); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 10)
	n, _ := s.Read(id, buf)
	s.CloseAll()
	s.Touched()
	log, _ := run.Effects()
	if string(buf[:n]) != "end\n" || len(log) != 1 || *log[0].Bytes != int64(len(big)+4) || log[0].SHA256 != sum(big+"end\n") || log[0].Diff != "" {
		t.Errorf("read %q; effects %+v", buf[:n], log)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "big.txt"))
	if string(data) != big {
		t.Error("the real file changed")
	}
}

// The overlay never goes inside the io directory, even when the
// temporary directory is there: with a small write budget its files are
// memory files, and a write works; with a large one they would be files
// of the temporary directory, and a write fails.
func TestOverlayNotInsideTheIODirectory(t *testing.T) {
	for _, c := range []struct {
		name     string
		maxBytes int64
		fails    bool
	}{
		{"in memory", 1 << 20, false},
		{"in the temporary directory", maxMemoryWrites + 1, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Setenv("TMPDIR", filepath.Join(dir, "tmp"))
			os.Mkdir(filepath.Join(dir, "tmp"), 0o755)
			before := testtree.Snapshot(t, dir)
			s := New(dir, Limits{MaxBytes: c.maxBytes}).WithEffects(effects.New(effects.DryRun))
			id, err := s.Open("a.txt", "w")
			if c.fails != (err != nil) || (c.fails && !strings.Contains(err.Error(), "set TMPDIR elsewhere")) {
				t.Errorf("Open: %v", err)
			}
			if err == nil {
				if err := s.Write(id, []byte("hello")); err != nil {
					t.Fatal(err)
				}
			}
			s.CloseAll()
			s.Touched()
			if after := testtree.Snapshot(t, dir); after != before {
				t.Errorf("the io directory changed:\n%s\nwas\n%s", after, before)
			}
		})
	}
}

// The overlay keeps its files in memory within its bounds: a small real
// file opened to be updated is copied into memory, with nothing in the
// temporary directory; one larger than maxMemoryCopies is copied into the
// temporary directory, which is removed when the execution ends.
func TestOverlayMemoryBounds(t *testing.T) {
	for _, c := range []struct {
		name  string
		size  int
		inTmp bool
	}{
		{"small", 4 << 10, false},
		{"past the bound", maxMemoryCopies + 1, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, tmp := t.TempDir(), t.TempDir()
			t.Setenv("TMPDIR", tmp)
			if err := os.WriteFile(filepath.Join(dir, "log.txt"), make([]byte, c.size), 0o644); err != nil {
				t.Fatal(err)
			}
			s := New(dir, Limits{MaxBytes: 1 << 20}).WithEffects(effects.New(effects.DryRun))
			id, err := s.Open("log.txt", "a")
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Write(id, []byte("more\n")); err != nil {
				t.Fatal(err)
			}
			entries, _ := os.ReadDir(tmp)
			if (len(entries) == 1) != c.inTmp {
				t.Errorf("the temporary directory holds %v", entries)
			}
			s.CloseAll()
			s.Touched()
			if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
				t.Errorf("left behind: %v", entries)
			}
			if info, _ := os.Stat(filepath.Join(dir, "log.txt")); info.Size() != int64(c.size) {
				t.Error("the real file changed")
			}
		})
	}
}
