package sandboxio

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/contract/effects/trace"
)

// TestDigestsUnchanged: a pause's digests hold the files as they are; a
// resume refuses each way a file can change.
func TestDigestsUnchanged(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(dir string)
		want   string // "" : unchanged
	}{
		{name: "nothing changed", change: func(string) {}},
		{name: "content", change: func(dir string) { os.WriteFile(filepath.Join(dir, "in.txt"), []byte("other"), 0o644) }, want: "in.txt changed since the pause"},
		{name: "same size", change: func(dir string) { os.WriteFile(filepath.Join(dir, "in.txt"), []byte("HELLO"), 0o644) }, want: "in.txt changed since the pause"},
		{name: "removed", change: func(dir string) { os.Remove(filepath.Join(dir, "sub/out.csv")) }, want: "sub/out.csv changed since the pause"},
		{name: "created", change: func(dir string) { os.WriteFile(filepath.Join(dir, "gone.txt"), nil, 0o644) }, want: "gone.txt changed since the pause"},
		{name: "a file not named", change: func(dir string) { os.WriteFile(filepath.Join(dir, "other.txt"), []byte("x"), 0o644) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
			os.WriteFile(filepath.Join(dir, "in.txt"), []byte("hello"), 0o644)
			os.WriteFile(filepath.Join(dir, "sub/out.csv"), []byte("a,b\n"), 0o644)
			digests, err := Digests(dir, []string{"./in.txt", "sub/out.csv", "gone.txt", "in.txt", "../escape", "sub"})
			if err != nil {
				t.Fatal(err)
			}
			if len(digests) != 4 || digests[0].Path != "gone.txt" || digests[0].SHA256 != "" || digests[1].Path != "in.txt" || len(digests[1].SHA256) != 64 {
				t.Fatalf("digests %+v", digests)
			}
			tc.change(dir)
			err = Unchanged(dir, digests)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("unchanged: %v", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestDigestsBounded(t *testing.T) {
	paths := make([]string, MaxDigestFiles+1)
	for i := range paths {
		paths[i] = "f"
	}
	if _, err := Digests(t.TempDir(), paths); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("%d paths: %v", len(paths), err)
	}
	if err := Unchanged(filepath.Join(t.TempDir(), "absent"), []FileDigest{{Path: "a"}}); err != nil {
		t.Errorf("an io directory not made yet holds no file: %v", err)
	}
	if err := Unchanged(t.TempDir(), []FileDigest{{Path: "../x"}}); err == nil {
		t.Error("a path outside the directory was taken")
	}
}

// TestContinueFrom: a resumed execution's handles come after its
// prefix's, and the files its prefix wrote are reported touched.
func TestContinueFrom(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "prefix.txt"), []byte("written before the pause"), 0o644)
	fs := New(dir, Limits{MaxBytes: 1 << 20})
	fs.ContinueFrom([]trace.IO{
		{Op: trace.IOOpen, Path: "prefix.txt", Mode: "w", Result: 1},
		{Op: trace.IOOpen, Path: "read.txt", Mode: "r", Result: 2},
		{Op: trace.IOOpen, Path: "missing.txt", Mode: "r", Result: -1},
	})
	h, err := fs.Open("live.txt", "w")
	if err != nil {
		t.Fatal(err)
	}
	if h != 3 {
		t.Errorf("the live run's first handle is %d, want 3", h)
	}
	fs.CloseAll()
	touched, _ := fs.Touched()
	if len(touched) != 2 || touched[0].Name != "live.txt" || touched[1].Name != "prefix.txt" || touched[1].Bytes != 24 {
		t.Errorf("touched %+v", touched)
	}
	// Only the prefix's files: Touched still finds them on disk.
	fs = New(dir, Limits{})
	fs.ContinueFrom([]trace.IO{{Op: trace.IOOpen, Path: "prefix.txt", Mode: "a", Result: 1}})
	if touched, _ := fs.Touched(); len(touched) != 1 || touched[0].Op != "append" || touched[0].Bytes != 24 {
		t.Errorf("touched %+v", touched)
	}
}
