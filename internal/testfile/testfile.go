// Package testfile owns how tests put files on disk: one file's text (its
// directories made), a tree of files, or one file alone in a temporary
// directory of its own. Any failure ends the test.
package testfile

import (
	"os"
	"path/filepath"
	"testing"
)

// Write writes text to the file at path (mode 0644), making its
// directories first.
func Write(t testing.TB, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Tree writes each of files below root: the key is the file's
// slash-separated path relative to root, the value its text.
func Tree(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		Write(t, filepath.Join(root, filepath.FromSlash(name)), text)
	}
}

// Temp writes text to a file named name in a new temporary directory of
// the test, and returns the file's path.
func Temp(t testing.TB, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	Write(t, path, text)
	return path
}
