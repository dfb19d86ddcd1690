//go:build unix

package sandboxio

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tree makes files (name: content; a name ending in "/" a directory, a
// content starting with "->" a symbolic link to the rest) under dir.
func tree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch {
		case strings.HasSuffix(name, "/"):
			err = os.MkdirAll(p, 0o755)
		case strings.HasPrefix(content, "->"):
			err = os.Symlink(content[2:], p)
		default:
			err = os.WriteFile(p, []byte(content), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// outside is a directory beside the io directory with a file a walk must
// never reach.
func outside(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	tree(t, dir, map[string]string{"secret.txt": "secret needle\n"})
	return dir
}

func kindOf(err error) (Kind, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind, true
	}
	return 0, false
}

func TestStat(t *testing.T) {
	dir, out := t.TempDir(), outside(t)
	tree(t, dir, map[string]string{"a.txt": "hello", "sub/": "", "in": "->a.txt", "out": "->" + out, "outfile": "->" + filepath.Join(out, "secret.txt")})
	s := New(dir, Limits{MaxBytes: 1 << 20})
	defer s.Touched()
	for _, c := range []struct {
		path, kind string
		size       int64
	}{
		{"a.txt", EntryFile, 5},
		{"sub", EntryDirectory, -1},
		{"sub/", EntryDirectory, -1},
		{".", EntryDirectory, -1},
		{"in", EntryLink, int64(len("a.txt"))},
		{"out", EntryLink, int64(len(out))},
		{"outfile", EntryLink, -1},
	} {
		info, err := s.Stat(c.path)
		if err != nil || info.Kind != c.kind || (c.size >= 0 && info.Size != c.size) || info.Modified == 0 {
			t.Errorf("Stat(%q) = %+v, %v; want %s of %d bytes", c.path, info, err, c.kind, c.size)
		}
	}
	for _, c := range []struct{ path, want string }{
		{"missing.txt", "io.stat: 'missing.txt': no such file or directory"},
		{"out/secret.txt", "io.stat: 'out/secret.txt': path escapes the io directory (through the symbolic link 'out')"},
		{"a.txt/", "io.stat: 'a.txt/': not a directory"},
		{"../x", "io.stat: '../x': '..' is not allowed: paths must stay inside the io directory"},
		{"/etc/passwd", "io.stat: '/etc/passwd': absolute paths are not allowed: paths are relative to the io directory"},
	} {
		_, err := s.Stat(c.path)
		if err == nil || err.Error() != c.want || strings.Contains(err.Error(), dir) {
			t.Errorf("Stat(%q) = %v; want %s", c.path, err, c.want)
		}
	}
	if _, err := s.Stat("missing.txt"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing path is not fs.ErrNotExist: %v", err)
	}

	// Before the directory exists: "." is an empty directory, the rest
	// does not exist.
	none := New(filepath.Join(t.TempDir(), "io"), Limits{MaxBytes: 1 << 20})
	if info, err := none.Stat("."); err != nil || info.Kind != EntryDirectory {
		t.Errorf("Stat(.) of a directory not yet made = %+v, %v", info, err)
	}
	if _, err := none.Stat("a"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat(a) of a directory not yet made = %v", err)
	}
}

func TestGlob(t *testing.T) {
	dir, out := t.TempDir(), outside(t)
	tree(t, dir, map[string]string{
		"a.txt": "", "b.csv": "", ".hidden.txt": "",
		"sub/a.txt": "", "sub/b.txt": "", "sub/deep/c.txt": "", "sub/deep/d.csv": "",
		"other/a.txt": "",
		"link-in":     "->sub", // a link to a directory inside: listed, never descended into
		"link-out":    "->" + out,
		"a-link.txt":  "->a.txt",
	})
	s := New(dir, Limits{MaxBytes: 1 << 20})
	defer s.Touched()
	for _, c := range []struct{ pattern, want string }{
		{"*.txt", "[.hidden.txt a-link.txt a.txt]"},
		{"**/*.txt", "[.hidden.txt a-link.txt a.txt other/a.txt sub/a.txt sub/b.txt sub/deep/c.txt]"},
		{"sub/*", "[sub/a.txt sub/b.txt sub/deep]"},
		{"s?b/[ab].txt", "[sub/a.txt sub/b.txt]"},
		{"sub/**", "[sub sub/a.txt sub/b.txt sub/deep sub/deep/c.txt sub/deep/d.csv]"},
		{"**/d.csv", "[sub/deep/d.csv]"},
		{"*/a.txt", "[other/a.txt sub/a.txt]"},
		{"sub/deep/c.txt", "[sub/deep/c.txt]"},
		{"link-*", "[link-in link-out]"},
		{"link-in/*", "[]"},
		{"link-out/*", "[]"},
		{"missing/*", "[]"},
		{"nothing", "[]"},
	} {
		got, err := s.Glob(context.Background(), c.pattern)
		if err != nil || fmt.Sprint(got) != c.want {
			t.Errorf("Glob(%q) = %v, %v; want %s", c.pattern, got, err, c.want)
		}
	}
	everything, err := s.Glob(context.Background(), "**")
	if err != nil || strings.Contains(fmt.Sprint(everything), "secret") {
		t.Errorf("Glob(**) reached outside: %v, %v", everything, err)
	}
}

func TestGlobInvalid(t *testing.T) {
	s := New(t.TempDir(), Limits{MaxBytes: 1 << 20})
	defer s.Touched()
	for _, c := range []struct{ pattern, want string }{
		{"[a", "io.glob: invalid pattern '[a': bad pattern in '[a'"},
		{"../*", "io.glob: invalid pattern '../*': '..' is not allowed"},
		{"/etc/*", "io.glob: invalid pattern '/etc/*': absolute paths are not allowed"},
		{strings.Repeat("a", 1<<20), "io.glob: invalid pattern '" + strings.Repeat("a", 200) + "...': the pattern is too long (1048576 bytes; at most 4096)"},
	} {
		_, err := s.Glob(context.Background(), c.pattern)
		if kind, ok := kindOf(err); !ok || kind != KindIO || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("Glob(%.40q) = %v; want %s", c.pattern, err, c.want)
		}
	}
}

// A directory swapped for a link leading out while the walk is under way
// is not followed: os.Root refuses the path.
func TestWalkDirectorySwappedForLink(t *testing.T) {
	dir, out := t.TempDir(), outside(t)
	tree(t, dir, map[string]string{"sub/a.txt": "needle\n", "z.txt": "needle\n"})
	s := New(dir, Limits{MaxBytes: 1 << 20})
	defer s.Touched()
	swapped := 0
	s.beforeReadDir = func(d string) {
		if d != "sub" {
			return
		}
		swapped++
		if err := os.RemoveAll(filepath.Join(dir, "sub")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(out, filepath.Join(dir, "sub")); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Glob(context.Background(), "**")
	if err != nil || fmt.Sprint(got) != "[sub z.txt]" {
		t.Errorf("Glob after the swap = %v, %v", got, err)
	}
	if swapped != 1 {
		t.Fatalf("the hook swapped %d times", swapped)
	}
	// Once more for grep, with the directory back.
	os.Remove(filepath.Join(dir, "sub"))
	tree(t, dir, map[string]string{"sub/a.txt": "needle\n"})
	matches, err := s.Grep(context.Background(), "needle", ".", "")
	if err != nil || fmt.Sprint(matches) != "[{z.txt 1 needle}]" {
		t.Errorf("Grep after the swap = %v, %v", matches, err)
	}
}

// Names with newlines or bytes that are not UTF-8 are listed and grepped
// as they are.
func TestWalkStrangeNames(t *testing.T) {
	dir := t.TempDir()
	names := []string{"new\nline.txt", "bad\xff.txt", "tab\t.txt"}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x\nneedle\n"), 0o644); err != nil {
			t.Skipf("the file system refuses %q: %v", n, err)
		}
	}
	s := New(dir, Limits{MaxBytes: 1 << 20})
	defer s.Touched()
	got, err := s.Glob(context.Background(), "*.txt")
	if err != nil || len(got) != 3 || got[0] != "bad\xff.txt" || got[1] != "new\nline.txt" {
		t.Errorf("Glob = %q, %v", got, err)
	}
	matches, err := s.Grep(context.Background(), "needle", ".", "*.txt")
	if err != nil || len(matches) != 3 || matches[1].Path != "new\nline.txt" || matches[1].Line != 2 {
		t.Errorf("Grep = %v, %v", matches, err)
	}
}

// "**" on a tree deeper than a path may be stops at the depth a path may
// have, without an error.
func TestGlobDeepTree(t *testing.T) {
	dir := t.TempDir()
	deep := filepath.Join(dir, strings.Repeat("d/", 100))
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(deep, "f.txt"), []byte("needle\n"), 0o644)
	s := New(dir, Limits{MaxBytes: 1 << 20})
	defer s.Touched()
	got, err := s.Glob(context.Background(), "**")
	if err != nil || len(got) != MaxPathDepth || got[len(got)-1] != strings.TrimSuffix(strings.Repeat("d/", MaxPathDepth), "/") {
		t.Errorf("Glob(**) on a tree 100 deep: %d paths, %v", len(got), err)
	}
	if matches, err := s.Grep(context.Background(), "needle", ".", ""); err != nil || len(matches) != 0 {
		t.Errorf("Grep on a tree 100 deep: %v, %v", matches, err)
	}
}

