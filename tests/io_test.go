package tests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/host/runtime/result"
	"github.com/toolscript/toolscript/internal/testfile"
	"github.com/toolscript/toolscript/internal/testruntime"
)

var ioRuntime = testruntime.NewShared(luau.Config{PoolSize: 2})

// runIO runs source with io over dir and returns the result.
func runIO(t *testing.T, dir, source string, io luau.IO, limits luau.Limits) *result.Result {
	t.Helper()
	io.Dir = dir
	return ioRuntime.Get(t).Execute(context.Background(), luau.Script{Source: []byte(source), IO: &io, Limits: limits})
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type ioCase struct {
	name    string
	setup   func(t *testing.T, dir string)
	source  string
	result  string      // expected result JSON, when no error is expected
	kind    result.Kind // expected error kind
	message string      // fragment of the error message
	touched string      // expected files_touched as name:op:bytes, comma-separated ("-" for none)
}

func touchedString(files []result.FileTouched) string {
	var parts []string
	for _, f := range files {
		parts = append(parts, f.Name+":"+string(f.Op)+":"+itoa(f.Bytes))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ",")
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// mismatch says how res differs from the result or error c wants, or
// is empty.
func (c ioCase) mismatch(res *result.Result) string {
	switch {
	case c.kind == "" && res.Error != nil:
		return fmt.Sprintf("error: %+v", res.Error)
	case c.kind == "" && string(res.Value) != c.result:
		return fmt.Sprintf("result = %s, want %s", res.Value, c.result)
	case c.kind != "" && (res.Error == nil || res.Error.Kind != c.kind || !strings.Contains(res.Error.Message, c.message)):
		return fmt.Sprintf("error = %+v, want kind %s with %q", res.Error, c.kind, c.message)
	}
	return ""
}

func runIOCases(t *testing.T, cases []ioCase, io luau.IO) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "files")
			if c.setup != nil {
				c.setup(t, dir)
			}
			res := runIO(t, dir, c.source, io, luau.Limits{})
			if msg := c.mismatch(res); msg != "" {
				t.Fatal(msg)
			}
			if c.touched != "" {
				if got := touchedString(res.FilesTouched); got != c.touched {
					t.Errorf("files_touched = %s, want %s", got, c.touched)
				}
			}
		})
	}
}

