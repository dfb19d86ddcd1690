package testfile_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/toolscript/toolscript/internal/testfile"
)

// TestTree: every file lands at its slash-separated path, directories
// made, with its text; Temp's file stands alone in a directory of its own.
func TestTree(t *testing.T) {
	root := t.TempDir()
	testfile.Tree(t, root, map[string]string{
		"a.txt":             "a",
		"sub/b.txt":         "bb",
		"sub/deeper/c.luau": "return 1\n",
	})
	for name, want := range map[string]string{"a.txt": "a", "sub/b.txt": "bb", "sub/deeper/c.luau": "return 1\n"} {
		got, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
		if err != nil || string(got) != want {
			t.Errorf("%s: %q, %v; want %q", name, got, err, want)
		}
	}
	path := testfile.Temp(t, "script.luau", "print(1)")
	if filepath.Base(path) != "script.luau" {
		t.Errorf("Temp's path %s", path)
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil || len(entries) != 1 {
		t.Errorf("Temp's directory: %v, %v; want its one file", entries, err)
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o644 {
		t.Errorf("Temp's file: %v, %v; want mode 0644", info, err)
	}
}
