package luau_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/host/runtime/result"
)

// ioTree is the io directory the tests below start from.
func ioTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string]string{
		"a.txt": "one needle\ntwo\n", "sub/b.csv": "id,needle\n", "sub/deep/c.txt": "no\n", "bin.dat": "needle\x00",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("a.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The io functions of part two, as a script sees them: values, the
// errors they raise and what they leave in the io directory.
func TestIOStatGlobGrepEditRename(t *testing.T) {
	cases := []struct {
		name, source string
		want         string      // the result's JSON, when no error
		kind         result.Kind // else the error's kind
		message      string      // and its message
		files        string      // the io directory afterwards: a.txt's content
	}{
		{name: "stat", source: `local f, d, l = io.stat("a.txt"), io.stat("sub"), io.stat("link")
			return {f.kind, f.size, f.modified > 0, d.kind, l.kind}`, want: `["file",15,true,"directory","link"]`},
		{name: "stat missing", source: `local info, message = io.stat("nope.txt") return {info == nil, message}`,
			want: `[true,"io.stat: 'nope.txt': no such file or directory"]`},
		{name: "stat refused", source: `return io.stat("../x")`, kind: result.IO,
			message: "io.stat: '../x': '..' is not allowed: paths must stay inside the io directory"},
		{name: "glob", source: `return io.glob("**/*.txt")`, want: `["a.txt","sub/deep/c.txt"]`},
		{name: "glob none", source: `return #io.glob("*.none")`, want: `0`},
		{name: "glob invalid", source: `return io.glob("[")`, kind: result.IO, message: "io.glob: invalid pattern '['"},
		{name: "grep", source: `return io.grep("needle")`,
			want: `[{"line":1,"path":"a.txt","text":"one needle"},{"line":1,"path":"sub/b.csv","text":"id,needle"}]`},
		{name: "grep filtered", source: `local m = io.grep("needle", "sub", {glob = "*.csv"}) return {#m, m[1].path}`, want: `[1,"sub/b.csv"]`},
		{name: "grep RE2 refuses", source: `return io.grep("(?=x)")`, kind: result.IO, message: "io.grep: invalid pattern '(?=x)': invalid or unsupported Perl syntax"},
		{name: "glob of 1 MB", source: `return io.glob(string.rep("a", 1048576))`, kind: result.IO,
			message: "...': the pattern is too long (1048576 bytes; at most 4096)"},
		{name: "grep of 1 MB", source: `return io.grep(string.rep("(", 1048576))`, kind: result.IO,
			message: "io.grep: invalid pattern '" + strings.Repeat("(", 200) + "...': the pattern is too long (1048576 bytes; at most 16384)"},
		{name: "grep bad options", source: `return io.grep("x", ".", {glob = 1})`, kind: result.Runtime, message: "options.glob must be a string"},
		{name: "grep unknown option", source: `return io.grep("x", ".", {ignore_case = true})`, kind: result.Runtime,
			message: "io.grep: unknown option 'ignore_case' (the options are: glob)"},
		{name: "grep options as a list", source: `return io.grep("x", ".", {"*.txt"})`, kind: result.Runtime,
			message: "io.grep: options are named fields (the options are: glob)"},
		{name: "edit", source: `return io.edit("a.txt", "needle", "pin")`, want: `1`, files: "one pin\ntwo\n"},
		{name: "edit all", source: `return io.edit("a.txt", "o", "0", true)`, want: `2`, files: "0ne needle\ntw0\n"},
		{name: "edit none", source: `return io.edit("a.txt", "zzz", "y")`, kind: result.IO,
			message: "io.edit: 'a.txt': the text to replace is not in the file (nothing was changed)", files: "one needle\ntwo\n"},
		{name: "rename", source: `return {os.rename("a.txt", "moved/a.txt"), io.stat("a.txt") == nil, io.open("moved/a.txt"):read("a")}`,
			want: `[true,true,"one needle\ntwo\n"]`},
		{name: "rename a directory", source: `return os.rename("sub", "x")`, kind: result.IO, message: "os.rename: 'sub': is a directory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := ioTree(t)
			res := shared.Get(t).Execute(context.Background(), luau.Script{Source: []byte(c.source), IO: &luau.IO{Dir: dir}})
			switch {
			case c.want != "" && (res.Error != nil || string(res.Value) != c.want):
				t.Errorf("result %s, want %s", res.JSON(), c.want)
			case c.want == "" && (res.Error == nil || res.Error.Kind != c.kind || !strings.Contains(res.Error.Message, c.message)):
				t.Errorf("result %s, want kind %s with %q", res.JSON(), c.kind, c.message)
			}
			if c.files != "" {
				if got, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(got) != c.files {
					t.Errorf("a.txt holds %q, want %q", got, c.files)
				}
			}
		})
	}
}

const partTwoScript = `
	local info = io.stat("a.txt")
	local paths = io.glob("**")
	local matches = io.grep("needle", ".", {glob = "*.txt"})
	local n = io.edit("a.txt", "needle", "pin")
	os.rename("sub/b.csv", "b.csv")
	local missing = select(2, io.stat("gone"))
	return {info.size, paths, #matches, n, missing, io.open("a.txt"):read("a"), io.glob("*.csv")}
`

// Recorded, then replayed with the io directory gone, the functions give
// the same result byte for byte.
func TestRecordReplayPartTwo(t *testing.T) {
	dir := ioTree(t)
	recorded, tr := recordRun(t, partTwoScript, dir)
	if recorded.Error != nil {
		t.Fatalf("recording: %v", recorded.Error)
	}
	for _, op := range []string{"stat", "glob", "grep", "edit", "rename"} {
		if !bytes.Contains(tr, []byte(`"op":"`+op+`"`)) {
			t.Errorf("the trace has no %s", op)
		}
	}
	gone := filepath.Join(t.TempDir(), "gone")
	replayed := replayRun(t, partTwoScript, gone, tr)
	if got, want := replayed.JSON(), recorded.JSON(); !bytes.Equal(got, want) {
		t.Fatalf("replay:\n%s\nrecording:\n%s", got, want)
	}
	other := strings.Replace(partTwoScript, `"needle", "pin"`, `"needle", "pen"`, 1)
	if res := replayRun(t, other, gone, tr); res.Error == nil || res.Error.Kind != result.Replay || !strings.Contains(res.Error.Message, `got io.edit("a.txt", ...)`) {
		t.Errorf("a replay with another edit: %s", res.JSON())
	}
}

// A dry run's edit and rename are effects (the edit a write with its
// diff) and reach nothing.
func TestDryRunPartTwo(t *testing.T) {
	dir := ioTree(t)
	res := shared.Get(t).Execute(context.Background(), luau.Script{Source: []byte(partTwoScript), IO: &luau.IO{Dir: dir},
		Effects: effects.New(effects.DryRun)})
	if res.Error != nil {
		t.Fatal(res.Error)
	}
	var got []string
	for _, e := range res.Effects {
		got = append(got, fmt.Sprintf("%s %s %s", e.Op, e.Path, e.To))
	}
	if fmt.Sprint(got) != "[write a.txt  rename sub/b.csv b.csv]" || !strings.Contains(res.Effects[0].Diff, "-one needle\n+one pin") {
		t.Errorf("effects %s", res.JSON())
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "one needle\ntwo\n" {
		t.Errorf("the dry run wrote a.txt: %q", b)
	}
	if !strings.Contains(string(res.Value), `"one pin\ntwo\n",["b.csv"]`) {
		t.Errorf("the script did not see its own changes: %s", res.Value)
	}
}