// The io library's cases (docs/sandbox.md), and the rest of the API.
func TestIOLibrary(t *testing.T) {
	t.Parallel()
	runIOCases(t, []ioCase{
		{name: "write and read", source: `
			local f = io.open("test.txt", "w") f:write("hello world") f:close()
			local g = io.open("test.txt", "r") local content = g:read("*a") g:close()
			return content`, result: `"hello world"`, touched: "test.txt:write:11"},
		{name: "lines iterator", source: `
			local f = io.open("lines.txt", "w") f:write("line1\nline2\nline3\n") f:close()
			local collected = {}
			for line in io.lines("lines.txt") do table.insert(collected, line) end
			return table.concat(collected, ",")`, result: `"line1,line2,line3"`},
		{name: "seek", source: `
			local f = io.open("seek.txt", "w") f:write("hello world") f:close()
			local g = io.open("seek.txt", "r") g:seek("set", 6) local rest = g:read("*a")
			local size = g:seek("end") g:close()
			return {rest, size}`, result: `["world",11]`},
		{name: "append mode", source: `
			local f = io.open("app.txt", "w") f:write("hello") f:close()
			local g = io.open("app.txt", "a") g:write(" world") g:close()
			local h = io.open("app.txt", "r") local content = h:read("*a") h:close()
			return content`, result: `"hello world"`, touched: "app.txt:write:11"},
		{name: "append only is reported as append", setup: func(t *testing.T, dir string) { testfile.Write(t, filepath.Join(dir, "log.txt"), "old\n") },
			source: `io.open("log.txt", "a"):write("new\n"):close() io.open("./log.txt", "ab"):write("more\n"):close()`,
			result: "null", touched: "log.txt:append:13"},
		{name: "io.type", source: `
			local f = io.open("t.txt", "w") local t1 = io.type(f) f:close()
			return {t1, io.type(f), io.type("not a file") or "nil", io.type({}) or "nil"}`,
			result: `["file","closed file","nil","nil"]`},
		{name: "io.list sorted", source: `
			io.open("bbb.txt", "w"):write("b"):close()
			io.open("aaa.txt", "w"):write("a"):close()
			io.open("sub/ccc.txt", "w"):close()
			return {io.list(), io.list("."), io.list("sub")}`,
			result: `[["aaa.txt","bbb.txt","sub"],["aaa.txt","bbb.txt","sub"],["ccc.txt"]]`},
		{name: "io.list of a missing io directory is empty", source: `return io.list()`, result: `[]`},
		{name: "os.remove", source: `
			io.open("del.txt", "w"):write("delete me"):close()
			local removed = os.remove("del.txt")
			local ok, err = pcall(io.open, "del.txt", "r")
			return {removed, ok, err}`,
			result: `[true,false,"io.open: 'del.txt': no such file or directory"]`, touched: "del.txt:remove:0"},
		{name: "files_touched final state", source: `
			local f = io.open("kept.txt", "w") f:write("data") f:close()
			local g = io.open("deleted.txt", "w") g:write("temp") g:close()
			os.remove("deleted.txt")
			io.open("./sub//x.txt", "w"):write("1"):close()
			io.open("sub/x.txt", "a"):write("2"):close()`,
			result: "null", touched: "deleted.txt:remove:0,kept.txt:write:4,sub/x.txt:write:2"},
		{name: "reads are not reported", setup: func(t *testing.T, dir string) { testfile.Write(t, filepath.Join(dir, "in.txt"), "x") },
			source: `return io.open("in.txt"):read("*a")`, result: `"x"`, touched: "-"},
		{name: "parent directories created", source: `io.open("a/b/c/d.csv", "w"):write("1,2\n"):close() return io.list("a/b/c")`,
			result: `["d.csv"]`, touched: "a/b/c/d.csv:write:4"},
		{name: "read formats", source: `
			io.open("f.txt", "w"):write("12 3.5e1 0x10 rest\nline two\n\nlast"):close()
			local f = io.open("f.txt")
			local a, b, c = f:read("*n", "n", "*n")
			local rest = f:read("*l")
			local two = f:read("L")
			local empty = f:read()
			local three = f:read(2)
			local zero = f:read(0)
			local tail = f:read(100)
			local eof0 = f:read(0)
			local eofl = f:read("*l")
			local eofa = f:read("*a")
			f:close()
			return {a, b, c, rest, two, empty, three, zero, tail, eof0 == nil, eofl == nil, eofa}`,
			result: `[12,35,16," rest","line two\n","","la","","st",true,true,""]`},
		{name: "several formats stop at the first nil", source: `
			io.open("f.txt", "w"):write("one\n"):close()
			local f = io.open("f.txt") local a, b, c = f:read("*l", "*l", "*l") f:close()
			return {a, b == nil, c == nil, select("#", io.open("f.txt"):read("*l", "*l", "*l"))}`,
			result: `["one",true,true,2]`},
		{name: "binary safe", source: `
			local bytes = {} for i = 0, 255 do bytes[#bytes + 1] = string.char(i) end
			local data = table.concat(bytes):rep(300)
			io.open("bin", "wb"):write(data):close()
			local back = io.open("bin", "rb"):read("*a")
			local lines = 0 for _ in io.lines("bin") do lines = lines + 1 end
			return {back == data, #back, lines}`, result: `[true,76800,301]`},
		{name: "write numbers and chaining", source: `
			io.open("n.txt", "w"):write(1, " ", 2.5, " ", "x"):write("\n"):close()
			return io.open("n.txt"):read("*a")`, result: `"1 2.5 x\n"`},
		{name: "handle lines does not close", source: `
			io.open("l.txt", "w"):write("a\nb"):close()
			local f = io.open("l.txt") local got = {}
			for l in f:lines() do got[#got + 1] = l end
			local t = io.type(f) f:close()
			return {got, t}`, result: `[["a","b"],"file"]`},
		{name: "io.lines closes at end", source: `
			io.open("l.txt", "w"):write("a\n"):close()
			for i = 1, 200 do for l in io.lines("l.txt") do end end
			return true`, result: "true"},
		{name: "r+ w+ a+", source: `
			io.open("p.txt", "w"):write("abcdef"):close()
			local f = io.open("p.txt", "r+") f:seek("set", 2) f:write("XY") f:seek("set") local a = f:read("*a") f:close()
			local g = io.open("p.txt", "w+") g:write("new") g:seek("set") local b = g:read("*a") g:close()
			local h = io.open("p.txt", "a+") h:write("!") h:seek("set") local c = h:read("*a") h:close()
			return {a, b, c}`, result: `["abXYef","new","new!"]`},
		{name: "read then write keeps the position", source: `
			io.open("rw.txt", "w"):write("line1\nline2\n"):close()
			local f = io.open("rw.txt", "r+") local first = f:read("*l") f:write("LINE2") f:close()
			return {first, io.open("rw.txt"):read("*a")}`, result: `["line1","line1\nLINE2\n"]`},
		{name: "flush", source: `local f = io.open("fl.txt", "w") f:write("abc") f:flush()
			local size = io.open("fl.txt"):seek("end") f:close() return size`, result: "3"},
		{name: "file.save deprecated wrapper", source: `return file.save("saved/out.json", json.encode({a = 1}))`,
			result: `"saved/out.json"`, touched: "saved/out.json:write:7"},
		{name: "use after close", source: `local f = io.open("c.txt", "w") f:close() f:write("after close")`,
			kind: result.Runtime, message: "attempt to use a closed file"},
		{name: "close twice", source: `local f = io.open("c.txt", "w") f:close() f:close()`,
			kind: result.Runtime, message: "attempt to use a closed file"},
		{name: "write to a read handle", setup: func(t *testing.T, dir string) { testfile.Write(t, filepath.Join(dir, "r.txt"), "x") },
			source: `io.open("r.txt"):write("y")`, kind: result.IO, message: "not open for writing"},
		{name: "missing file", source: `io.open("data/x.csv")`, kind: result.IO, message: "io.open: 'data/x.csv': no such file or directory"},
		{name: "invalid mode", source: `io.open("x", "rw")`, kind: result.IO, message: "invalid mode 'rw'"},
		{name: "invalid read format", source: `io.open("x", "w"):read("*z")`, kind: result.Runtime, message: "invalid format"},
		{name: "io.close", source: `local f = io.open("c.txt", "w") local r = io.close(f) return {r, io.type(f)}`, result: `[true,"closed file"]`},
		{name: "io.close without a file", source: `io.close()`, kind: result.IO, message: "io.close() without a file closes the default output, which is not available in the toolscript sandbox"},
		{name: "io.close of a closed file", source: `local f = io.open("c.txt", "w") f:close() io.close(f)`, kind: result.Runtime, message: "attempt to use a closed file"},
		{name: "io.popen", source: `io.popen("ls")`, kind: result.IO, message: "io.popen is not available in the toolscript sandbox"},
		{name: "io.stdout", source: `io.stdout:write("x")`, kind: result.IO, message: "io.stdout is not available in the toolscript sandbox"},
		{name: "io.read", source: `io.read()`, kind: result.IO, message: "io.read is not available"},
		{name: "io.tmpfile", source: `io.tmpfile()`, kind: result.IO, message: "io.tmpfile is not available"},
		{name: "setvbuf", source: `io.open("x", "w"):setvbuf("no")`, kind: result.IO, message: "file:setvbuf is not available"},
		{name: "os keeps its functions", source: `return {type(os.time()), type(os.clock), os.execute == nil, os.getenv == nil}`,
			result: `["number","function",true,true]`},
	}, luau.IO{MaxBytes: 1 << 20})
}

