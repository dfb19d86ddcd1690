package luau_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/contract/effects/trace"
	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/host/runtime/result"
)

// recordRun runs source recorded, in an io directory dir, and returns
// the result and the trace.
func recordRun(t *testing.T, source, dir string) (*result.Result, []byte) {
	t.Helper()
	var buf bytes.Buffer
	w, err := trace.NewWriter(&buf, trace.Header{Toolscript: "test"})
	if err != nil {
		t.Fatal(err)
	}
	res := shared.Get(t).Execute(context.Background(), luau.Script{Source: []byte(source),
		IO: &luau.IO{Dir: dir}, Effects: effects.NewRecording(w)})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return res, buf.Bytes()
}

// replayRun replays tr with source, in an io directory dir.
func replayRun(t *testing.T, source, dir string, tr []byte) *result.Result {
	t.Helper()
	r, _, err := trace.NewReader(bytes.NewReader(tr), 0)
	if err != nil {
		t.Fatal(err)
	}
	return shared.Get(t).Execute(context.Background(), luau.Script{Source: []byte(source),
		IO: &luau.IO{Dir: dir}, Effects: effects.NewReplay(r)})
}

// TestRecordReplayClocksSeedAndIO: os.time, os.date, os.clock, math.random
// and io (reads, listings, writes, removes, failures) recorded, then
// replayed with the io directory gone, give the same result byte for
// byte; what the replay writes reaches nothing.
func TestRecordReplayClocksSeedAndIO(t *testing.T) {
	const source = `
		local t0 = os.clock()
		local f = io.open("in.txt")
		local text = f:read("a")
		f:close()
		local out = io.open("out/o.txt", "w")
		out:write(text:upper(), "\n", tostring(math.random(1, 1000000)))
		out:close()
		os.remove("gone.txt")
		local ok, err = pcall(io.open, "missing.txt")
		local names = io.list(".")
		table.sort(names)
		local bin = io.open("bin.dat", "rb"):read("a")
		return {time = os.time(), date = os.date("!%Y-%m-%dT%H:%M:%S"), clock = os.clock() - t0,
			random = math.random(), text = text, names = names, missing = tostring(ok) .. tostring(err),
			bin = #bin .. ":" .. string.byte(bin, 3)}
	`
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "in.txt"), []byte("hello io"), 0o644)
	os.WriteFile(filepath.Join(dir, "gone.txt"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, "bin.dat"), []byte{0, 0xff, 0x80, 10, 13}, 0o644)
	recorded, tr := recordRun(t, source, dir)
	if recorded.Error != nil {
		t.Fatalf("recording: %v", recorded.Error)
	}
	for _, want := range []string{`"op":"seed"`, `"clock":"wall"`, `"clock":"mono"`, `"op":"open"`, `"base64"`, `"op":"end"`} {
		if !bytes.Contains(tr, []byte(want)) {
			t.Errorf("the trace has no %s:\n%s", want, tr)
		}
	}

	// The io directory is gone: the replay needs none of it.
	gone := filepath.Join(t.TempDir(), "gone")
	for i := range 2 { // two replays: from a pooled instance too
		replayed := replayRun(t, source, gone, tr)
		if got, want := replayed.JSON(), recorded.JSON(); !bytes.Equal(got, want) {
			t.Fatalf("replay %d:\n%s\nrecording:\n%s", i, got, want)
		}
	}
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Errorf("the replay created the io directory: %v", err)
	}

	// A real run again differs (another seed, another clock): the replay's
	// equality is not chance.
	again, _ := recordRun(t, source, dir)
	if bytes.Equal(again.JSON(), recorded.JSON()) {
		t.Errorf("two real runs gave the same result: %s", again.JSON())
	}
}

// TestReplayDivergesOnIO: a script that reads another path, writes other
// bytes or ends early stops with kind replay naming the trace's line.
func TestReplayDivergesOnIO(t *testing.T) {
	const source = `
		local f = io.open("in.txt")
		local text = f:read("a")
		f:close()
		local out = io.open("o.txt", "w")
		out:write(text)
		out:close()
		return text
	`
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "in.txt"), []byte("hello"), 0o644)
	os.WriteFile(filepath.Join(dir, "other.txt"), []byte("hello"), 0o644)
	recorded, tr := recordRun(t, source, dir)
	if recorded.Error != nil {
		t.Fatal(recorded.Error)
	}
	cases := []struct {
		name, source, want string
	}{
		{"another path", strings.Replace(source, `"in.txt"`, `"other.txt"`, 1),
			`line 3: expected io.open("in.txt", "r"), got io.open("other.txt", "r")`},
		{"other bytes", strings.Replace(source, `out:write(text)`, `out:write(text .. "!")`, 1),
			"expected a write of 5 bytes"},
		{"an early end", strings.Replace(source, `local out`, `do return text end local out`, 1),
			"expected io.open(\"o.txt\", \"w\"), got the end of the script"},
		{"caught by pcall", strings.Replace(source, `local f = io.open("in.txt")`, `pcall(io.open, "other.txt") print("ran on") local f = io.open("in.txt")`, 1),
			`expected io.open("in.txt", "r"), got io.open("other.txt", "r")`},
		{"more than the trace", strings.Replace(source, `return text`, `io.open("in.txt") return text`, 1),
			"expected the end of the script, got io.open(\"in.txt\", \"r\")"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := replayRun(t, c.source, dir, tr)
			if res.Error == nil || res.Error.Kind != result.Replay || !strings.Contains(res.Error.Message, c.want) {
				t.Fatalf("result %s, want kind replay with %q", res.JSON(), c.want)
			}
			if len(res.Logs) > 0 {
				t.Errorf("the script ran on after its divergence: %q", res.Logs)
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "o.txt")); string(b) != "hello" {
		t.Errorf("a replay wrote the real file: %q", b)
	}
}

// TestReplayOfABrokenTrace: a trace cut short is an error of kind replay
// naming its line, not a crash.
func TestReplayOfABrokenTrace(t *testing.T) {
	const source = `local f = io.open("in.txt") local a = f:read("a") f:close() return a .. os.time()`
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "in.txt"), []byte("hello"), 0o644)
	_, tr := recordRun(t, source, dir)
	lines := bytes.SplitAfter(tr, []byte("\n"))
	cut := bytes.Join(lines[:3], nil)
	cut = append(cut, lines[3][:len(lines[3])/2]...)
	res := replayRun(t, source, dir, cut)
	if res.Error == nil || res.Error.Kind != result.Replay || !strings.Contains(res.Error.Message, "line 4: the line has no end") {
		t.Fatalf("result %s", res.JSON())
	}
}