// A walk over a directory of 100,000 files stops at its bound of entries,
// having read no more than a batch past it.
func TestWalkStopsAtBound(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	os.Mkdir(big, 0o755)
	for i := range 100000 {
		f, err := os.Create(filepath.Join(big, fmt.Sprintf("f%06d.txt", i)))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	for _, c := range []struct {
		name string
		call func(s *FS) error
	}{
		{"glob", func(s *FS) error { _, err := s.Glob(context.Background(), "**/*.txt"); return err }},
		{"grep", func(s *FS) error { _, err := s.Grep(context.Background(), "x", ".", ""); return err }},
		{"list", func(s *FS) error { _, err := s.List(context.Background(), "big"); return err }},
	} {
		s := New(dir, Limits{MaxBytes: 1 << 20})
		err := c.call(s)
		if kind, ok := kindOf(err); !ok || kind != KindLimit || !strings.Contains(err.Error(), "bound of 50000 directory entries") {
			t.Errorf("%s over 100,000 files: %v", c.name, err)
		}
		if s.walkRead > MaxWalkEntries+walkBatch {
			t.Errorf("%s read %d entries, the bound is %d", c.name, s.walkRead, MaxWalkEntries)
		}
		s.Touched()
	}
}

// A cancelled execution's walk stops at its next directory.
func TestWalkStopsWhenCancelled(t *testing.T) {
	dir := t.TempDir()
	tree(t, dir, map[string]string{"a/b.txt": "x"})
	s := New(dir, Limits{MaxBytes: 1 << 20})
	defer s.Touched()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Glob(ctx, "**")
	if kind, ok := kindOf(err); !ok || kind != KindLimit || !errors.Is(err, context.Canceled) {
		t.Errorf("Glob with its execution over: %v", err)
	}
	_, err = s.List(ctx, "a")
	if kind, ok := kindOf(err); !ok || kind != KindLimit || !errors.Is(err, context.Canceled) {
		t.Errorf("List with its execution over: %v", err)
	}
}

// The paths io.glob returns are bounded in bytes as io.grep's matches
// are: 2,200 files at the bottom of 15 directories of 250-byte names are
// 2,200 paths of 4 KB, 8.4 MB the host would hold and copy (10,000 of
// them, 40 MB).
func TestGlobStopsAtBytes(t *testing.T) {
	dir := t.TempDir()
	deep := dir
	for i := range 15 {
		deep = filepath.Join(deep, fmt.Sprintf("%02d%s", i, strings.Repeat("d", 248)))
	}
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 2200 {
		f, err := os.Create(filepath.Join(deep, fmt.Sprintf("%04d%s", i, strings.Repeat("f", 150))))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	s := New(dir, Limits{MaxBytes: 1 << 20})
	defer s.Touched()
	got, err := s.Glob(context.Background(), "**")
	if kind, ok := kindOf(err); !ok || kind != KindLimit || !strings.Contains(err.Error(), fmt.Sprintf("bound of %d bytes of paths", MaxGlobBytes)) {
		t.Errorf("Glob over 8.4 MB of paths = %d paths, %v", len(got), err)
	}
	got, err = s.Glob(context.Background(), "*/*/*/*/*/*/*/*/*/*/*/*/*/*/*/00*")
	if err != nil || len(got) != 100 {
		t.Errorf("a narrower Glob = %d paths, %v", len(got), err)
	}
}