func TestIOConfinement(t *testing.T) {
	t.Parallel()
	runIOCases(t, []ioCase{
		{name: "traversal", source: `io.open("../evil.txt", "w")`, kind: result.IO, message: "io.open: '../evil.txt': '..' is not allowed"},
		{name: "traversal in the middle", source: `io.open("a/../../evil.txt", "w")`, kind: result.IO, message: "'..' is not allowed"},
		{name: "absolute path", source: `io.open("/etc/passwd", "r")`, kind: result.IO, message: "absolute paths are not allowed"},
		{name: "NUL byte", source: `io.open("te\0st.txt", "w")`, kind: result.IO, message: "NUL byte"},
		{name: "empty path", source: `io.open("", "w")`, kind: result.IO, message: "empty path"},
		{name: "os.remove traversal", source: `os.remove("../evil.txt")`, kind: result.IO, message: "os.remove: '../evil.txt': '..' is not allowed"},
		{name: "os.remove directory", setup: func(t *testing.T, dir string) { os.MkdirAll(filepath.Join(dir, "subdir"), 0o755) },
			source: `os.remove("subdir")`, kind: result.IO, message: "is a directory"},
		{name: "io.list traversal", source: `return io.list("..")`, kind: result.IO, message: "io.list: '..': '..' is not allowed"},
		{name: "io.list absolute", source: `return io.list("/")`, kind: result.IO, message: "absolute paths are not allowed"},
		{name: "io.list of a file", setup: func(t *testing.T, dir string) { testfile.Write(t, filepath.Join(dir, "f"), "x") },
			source: `return io.list("f")`, kind: result.IO, message: "not a directory"},
		{name: "open a directory", setup: func(t *testing.T, dir string) { os.MkdirAll(filepath.Join(dir, "d"), 0o755) },
			source: `io.open("d")`, kind: result.IO, message: "is a directory"},
		{name: "unusual bytes in names", source: `
			local name = "naïve \1 file\u{7f} [x].txt"
			io.open(name, "w"):write("ok"):close()
			return {io.list()[1] == name, io.open(name):read("*a")}`, result: `[true,"ok"]`},
		{name: "names that are not UTF-8 are refused", source: `
			local ok, err = pcall(io.open, "file\255.txt", "w")
			return {ok, err, #io.list()}`, result: "[false,\"io.open: 'file\uFFFD.txt': path is not valid UTF-8\",0]"},
		{name: "refusals can be caught", source: `local ok, e = pcall(io.open, "/etc/passwd") return {ok, e}`,
			result: `[false,"io.open: '/etc/passwd': absolute paths are not allowed: paths are relative to the io directory"]`},
	}, luau.IO{MaxBytes: 1 << 20})
}

