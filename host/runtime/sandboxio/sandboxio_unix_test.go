//go:build unix

package sandboxio

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A FIFO is refused by every operation without being opened: opening it
// would block until a writer or reader comes, and a blocked host call is
// out of reach of the script's timeout.
func TestFIFOIsNeverOpened(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if err := os.Symlink("fifo", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	s := New(dir, Limits{MaxBytes: 1 << 20})
	defer s.Touched()
	defer s.CloseAll()

	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, name := range []string{"fifo", "link"} {
			for _, mode := range []string{"r", "w", "a", "r+", "w+", "a+"} {
				if _, err := s.Open(name, mode); err == nil || !strings.Contains(err.Error(), "is a named pipe (FIFO)") {
					t.Errorf("Open(%q, %q) = %v", name, mode, err)
				}
			}
			if _, err := s.List(context.Background(), name); err == nil || !strings.Contains(err.Error(), "not a directory") {
				t.Errorf("List(%q) = %v", name, err)
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("an operation on a FIFO blocked")
	}
}

// A file written through a link inside the directory is reported by its
// own name, the file that changed, not the link's.
func TestTouchedNamesTheFileALinkReaches(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "real.txt"), []byte("abc"), 0o644)
	os.Symlink("real.txt", filepath.Join(dir, "link.txt"))
	s := New(dir, Limits{MaxBytes: 1 << 20})
	id, err := s.Open("link.txt", "a")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(id, []byte("de")); err != nil {
		t.Fatal(err)
	}
	s.CloseAll()
	got, _ := s.Touched()
	if len(got) != 1 || got[0].Name != "real.txt" || got[0].Op != "append" || got[0].Bytes != 5 {
		t.Errorf("Touched() = %+v, want real.txt append 5", got)
	}
}

func TestRemoveNeverRemovesADirectory(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "empty"), 0o755)
	os.WriteFile(filepath.Join(dir, "f"), nil, 0o644)
	os.Symlink("empty", filepath.Join(dir, "dirlink"))
	s := New(dir, Limits{MaxBytes: 1 << 20})
	defer s.Touched()
	for _, c := range []struct{ name, err string }{
		{"empty", "is a directory"},
		{"empty/", "is a directory"},
		{"f", ""},
		{"dirlink", ""}, // the link itself goes; the directory stays
	} {
		if err := s.Remove(c.name); (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("Remove(%q) = %v, want %q", c.name, err, c.err)
		}
	}
	if info, err := os.Stat(filepath.Join(dir, "empty")); err != nil || !info.IsDir() {
		t.Errorf("the directory is gone: %v", err)
	}
}

// inodes returns the identities of the regular files under dir, not
// following links.
func inodes(t testing.TB, dir string) map[[2]uint64]bool {
	t.Helper()
	set := map[[2]uint64]bool{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if info, err := os.Lstat(p); err == nil && info.Mode().IsRegular() {
			st := info.Sys().(*syscall.Stat_t)
			set[[2]uint64{uint64(st.Dev), uint64(st.Ino)}] = true
		}
		return nil
	})
	return set
}

// FuzzOpen opens fuzzed paths in fuzzed modes in an io directory full of
// links that lead outside it (absolute, relative, chained, through
// directories, looping) and checks that whatever is opened is a file
// inside the directory, and that nothing outside changes.
func FuzzOpen(f *testing.F) {
	modes := []string{"r", "w", "a", "r+", "w+", "a+", "rb", "x"}
	for _, seed := range []string{
		"in.txt", "sub/in2.txt", "abs", "rel", "chain", "outdir/secret", "outdir/new", "reldir/secret", "sub/up",
		"sub/up/secret", "okdir/in2.txt", "oklink", "loop", "dangling", "new/deep/file", "./oklink", "sub/chain",
	} {
		for m := range modes {
			f.Add(seed, uint8(m))
		}
	}
	outside := filepath.Join(f.TempDir(), "outside")
	os.MkdirAll(outside, 0o755)
	os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o644)
	before := inodes(f, outside)

	f.Fuzz(func(t *testing.T, name string, m uint8) {
		dir := filepath.Join(t.TempDir(), "io")
		os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
		os.WriteFile(filepath.Join(dir, "in.txt"), []byte("in"), 0o644)
		os.WriteFile(filepath.Join(dir, "sub", "in2.txt"), []byte("in"), 0o644)
		for link, target := range map[string]string{
			"abs":       filepath.Join(outside, "secret"),
			"rel":       "../../outside/secret",
			"chain":     "rel",
			"outdir":    outside,
			"reldir":    "../../outside",
			"sub/up":    "../..",
			"sub/chain": "../chain",
			"okdir":     "sub",
			"oklink":    "sub/in2.txt",
			"loop":      "loop",
			"dangling":  filepath.Join(outside, "nothing"),
		} {
			os.Symlink(target, filepath.Join(dir, link))
		}
		s := New(dir, Limits{MaxBytes: 1 << 20})
		defer s.Touched()
		defer s.CloseAll()
		mode := modes[int(m)%len(modes)]
		id, err := s.Open(name, mode)
		if err != nil {
			return
		}
		var st syscall.Stat_t
		if err := syscall.Fstat(int(s.handles[id].file.Fd()), &st); err != nil {
			t.Fatal(err)
		}
		if !inodes(t, dir)[[2]uint64{uint64(st.Dev), uint64(st.Ino)}] {
			t.Fatalf("Open(%q, %q) opened a file outside the io directory", name, mode)
		}
		s.Write(id, []byte("x"))
		s.CloseAll()
		if after := inodes(t, outside); len(after) != len(before) {
			t.Fatalf("Open(%q, %q) changed the outside", name, mode)
		}
		if data, _ := os.ReadFile(filepath.Join(outside, "secret")); string(data) != "secret" {
			t.Fatalf("Open(%q, %q) changed the secret: %q", name, mode, data)
		}
	})
}

// Messages never show the io directory's host path, even when the
// directory itself cannot be created or opened.
func TestMessagesHideTheDirectory(t *testing.T) {
	base := t.TempDir()
	os.WriteFile(filepath.Join(base, "file"), nil, 0o644)
	for _, dir := range []string{filepath.Join(base, "file", "io"), filepath.Join(base, "missing")} {
		s := New(dir, Limits{MaxBytes: 1 << 20})
		_, errWrite := s.Open("x.txt", "w")
		_, errRead := s.Open("x.txt", "r")
		_, errList := s.List(context.Background(), "sub")
		for _, err := range []error{errWrite, errRead, errList, s.Remove("x.txt")} {
			if err == nil {
				if dir == filepath.Join(base, "file", "io") {
					t.Errorf("an operation in %s succeeded", dir)
				}
				continue
			}
			// Only a configuration problem (the io directory itself is
			// unusable) names the directory, as configured.
			var dirErr *DirError
			if strings.Contains(err.Error(), base) && (!errors.As(err, &dirErr) || dirErr.Dir != dir) {
				t.Errorf("message shows the host path: %v", err)
			}
			var e *Error
			if !errors.As(err, &e) || (e.Err == nil && e.Kind == KindIO && !strings.Contains(e.Reason, "is a directory")) {
				t.Errorf("error %v does not wrap its cause", err)
			}
		}
		s.CloseAll()
		s.Touched()
	}
}
