package sandboxio

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckDir(t *testing.T) {
	base := t.TempDir()
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(base, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, dir string
		want      string // "" when usable
	}{
		{"an existing directory", filepath.Join(base, "dir"), ""},
		{"a directory to create", filepath.Join(base, "new", "deeper"), ""},
		{"a regular file", file, "the io directory " + file + " is not a directory (" + DirHint + ")"},
		{"under a regular file", filepath.Join(file, "io"),
			"the io directory " + filepath.Join(file, "io") + " cannot be created: " + file + " is not a directory (" + DirHint + ")"},
		{"deep under a regular file", filepath.Join(file, "a", "b"), "cannot be created: " + file + " is not a directory"},
	}
	for _, c := range cases {
		err := CheckDir(c.dir)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
		var dirErr *DirError
		if err != nil && !errors.As(err, &dirErr) {
			t.Errorf("%s: %T is not a *DirError", c.name, err)
		}
		if _, err := os.Stat(filepath.Join(base, "new")); err == nil {
			t.Fatalf("%s: CheckDir created a directory", c.name)
		}
	}

	// A relative directory is named as configured, then resolved.
	t.Chdir(base)
	if err := CheckDir("file"); err == nil || !strings.Contains(err.Error(), `the io directory "file" (`+file+`) is not a directory`) {
		t.Errorf("relative: %v", err)
	}
	if err := CheckDir("file/io"); err == nil || !strings.Contains(err.Error(), `the io directory "file/io" (`+file+`/io) cannot be created: `+file+` is not a directory`) {
		t.Errorf("relative, under a file: %v", err)
	}
}

// TestCheckDirPermissions needs permissions that apply: root passes them.
func TestCheckDirPermissions(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes anywhere (tests/io_dir_test.go runs this case as another user)")
	}
	base := t.TempDir()
	locked := filepath.Join(base, "locked")
	if err := os.Mkdir(locked, 0o555); err != nil {
		t.Fatal(err)
	}
	if err := CheckDir(locked); err == nil || !strings.Contains(err.Error(), "is not writable: permission denied") {
		t.Errorf("a read-only directory: %v", err)
	}
	if err := CheckDir(filepath.Join(locked, "io")); err == nil || !strings.Contains(err.Error(), "cannot be created: "+locked+": permission denied") {
		t.Errorf("under a read-only directory: %v", err)
	}
}

// TestFSReportsTheUnusableDirectory checks that the io library says what is
// wrong with the directory, in every operation, and never lists a regular
// file as an empty directory.
func TestFSReportsTheUnusableDirectory(t *testing.T) {
	base := t.TempDir()
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{file, filepath.Join(file, "io")} {
		s := New(dir, Limits{MaxBytes: 1 << 20})
		_, errWrite := s.Open("x.txt", "w")
		_, errRead := s.Open("x.txt", "r")
		names, errList := s.List(context.Background(), ".")
		for op, err := range map[string]error{"write": errWrite, "read": errRead, "list": errList, "remove": s.Remove("x.txt")} {
			var dirErr *DirError
			var e *Error
			if !errors.As(err, &dirErr) || !errors.As(err, &e) || e.Kind != KindIO || !strings.Contains(err.Error(), dir) {
				t.Errorf("%s in %s: %v", op, dir, err)
			}
		}
		if names != nil {
			t.Errorf("%s listed as %q", dir, names)
		}
		s.CloseAll()
		s.Touched()
	}
	// A directory not created yet is empty, and its files do not exist.
	s := New(filepath.Join(base, "later"), Limits{MaxBytes: 1 << 20})
	if names, err := s.List(context.Background(), "."); err != nil || len(names) != 0 {
		t.Errorf("list before the first write: %q %v", names, err)
	}
	if _, err := s.Open("x.txt", "r"); err == nil || !strings.HasSuffix(err.Error(), "'x.txt': no such file or directory") {
		t.Errorf("read before the first write: %v", err)
	}
}
