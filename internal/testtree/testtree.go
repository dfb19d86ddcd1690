// Package testtree owns how tests see what a directory holds: a line an
// entry, with its mode, size and content digest, and for the checks that
// a dry run left a directory as it was, its times and inode too. Tests of
// several packages (sandboxio's overlay and apply, the end-to-end dry runs
// and plans) compare two of these.
package testtree

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Contents is what dir holds, a line an entry in lexical order: its path
// relative to dir ("." for dir itself), mode and size, then a regular
// file's SHA-256 or a link's target.
func Contents(t testing.TB, dir string) string {
	t.Helper()
	return walk(t, dir, false)
}

// Snapshot is Contents with each entry's modification time and, on Linux,
// its change time and inode, which any write, rename or change of mode
// moves: everything a dry run must leave as it was.
func Snapshot(t testing.TB, dir string) string {
	t.Helper()
	return walk(t, dir, true)
}

func walk(t testing.TB, dir string, times bool) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(&b, "%s %s %d", rel, info.Mode(), info.Size())
		if times {
			fmt.Fprintf(&b, " mtime=%d%s", info.ModTime().UnixNano(), changeTime(info))
		}
		switch {
		case info.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, " %x", sha256.Sum256(data))
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, " -> %s", target)
		}
		b.WriteByte('\n')
		return nil
	})
	if err != nil {
		t.Fatalf("reading what %s holds: %v", dir, err)
	}
	return b.String()
}