func TestIOLimits(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "files")
	res := runIO(t, dir, `
		local f = io.open("big.txt", "w")
		f:write("12345")
		f:write("67890")
		local ok, err = pcall(f.write, f, "x")
		f:close()
		return {ok, err}`, luau.IO{MaxBytes: 10}, luau.Limits{})
	if res.Error != nil || !strings.Contains(string(res.Value), "write budget exceeded") {
		t.Fatalf("result %s, error %v", res.Value, res.Error)
	}
	if got := readFile(t, filepath.Join(dir, "big.txt")); got != "1234567890" {
		t.Errorf("file holds %q, want exactly the 10 allowed bytes", got)
	}

	res = runIO(t, dir, `io.open("over.txt", "w"):write("12345678901")`, luau.IO{MaxBytes: 10}, luau.Limits{})
	if res.Error == nil || res.Error.Kind != result.Limit || !strings.Contains(res.Error.Message, "over the limit of 10") {
		t.Fatalf("error = %+v, want kind limit", res.Error)
	}
	if got := readFile(t, filepath.Join(dir, "over.txt")); got != "" {
		t.Errorf("an over-budget write reached the disk: %q", got)
	}
	if touchedString(res.FilesTouched) != "over.txt:write:0" {
		t.Errorf("files_touched = %s", touchedString(res.FilesTouched))
	}

	res = runIO(t, dir, `local h = {} for i = 1, 65 do h[i] = io.open("h" .. i .. ".txt", "w") end`, luau.IO{MaxBytes: 1 << 20}, luau.Limits{})
	if res.Error == nil || res.Error.Kind != result.Limit || !strings.Contains(res.Error.Message, "too many open files (at most 64") {
		t.Fatalf("error = %+v, want the handle limit", res.Error)
	}

	res = runIO(t, dir, `
		for i = 1, 10000 do
			local f = io.open("many/f" .. (i % 10) .. ".txt", "w")
			f:write(i)
			f:close()
		end
		return #io.list("many")`, luau.IO{MaxBytes: 1 << 20}, luau.Limits{})
	if res.Error != nil || string(res.Value) != "10" {
		t.Fatalf("10,000 opens: %s %v", res.Value, res.Error)
	}
}

