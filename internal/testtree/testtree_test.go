package testtree

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolscript/toolscript/internal/testfile"
)

func TestContents(t *testing.T) {
	dir := t.TempDir()
	testfile.Write(t, filepath.Join(dir, "sub", "a.txt"), "hello")
	if err := os.Symlink("sub/a.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	entry := func(rel string) string {
		info, err := os.Lstat(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%s %s %d", rel, info.Mode(), info.Size())
	}
	want := entry(".") + "\n" + entry("link") + " -> sub/a.txt\n" + entry("sub") + "\n" +
		entry("sub/a.txt") + fmt.Sprintf(" %x\n", sha256.Sum256([]byte("hello")))
	if got := Contents(t, dir); got != want {
		t.Errorf("Contents:\n%s\nwant\n%s", got, want)
	}
}

// TestSnapshotSeesTimes: a file's content and size unchanged, a new
// modification time still changes the snapshot, and not the contents.
func TestSnapshotSeesTimes(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "a.txt")
	testfile.Write(t, name, "x")
	contents, snapshot := Contents(t, dir), Snapshot(t, dir)
	if Snapshot(t, dir) != snapshot {
		t.Fatal("two snapshots of an unchanged directory differ")
	}
	if err := os.Chtimes(name, time.Unix(1, 0), time.Unix(1, 0)); err != nil {
		t.Fatal(err)
	}
	if Snapshot(t, dir) == snapshot {
		t.Error("the snapshot missed a new modification time")
	}
	if Contents(t, dir) != contents {
		t.Error("the contents changed with a time")
	}
}
