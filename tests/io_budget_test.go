//go:build unix

package tests

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/host/runtime/result"
	"github.com/toolscript/toolscript/host/runtime/sandboxio"
	"github.com/toolscript/toolscript/internal/testfile"
)

// What a script makes on disk counts against its budgets, whatever the
// shape: holes, files and directories, depth, path
// length.
func TestIOBudgetsCountWhatIsMadeOnDisk(t *testing.T) {
	t.Parallel()
	deep := strings.Repeat("d/", sandboxio.MaxPathDepth) + "x"
	cases := []ioCase{
		{
			name:    "a hole past the end of the file",
			source:  `local f = io.open("big.bin", "w") f:seek("set", 2^43) f:write("x") f:close()`,
			kind:    result.Limit,
			message: "past the end of the file",
			touched: "big.bin:write:0",
		},
		{
			name:    "a hole within the budget",
			source:  `local f = io.open("h.bin", "w") f:write("ab") f:seek("set", 90) f:write("xyz") f:close() return io.open("h.bin"):seek("end")`,
			result:  "93",
			touched: "h.bin:write:93",
		},
		{
			name:    "holes add up",
			source:  `local f = io.open("h.bin", "w") f:seek("set", 60) f:write("x") f:seek("set", 100) f:write("y") f:close()`,
			kind:    result.Limit,
			message: "would bring the total to 101 bytes",
			touched: "h.bin:write:61",
		},
		{
			name:    "appending after a seek leaves no hole",
			source:  `local f = io.open("a.txt", "a") f:write("abc") f:seek("set", 90) f:write("d") f:close() return io.open("a.txt"):read("*a")`,
			result:  `"abcd"`,
			touched: "a.txt:append:4",
		},
		{
			name:    "files and directories created",
			source:  `for i = 1, 6 do io.open("f" .. i, "w"):close() end`,
			kind:    result.Limit,
			message: "too many files and directories created (at most 5 per execution)",
		},
		{
			name:    "parent directories count",
			source:  `io.open("a/b/c/d/e/f", "w"):close()`,
			kind:    result.Limit,
			message: "too many files and directories created",
			touched: "-",
		},
		{
			name:   "rewriting a file creates nothing",
			source: `for i = 1, 50 do io.open("same", "w"):write(i):close() end return io.open("same"):read("*a")`,
			result: `"50"`,
		},
		{
			name:    "a deep path is refused before anything is created",
			source:  `io.open(string.rep("d/", 100000) .. "x", "w"):close()`,
			kind:    result.IO,
			message: "path is too long (200001 bytes; at most 4096)",
			touched: "-",
		},
		{
			name:    "too many levels",
			source:  `io.open("` + deep + `", "w")`,
			kind:    result.IO,
			message: "path is too deep (65 levels; at most 64)",
		},
		{
			name:    "too long a name",
			source:  `io.open(string.rep("n", 256), "w")`,
			kind:    result.IO,
			message: "a name in the path is too long (256 bytes; at most 255)",
		},
		{
			name:    "through a regular file",
			setup:   func(t *testing.T, dir string) { testfile.Write(t, filepath.Join(dir, "file"), "x") },
			source:  `io.open("file/x", "w")`,
			kind:    result.IO,
			message: "io.open: 'file/x': not a directory: 'file' is a file",
		},
		{
			name:    "reading through a regular file",
			setup:   func(t *testing.T, dir string) { testfile.Write(t, filepath.Join(dir, "file"), "x") },
			source:  `io.open("file/x")`,
			kind:    result.IO,
			message: "not a directory",
		},
		{
			name:    "a trailing slash names a directory",
			setup:   func(t *testing.T, dir string) { testfile.Write(t, filepath.Join(dir, "x.txt"), "x") },
			source:  `io.open("x.txt/")`,
			kind:    result.IO,
			message: "io.open: 'x.txt/': not a directory",
		},
		{
			name:    "a trailing slash to write",
			source:  `io.open("new.txt/", "w")`,
			kind:    result.IO,
			message: "is a directory",
			touched: "-",
		},
		{
			name:    "removing with a trailing slash",
			setup:   func(t *testing.T, dir string) { testfile.Write(t, filepath.Join(dir, "x.txt"), "x") },
			source:  `os.remove("x.txt/")`,
			kind:    result.IO,
			message: "not a directory",
		},
		{
			name:    "seek to NaN",
			source:  `local f = io.open("s.txt", "w") f:write("abc") return f:seek("set", 0/0)`,
			kind:    result.Runtime,
			message: "offset must be an integer",
		},
		{
			name:    "seek to a fraction",
			source:  `local f = io.open("s.txt", "w") f:write("abc") return f:seek("set", 1.5)`,
			kind:    result.Runtime,
			message: "offset must be an integer",
		},
		{
			name:    "seek to infinity",
			source:  `local f = io.open("s.txt", "w") return f:seek("cur", math.huge)`,
			kind:    result.Runtime,
			message: "offset must be an integer",
		},
	}
	runIOCases(t, cases, luau.IO{MaxBytes: 100, MaxFiles: 5})
	if _, err := os.Stat(filepath.Join(t.TempDir(), "d")); err == nil {
		t.Error("directories were created")
	}
}