// Logs and files touched are reported however the execution ends, and every
// handle is closed (with its buffered bytes written).
func TestIOReportedOnFailure(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, source string
		limits       luau.Limits
		kind         result.Kind
	}{
		{"runtime error", `local f = io.open("out.txt", "w") f:write("partial") print("started") error("boom")`, luau.Limits{}, result.Runtime},
		{"timeout", `local f = io.open("out.txt", "w") f:write("partial") print("started") while true do end`, luau.Limits{Timeout: 200 * time.Millisecond}, result.Timeout},
		{"memory", `local f = io.open("out.txt", "w") f:write("partial") print("started") local t = {} for i = 1, 1e9 do t[i] = i end`, luau.Limits{HeapBytes: 16 << 20}, result.Memory},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "files")
			res := runIO(t, dir, c.source, luau.IO{MaxBytes: 1 << 20}, c.limits)
			if res.Error == nil || res.Error.Kind != c.kind {
				t.Fatalf("error = %+v, want %s", res.Error, c.kind)
			}
			if touchedString(res.FilesTouched) != "out.txt:write:7" || len(res.Logs) != 1 {
				t.Errorf("files_touched = %s, logs = %q", touchedString(res.FilesTouched), res.Logs)
			}
			if got := readFile(t, filepath.Join(dir, "out.txt")); got != "partial" {
				t.Errorf("file holds %q", got)
			}
		})
	}
}

func TestIODisabled(t *testing.T) {
	t.Parallel()
	rt := testruntime.New(t, luau.Config{})
	res := rt.Execute(context.Background(), luau.Script{Source: []byte(`return {io == nil, os.remove == nil, file == nil, os.time ~= nil}`)})
	if res.Error != nil || string(res.Value) != "[true,true,true,true]" {
		t.Errorf("io without IO: %s %v", res.Value, res.Error)
	}
}

func TestIODirectoryCreatedOnFirstWrite(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "files")
	res := runIO(t, dir, `local ok = pcall(io.open, "x.txt") return {ok, #io.list()}`, luau.IO{MaxBytes: 100}, luau.Limits{})
	if res.Error != nil || string(res.Value) != "[false,0]" {
		t.Fatalf("%s %v", res.Value, res.Error)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the io directory exists before any write: %v", err)
	}
	runIO(t, dir, `io.open("x.txt", "w"):close()`, luau.IO{MaxBytes: 100}, luau.Limits{})
	if _, err := os.Stat(filepath.Join(dir, "x.txt")); err != nil {
		t.Errorf("after a write: %v", err)
	}
}

// besideOutside names, in a temporary directory base, the io directory
// "files" and the directory "outside" beside it; a test makes them.
func besideOutside(t *testing.T) (base, dir, outside string) {
	base = t.TempDir()
	return base, filepath.Join(base, "files"), filepath.Join(base, "outside")
}

