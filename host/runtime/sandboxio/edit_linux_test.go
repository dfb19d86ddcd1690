//go:build linux

package sandboxio

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/internal/testtree"
)

func TestEdit(t *testing.T) {
	for _, c := range []struct {
		name, old, new string
		all            bool
		count          int
		want, err      string
	}{
		{"first", "a", "X", false, 1, "X-a-a\n", ""},
		{"all", "a", "XY", true, 3, "XY-XY-XY\n", ""},
		{"to nothing", "-a", "", true, 2, "a\n", ""},
		{"none", "zz", "y", false, 0, "a-a-a\n", "io.edit: 'f.txt': the text to replace is not in the file (nothing was changed)"},
		{"empty old", "", "y", false, 0, "a-a-a\n", "io.edit: 'f.txt': the text to replace is empty"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			tree(t, dir, map[string]string{"f.txt": "a-a-a\n"})
			s := New(dir, Limits{MaxBytes: 1 << 20})
			n, err := s.Edit("f.txt", c.old, c.new, c.all)
			s.CloseAll()
			touched, _ := s.Touched()
			if got, _ := os.ReadFile(filepath.Join(dir, "f.txt")); n != c.count || string(got) != c.want || fmt.Sprint(err) != fmt.Sprint(errOrNil(c.err)) {
				t.Errorf("Edit = %d, %v; file %q", n, err, got)
			}
			if wrote := len(touched) == 1; wrote != (c.err == "") {
				t.Errorf("files touched %v", touched)
			}
		})
	}
}

func errOrNil(msg string) error {
	if msg == "" {
		return nil
	}
	return errors.New(msg)
}