// A path of 48 MB is refused at once, without copying or splitting it.
func TestIOHugePathCostsNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "files")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	res := runIO(t, dir, `
		local p = string.rep("a/", 24 * 2^20)
		local n = 0
		for i = 1, 20 do if not pcall(io.open, p) then n += 1 end end
		if not pcall(io.list, p) then n += 1 end
		if not pcall(os.remove, p) then n += 1 end
		local ok, err = pcall(io.open, p, "w")
		return {n, err}`, luau.IO{MaxBytes: 1}, luau.Limits{Timeout: 10 * time.Second})
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	if res.Error != nil {
		t.Fatal(res.Error)
	}
	if want := `[22,"io.open: 'a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/...': path is too long (50331648 bytes; at most 4096)"]`; string(res.Value) != want {
		t.Errorf("result = %s\nwant     %s", res.Value, want)
	}
	if allocated := after.TotalAlloc - before.TotalAlloc; allocated > 8<<20 {
		t.Errorf("the Go heap allocated %d MiB for 23 calls naming the path", allocated>>20)
	}
	t.Logf("23 calls with a 48 MiB path: %s", took)
}

// files_touched is capped, with a count of what was left out, and the whole
// result is bounded by one size.
func TestIOResultIsBounded(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "files")
	res := runIO(t, dir, `
		local p = table.concat(table.create(15, string.rep("p", 250)), "/")
		for i = 1, 1500 do io.open(p .. "/" .. i, "w"):close() end
		for i = 1, 3000 do print(string.rep("l", 100)) end
		return 1`, luau.IO{MaxBytes: 1, MaxFiles: 2000}, luau.Limits{MaxOutputBytes: 256 << 10, Timeout: 30 * time.Second})
	if res.Error != nil {
		t.Fatal(res.Error)
	}
	size := len(res.JSON())
	if size > 256<<10 {
		t.Errorf("the result is %d bytes, over its bound of %d", size, 256<<10)
	}
	if res.FilesOmitted != 1500-len(res.FilesTouched) || len(res.FilesTouched) > sandboxio.MaxTouchedReported {
		t.Errorf("%d files reported, %d omitted; want 1500 in all", len(res.FilesTouched), res.FilesOmitted)
	}
	if last := res.Logs[len(res.Logs)-1]; !strings.Contains(last, "dropped to keep the result within 262144 bytes") {
		t.Errorf("last log line: %q", last)
	}
	if !strings.Contains(string(res.JSON()), `"files_touched_omitted":`) {
		t.Error("the JSON does not count the files left out")
	}
}
