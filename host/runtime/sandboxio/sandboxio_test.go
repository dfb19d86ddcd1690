package sandboxio

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

func TestClean(t *testing.T) {
	cases := []struct {
		in, want, err string
	}{
		{in: "a.txt", want: "a.txt"},
		{in: "./a.txt", want: "a.txt"},
		{in: "sub//dir/./f.csv", want: "sub/dir/f.csv"},
		{in: "sub/dir/", want: "sub/dir"},
		{in: ".", want: "."},
		{in: "a/b/../c", err: "'..' is not allowed"},
		{in: "..", err: "'..' is not allowed"},
		{in: "../x", err: "'..' is not allowed"},
		{in: "/etc/passwd", err: "absolute paths"},
		{in: `\\server\share`, err: "absolute paths"},
		{in: `C:\x`, err: "absolute paths"},
		{in: "a\x00b", err: "NUL"},
		{in: "", err: "empty path"},
		{in: "...", want: "..."},
		{in: "..a/b..", want: "..a/b.."},
	}
	for _, c := range cases {
		got, err := Clean(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("Clean(%q) = %q, %v; want error %q", c.in, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Clean(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

// FuzzClean checks that a path Clean accepts never leaves the directory:
// joined to a root it stays under that root, and it is relative, free of
// NUL and of ".." components.
func FuzzClean(f *testing.F) {
	for _, seed := range []string{"a", "../a", "a/../../b", "/abs", "./x/./y", "a\x00", "..", "....//..", "x/..", `\x`, "é/ü"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, p string) {
		cleaned, err := Clean(p)
		if err != nil {
			return
		}
		if strings.HasPrefix(cleaned, "/") || strings.IndexByte(cleaned, 0) >= 0 {
			t.Fatalf("Clean(%q) = %q", p, cleaned)
		}
		for _, part := range strings.Split(cleaned, "/") {
			if part == ".." {
				t.Fatalf("Clean(%q) = %q has a '..' component", p, cleaned)
			}
		}
		if joined := path.Join("/root", cleaned); joined != "/root" && !strings.HasPrefix(joined, "/root/") {
			t.Fatalf("Clean(%q) = %q escapes: %q", p, cleaned, joined)
		}
	})
}

func TestFS(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "io")
	fs := New(dir, Limits{MaxBytes: 8})
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatal("New created the directory")
	}
	id, err := fs.Open("a/b.txt", "w")
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.Write(id, []byte("12345")); err != nil {
		t.Fatal(err)
	}
	err = fs.Write(id, []byte("6789"))
	if e, ok := err.(*Error); !ok || e.Kind != KindLimit {
		t.Fatalf("over-budget write: %v", err)
	}
	if err := fs.Write(id, []byte("678")); err != nil {
		t.Fatal(err)
	}
	fs.CloseAll()
	if err := fs.Write(id, []byte("x")); err == nil || !strings.Contains(err.Error(), "closed file") {
		t.Errorf("write after CloseAll: %v", err)
	}
	touched, _ := fs.Touched()
	if len(touched) != 1 || touched[0].Name != "a/b.txt" || touched[0].Bytes != 8 {
		t.Errorf("touched = %+v", touched)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "a", "b.txt")); string(data) != "12345678" {
		t.Errorf("file holds %q", data)
	}
}