// Symbolic links planted inside the directory never lead outside it.
func TestIOSymlinks(t *testing.T) {
	t.Parallel()
	base, dir, outside := besideOutside(t)
	testfile.Write(t, filepath.Join(outside, "secret.txt"), "secret")
	testfile.Write(t, filepath.Join(dir, "inside.txt"), "inside")
	links := map[string]string{
		"to-file":   filepath.Join(outside, "secret.txt"),
		"to-dir":    outside,
		"chain-a":   "chain-b",
		"chain-b":   filepath.Join(outside, "secret.txt"),
		"relative":  "../outside/secret.txt",
		"to-inside": "inside.txt",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	cases := []ioCase{
		{name: "read through a link to a file outside", source: `return io.open("to-file"):read("*a")`, kind: result.IO, message: "io.open: 'to-file':"},
		{name: "write through a link to a file outside", source: `io.open("to-file", "w"):write("pwned"):close()`, kind: result.IO, message: "io.open: 'to-file':"},
		{name: "append through a link", source: `io.open("relative", "a"):write("pwned"):close()`, kind: result.IO, message: "'relative'"},
		{name: "into a linked directory", source: `return io.open("to-dir/secret.txt"):read("*a")`, kind: result.IO, message: "'to-dir/secret.txt'"},
		{name: "create in a linked directory", source: `io.open("to-dir/new.txt", "w"):write("x"):close()`, kind: result.IO, message: "'to-dir/new.txt'"},
		{name: "list a linked directory", source: `return io.list("to-dir")`, kind: result.IO, message: "io.list: 'to-dir'"},
		{name: "chain of links", source: `return io.open("chain-a"):read("*a")`, kind: result.IO, message: "'chain-a'"},
		{name: "remove through a linked directory", source: `os.remove("to-dir/secret.txt")`, kind: result.IO, message: "'to-dir/secret.txt'"},
		{name: "links inside are followed", source: `return io.open("to-inside"):read("*a")`, result: `"inside"`},
	}
	for _, c := range cases {
		res := runIO(t, dir, c.source, luau.IO{MaxBytes: 1 << 20}, luau.Limits{})
		if msg := c.mismatch(res); msg != "" {
			t.Errorf("%s: %s", c.name, msg)
		}
		if res.Error != nil && strings.Contains(res.Error.Message, base) {
			t.Errorf("%s: the message reveals the host path: %q", c.name, res.Error.Message)
		}
	}
	if got := readFile(t, filepath.Join(outside, "secret.txt")); got != "secret" {
		t.Errorf("the file outside was changed: %q", got)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Errorf("files appeared outside: %v", entries)
	}
}

// A link swapped back and forth while the script runs never lets it read or
// write outside the directory.
func TestIOSymlinkSwappedDuringRun(t *testing.T) {
	t.Parallel()
	_, dir, outside := besideOutside(t)
	testfile.Write(t, filepath.Join(outside, "data.txt"), "OUTSIDE")
	testfile.Write(t, filepath.Join(dir, "real", "data.txt"), "inside")

	// The link exists from the start (a rename replaces it atomically), so
	// the script's writes never create a real directory in its place.
	if err := os.Symlink("real", filepath.Join(dir, "swap")); err != nil {
		t.Fatal(err)
	}
	stop, stopped := make(chan struct{}), make(chan struct{})
	var swaps atomic.Int64
	go func() {
		defer close(stopped)
		link := filepath.Join(dir, "swap")
		tmp := filepath.Join(dir, "swap.tmp")
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			target := "real"
			if i%2 == 1 {
				target = outside
			}
			os.Remove(tmp)
			if os.Symlink(target, tmp) == nil && os.Rename(tmp, link) == nil {
				swaps.Add(1)
			}
		}
	}()
	res := runIO(t, dir, `
		local inside, refused = 0, 0
		for i = 1, 1000 do
			local ok, f = pcall(io.open, "swap/data.txt")
			if ok then
				local text = f:read("*a")
				f:close()
				if text ~= "inside" then error("read outside: " .. text) end
				inside = inside + 1
			else
				refused = refused + 1
			end
			pcall(function() io.open("swap/data.txt", "w"):write("inside"):close() end)
		end
		return {inside > 0, refused > 0}`, luau.IO{MaxBytes: 1 << 20}, luau.Limits{Timeout: 60 * time.Second})
	close(stop)
	<-stopped // no link is made after this: the directory can be removed
	if res.Error != nil {
		t.Fatalf("error: %v", res.Error)
	}
	if swaps.Load() < 10 {
		t.Errorf("the link was swapped only %d times", swaps.Load())
	}
	if string(res.Value) != "[true,true]" {
		t.Logf("result %s (inside reads, refusals)", res.Value)
	}
	if got := readFile(t, filepath.Join(outside, "data.txt")); got != "OUTSIDE" {
		t.Errorf("the file outside was changed: %q", got)
	}
}