// An edit past the write budget writes nothing: the file is as it was.
func TestEditBudget(t *testing.T) {
	dir := t.TempDir()
	tree(t, dir, map[string]string{"f.txt": strings.Repeat("a", 100)})
	s := New(dir, Limits{MaxBytes: 150})
	defer s.Touched()
	if n, err := s.Edit("f.txt", "a", "b", false); n != 1 || err != nil {
		t.Fatalf("the first edit: %d, %v", n, err)
	}
	_, err := s.Edit("f.txt", "a", "b", false)
	if kind, ok := kindOf(err); !ok || kind != KindLimit || !strings.Contains(err.Error(), "write budget exceeded") {
		t.Errorf("an edit past the budget: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "f.txt")); string(got) != "b"+strings.Repeat("a", 99) {
		t.Errorf("the file after the refused edit: %q", got)
	}
	for _, c := range []struct{ path, want string }{
		{"missing.txt", "io.edit: 'missing.txt': no such file or directory"},
		{".", "io.edit: '.': is a directory"},
	} {
		if _, err := s.Edit(c.path, "a", "b", false); err == nil || err.Error() != c.want {
			t.Errorf("Edit(%q) = %v; want %s", c.path, err, c.want)
		}
	}
}

func TestRename(t *testing.T) {
	dir, out := t.TempDir(), outside(t)
	tree(t, dir, map[string]string{"a.txt": "A", "b.txt": "B", "sub/": "", "link": "->a.txt", "out": "->" + out})
	s := New(dir, Limits{MaxBytes: 1 << 20})
	for _, c := range []struct{ from, to, want string }{
		{"sub", "x", "os.rename: 'sub': is a directory: os.rename moves files only"},
		{"link", "x", "os.rename: 'link': is a symbolic link: os.rename moves regular files only"},
		{"a.txt", "sub", "os.rename: 'sub': is a directory: os.rename moves files only"},
		{"a.txt", "link", "os.rename: 'link': is a symbolic link: os.rename moves regular files only"},
		{"a.txt", "out/x", "os.rename: 'out/x': path escapes the io directory (through the symbolic link 'out')"},
		{"missing", "x", "os.rename: 'missing': no such file or directory"},
		{"a.txt", "../x", "os.rename: '../x': '..' is not allowed: paths must stay inside the io directory"},
	} {
		if err := s.Rename(c.from, c.to); err == nil || err.Error() != c.want {
			t.Errorf("Rename(%q, %q) = %v; want %s", c.from, c.to, err, c.want)
		}
	}
	if err := s.Rename("a.txt", "new/dir/a.txt"); err != nil {
		t.Fatal(err)
	}
	if err := s.Rename("b.txt", "new/dir/a.txt"); err != nil { // replaces it
		t.Fatal(err)
	}
	s.CloseAll()
	touched, _ := s.Touched()
	if got := fmt.Sprint(touched); got != "[{a.txt remove 0 false} {b.txt remove 0 false} {new/dir/a.txt write 1 false}]" {
		t.Errorf("files touched %s", got)
	}
	if got := testtree.Contents(t, dir); strings.Contains(got, "a.txt: A") || !strings.Contains(got, "new/dir/a.txt") {
		t.Errorf("after the renames:\n%s", got)
	}
}

// A dry run's edit and rename go to the overlay: the script sees them,
// the real directory does not change, and the effects are a write with
// its diff and a rename.
func TestEditRenameDryRun(t *testing.T) {
	dir := t.TempDir()
	tree(t, dir, map[string]string{"f.txt": "hello world\n", "g.txt": "G\n"})
	before := testtree.Snapshot(t, dir)
	run := effects.New(effects.DryRun)
	s := New(dir, Limits{MaxBytes: 1 << 20}).WithEffects(run)
	if n, err := s.Edit("f.txt", "world", "there", false); n != 1 || err != nil {
		t.Fatalf("Edit = %d, %v", n, err)
	}
	if err := s.Rename("g.txt", "moved/g.txt"); err != nil {
		t.Fatal(err)
	}
	if got := read(t, s, "f.txt"); got != "hello there\n" {
		t.Errorf("the edited file reads %q", got)
	}
	if got := read(t, s, "moved/g.txt"); got != "G\n" {
		t.Errorf("the renamed file reads %q", got)
	}
	if _, err := s.Stat("g.txt"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the renamed file's old name: %v", err)
	}
	if got, err := s.Glob(context.Background(), "**/*.txt"); err != nil || fmt.Sprint(got) != "[f.txt moved/g.txt]" {
		t.Errorf("Glob in the overlay = %v, %v", got, err)
	}
	if got, err := s.Grep(context.Background(), "there|G", ".", ""); err != nil || fmt.Sprint(got) != "[{f.txt 1 hello there} {moved/g.txt 1 G}]" {
		t.Errorf("Grep in the overlay = %v, %v", got, err)
	}
	s.CloseAll()
	touched, _ := s.Touched()
	if after := testtree.Snapshot(t, dir); after != before {
		t.Errorf("the real directory changed:\n%s", after)
	}
	log, _ := run.Effects()
	var got []string
	for _, e := range log {
		got = append(got, strings.TrimSpace(fmt.Sprintf("%s %s %s %s", e.Op, e.Path, e.To, e.Diff)))
	}
	want := "write f.txt  --- a/f.txt\n+++ b/f.txt\n@@ -1 +1 @@\n-hello world\n+hello there|mkdir moved|rename g.txt moved/g.txt"
	if strings.Join(got, "|") != want {
		t.Errorf("effects:\n%s\nwant\n%s", strings.Join(got, "|"), want)
	}
	if fmt.Sprint(touched) != "[{f.txt write 12 true} {g.txt remove 0 true} {moved/g.txt write 2 true}]" {
		t.Errorf("files touched %v", touched)
	}
}

// A plan run of a dry run's edit and rename leaves the directory as a
// real run does.
func TestEditRenamePlanApplies(t *testing.T) {
	files := map[string]string{"f.txt": "hello world\n", "g.txt": "G\n"}
	script := func(s *FS) error {
		if _, err := s.Edit("f.txt", "world", "there", false); err != nil {
			return err
		}
		return s.Rename("g.txt", "moved/g.txt")
	}
	realDir, planDir, dryDir := t.TempDir(), t.TempDir(), t.TempDir()
	for _, d := range []string{realDir, planDir, dryDir} {
		tree(t, d, files)
	}
	s := New(realDir, Limits{MaxBytes: 1 << 20})
	if err := script(s); err != nil {
		t.Fatal(err)
	}
	s.CloseAll()
	s.Touched()

	run := effects.NewPlan(dryRunPlan(t, dryDir, script))
	s = New(planDir, Limits{MaxBytes: 1 << 20}).WithEffects(run)
	if err := script(s); err != nil {
		t.Fatal(err)
	}
	s.CloseAll()
	s.Touched()
	if run.Err() != nil || run.Unused() != nil {
		t.Fatalf("stopped: %v; unused: %v", run.Err(), run.Unused())
	}
	if got, want := testtree.Contents(t, planDir), testtree.Contents(t, realDir); got != want {
		t.Errorf("after the plan run:\n%s\nafter a real run:\n%s", got, want)
	}
}

// An edit whose result would be far over the write budget is refused
// before the result is built: a file of 16 KiB of "a" with every "a"
// replaced by 16 KiB would be 256 MiB, and one of 64 KiB with 64 KiB
// replacements 4 GiB, held by the host before the budget was checked.
func TestEditBudgetCheckedBeforeReplacing(t *testing.T) {
	const size = 16 << 10
	for _, c := range []struct {
		name    string
		budget  int64
		old     string
		new     string
		all     bool
		grows   int64 // the edited file's size
		refused string
	}{
		{"every one replaced by 16 KiB", 1 << 20, "a", strings.Repeat("b", size), true, size * size, "write budget exceeded: rewriting the file (268435456 bytes)"},
		{"within a budget of 1 TiB", 1 << 40, "a", strings.Repeat("b", size), true, size * size, "the edited file would be too large to hold (268435456 bytes; at most 67108864)"},
		{"the first replaced by 16 KiB", 1 << 20, "a", strings.Repeat("b", size), false, 2*size - 1, ""},
		{"every one removed", 1 << 20, "a", "", true, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			tree(t, dir, map[string]string{"f.txt": strings.Repeat("a", size)})
			s := New(dir, Limits{MaxBytes: c.budget})
			defer s.Touched()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := s.Edit("f.txt", c.old, c.new, c.all)
			runtime.ReadMemStats(&after)
			if kind, ok := kindOf(err); (c.refused != "") != (ok && kind == KindLimit) {
				t.Fatalf("Edit: %v", err)
			}
			if c.refused != "" && !strings.Contains(err.Error(), c.refused) {
				t.Errorf("Edit: %v; want %s", err, c.refused)
			}
			if got := after.TotalAlloc - before.TotalAlloc; got > 8<<20 {
				t.Errorf("the edit allocated %d bytes; the file is %d", got, size)
			}
			if got, _ := os.Stat(filepath.Join(dir, "f.txt")); c.refused == "" && got.Size() != c.grows {
				t.Errorf("the edited file has %d bytes; want %d", got.Size(), c.grows)
			}
		})
	}
}
