package tests

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/internal/testruntime"
)

func benchRuntime(b *testing.B) *luau.Runtime {
	return testruntime.New(b, luau.Config{})
}

// timeAgainst runs script on rt, wanting the result want, and then
// reference, the same work done another way, once per iteration of
// b.Loop; it returns the time each took in all.
func timeAgainst(b *testing.B, rt *luau.Runtime, script luau.Script, want string, reference func()) (scriptTime, referenceTime time.Duration) {
	b.Helper()
	for b.Loop() {
		start := time.Now()
		res := rt.Execute(context.Background(), script)
		scriptTime += time.Since(start)
		if res.Error != nil || string(res.Value) != want {
			b.Fatalf("%s %v", res.Value, res.Error)
		}
		start = time.Now()
		reference()
		referenceTime += time.Since(start)
	}
	return scriptTime, referenceTime
}

// BenchmarkIOThroughput writes 50 MiB in 64 KiB chunks and reads it back
// with "*a", in a script and with plain Go os.File, in the same run, and
// reports toolscript's throughput as a percentage of Go's (target ≥ 50).
func BenchmarkIOThroughput(b *testing.B) {
	const total, chunk = 50 << 20, 64 << 10
	dir := b.TempDir()
	script := luau.Script{
		Source: []byte(fmt.Sprintf(`
			local chunk = string.rep("x", %d)
			local f = io.open("data.bin", "wb")
			for i = 1, %d do f:write(chunk) end
			f:close()
			local g = io.open("data.bin", "rb")
			local n = #g:read("*a")
			g:close()
			return n`, chunk, total/chunk)),
		IO:     &luau.IO{Dir: dir, MaxBytes: total},
		Limits: luau.Limits{HeapBytes: 256 << 20},
	}
	rt := testruntime.New(b, luau.Config{MaxMemoryBytes: luau.MaxMemoryFor(256 << 20)})
	goPath := filepath.Join(dir, "go.bin")
	buf := make([]byte, chunk)
	wasmTime, goTime := timeAgainst(b, rt, script, fmt.Sprint(total), func() {
		f, err := os.Create(goPath)
		if err != nil {
			b.Fatal(err)
		}
		for range total / chunk {
			if _, err := f.Write(buf); err != nil {
				b.Fatal(err)
			}
		}
		f.Close()
		data, err := os.ReadFile(goPath)
		if err != nil || len(data) != total {
			b.Fatal(err)
		}
	})
	mb := float64(total) / (1 << 20) * float64(b.N)
	b.ReportMetric(mb/wasmTime.Seconds(), "toolscript-MiB/s")
	b.ReportMetric(mb/goTime.Seconds(), "go-MiB/s")
	b.ReportMetric(100*goTime.Seconds()/wasmTime.Seconds(), "%-of-go")
}

// BenchmarkIOLines iterates a 100 MB, 1-million-line file with io.lines in
// a script and with Debian's lua5.1 on the same file, and reports the ratio
// of their times (target ≤ 2).
func BenchmarkIOLines(b *testing.B) {
	lua, err := exec.LookPath("lua5.1")
	if err != nil {
		b.Skip("lua5.1 is not installed (apt-get install lua5.1)")
	}
	dir := b.TempDir()
	path := filepath.Join(dir, "lines.txt")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	line := strings.Repeat("y", 99)
	for i := range 1_000_000 {
		fmt.Fprintf(w, "%s\n", line[:99-len(fmt.Sprint(i))]+fmt.Sprint(i))
	}
	w.Flush()
	f.Close()

	loop := `local n, bytes = 0, 0 for l in io.lines(%q) do n = n + 1 bytes = bytes + #l end`
	rt := benchRuntime(b)
	script := luau.Script{Source: []byte(fmt.Sprintf(loop, "lines.txt") + " return n"), IO: &luau.IO{Dir: dir, MaxBytes: 1}}
	wasmTime, luaTime := timeAgainst(b, rt, script, "1000000", func() {
		cmd := exec.Command(lua, "-e", fmt.Sprintf(loop, path)+" assert(n == 1000000)")
		cmd.Stderr = io.Discard
		if err := cmd.Run(); err != nil {
			b.Fatalf("lua5.1: %v", err)
		}
	})
	b.ReportMetric(wasmTime.Seconds()*1000/float64(b.N), "toolscript-ms")
	b.ReportMetric(luaTime.Seconds()*1000/float64(b.N), "lua5.1-ms")
	b.ReportMetric(wasmTime.Seconds()/luaTime.Seconds(), "x-lua5.1")
}

// BenchmarkIOGrep searches 200 files of 100 KB (20 MB of log lines, one
// match each) with io.grep in a script and with Go's regexp over the same
// files, in the same run, and reports io.grep's time as a multiple of
// Go's: the cost of the walk through os.Root, the bounds and the copy of
// the matches into the script.
func BenchmarkIOGrep(b *testing.B) {
	const files, lines = 200, 1000
	dir := b.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "logs"), 0o755); err != nil {
		b.Fatal(err)
	}
	for i := range files {
		var text strings.Builder
		for j := range lines {
			level := "INFO"
			if j == i%lines {
				level = "ERROR"
			}
			fmt.Fprintf(&text, "2026-11-27T12:00:%02d %s request %d served in %d ms by worker %d\n", j%60, level, j, j%97, j%13)
		}
		if err := os.WriteFile(filepath.Join(dir, "logs", fmt.Sprintf("app-%03d.log", i)), []byte(text.String()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	const pattern = `ERROR request \d+`
	rt := benchRuntime(b)
	script := luau.Script{Source: []byte(fmt.Sprintf("return #io.grep(%q, \"logs\", {glob = \"*.log\"})", pattern)), IO: &luau.IO{Dir: dir, MaxBytes: 1}}
	re := regexp.MustCompile(pattern)
	wasmTime, goTime := timeAgainst(b, rt, script, fmt.Sprint(files), func() {
		found := 0
		err := filepath.WalkDir(filepath.Join(dir, "logs"), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			scanner := bufio.NewScanner(f)
			for scanner.Scan() {
				if re.Match(scanner.Bytes()) {
					found++
				}
			}
			return scanner.Err()
		})
		if err != nil || found != files {
			b.Fatalf("Go found %d: %v", found, err)
		}
	})
	b.ReportMetric(wasmTime.Seconds()*1000/float64(b.N), "toolscript-ms")
	b.ReportMetric(goTime.Seconds()*1000/float64(b.N), "go-regexp-ms")
	b.ReportMetric(wasmTime.Seconds()/goTime.Seconds(), "x-go")
}
