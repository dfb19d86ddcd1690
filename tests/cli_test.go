package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/internal/testconfig"
	"github.com/toolscript/toolscript/internal/testfile"
)

func TestRun(t *testing.T) {
	t.Parallel()
	type files map[string]string
	cases := []struct {
		name       string
		files      files
		stdin      string
		args       []string
		wantStatus int
		wantOut    string // exact standard output
		wantErr    string // fragment of standard error
	}{
		{name: "result after logs", files: files{"s.luau": `print("one") print("two", 3) return {ok = true}`},
			args: []string{"run", "s.luau"}, wantOut: "one\ntwo\t3\n{\"ok\":true}\n"},
		{name: "nil result prints nothing", files: files{"s.luau": `print("only")`},
			args: []string{"run", "s.luau"}, wantOut: "only\n"},
		{name: "script arguments", files: files{"s.luau": `return {...}`},
			args: []string{"run", "s.luau", "a", "--flag", "-x"}, wantOut: "[\"a\",\"--flag\",\"-x\"]\n"},
		{name: "standard input", stdin: `return 40 + 2`, args: []string{"run", "-"}, wantOut: "42\n"},
		{name: "runtime error", files: files{"s.luau": "print('before')\nerror('boom')"},
			args: []string{"run", "s.luau"}, wantStatus: 1, wantOut: "before\n", wantErr: "error: s.luau:2: boom"},
		{name: "syntax error", files: files{"s.luau": "local = 1"},
			args: []string{"run", "s.luau"}, wantStatus: 1, wantErr: "syntax error: s.luau:1:"},
		{name: "timeout flag", files: files{"s.luau": "while true do end"},
			args: []string{"run", "--timeout", "200ms", "s.luau"}, wantStatus: 1, wantErr: "timeout error: script exceeded the time limit of 200ms"},
		{name: "memory limit flag", files: files{"s.luau": "local t = {} for i = 1, 1e9 do t[i] = i end"},
			args: []string{"run", "--memory-limit", "16", "s.luau"}, wantStatus: 1, wantErr: "memory error: not enough memory"},
		{name: "timeout from config", files: files{"s.luau": "while true do end", "toolscript.toml": "[limits]\ntimeout = \"150ms\"\n"},
			args: []string{"run", "s.luau"}, wantStatus: 1, wantErr: "time limit of 150ms"},
		{name: "explicit config", files: files{"s.luau": "while true do end", "other.toml": "[limits]\ntimeout = \"120ms\"\n"},
			args: []string{"run", "--config", "other.toml", "s.luau"}, wantStatus: 1, wantErr: "time limit of 120ms"},
		{name: "missing script", args: []string{"run", "nope.luau"}, wantStatus: 2, wantErr: "nope.luau"},
		{name: "no script", args: []string{"run"}, wantStatus: 2, wantErr: "needs a script"},
		{name: "bad flag", args: []string{"run", "--bogus", "s.luau"}, wantStatus: 2, wantErr: "bogus"},
		{name: "bad flag value", args: []string{"run", "--timeout", "soon", "s.luau"}, wantStatus: 2, wantErr: "timeout"},
		{name: "unknown command", args: []string{"frobnicate"}, wantStatus: 2},
		{name: "unknown config key", files: files{"s.luau": "return 1", "toolscript.toml": "[limits]\ntimeot = \"1s\"\n"},
			args: []string{"run", "s.luau"}, wantStatus: 2, wantErr: "unknown key limits.timeot"},
		{name: "invalid config", files: files{"s.luau": "return 1", "toolscript.toml": "[io]\ndir = \"../up\"\n"},
			args: []string{"run", "s.luau"}, wantStatus: 2, wantErr: "io.dir"},
		{name: "deprecated output section warns", files: files{"s.luau": "return 1", "toolscript.toml": "[output]\ndir = \"out\"\n"},
			args: []string{"run", "s.luau"}, wantOut: "1\n", wantErr: "warning: config: [output] is deprecated; use [io]"},
		{name: "version", args: []string{"version"}, wantErr: ""},
		{name: "log cap note in the singular", files: files{"s.luau": `print("a") print("b")`, "toolscript.toml": "[limits]\nmax_log_lines = 1\nmax_log_bytes = 1\n"},
			args: []string{"run", "s.luau"}, wantOut: "a\n[toolscript: 1 more log line (1 byte) dropped: logs are capped at 1 line and 1 byte]\n"},
		{name: "log cap note in the plural", files: files{"s.luau": `print("a") print("bc") print("d")`, "toolscript.toml": "[limits]\nmax_log_lines = 1\n"},
			args: []string{"run", "s.luau"}, wantOut: "a\n[toolscript: 2 more log lines (3 bytes) dropped: logs are capped at 1 line and 1048576 bytes]\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			testfile.Tree(t, dir, c.files)
			stdout, stderr, status := toolscript(t, dir, c.stdin, c.args...)
			if status != c.wantStatus {
				t.Errorf("status = %d, want %d (stderr %q)", status, c.wantStatus, stderr)
			}
			if c.wantOut != "" && stdout != c.wantOut {
				t.Errorf("stdout = %q, want %q", stdout, c.wantOut)
			}
			if !strings.Contains(stderr, c.wantErr) {
				t.Errorf("stderr = %q, want it to contain %q", stderr, c.wantErr)
			}
		})
	}
}

func TestRunJSON(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cases := []struct {
		script     string
		wantStatus int
		check      func(map[string]any) bool
	}{
		{`print("a") return {n = 1}`, 0, func(r map[string]any) bool {
			return r["result"].(map[string]any)["n"].(float64) == 1 && r["logs"].([]any)[0] == "a" && r["error"] == nil
		}},
		{"print('started')\n\nerror('boom')", 1, func(r map[string]any) bool {
			e := r["error"].(map[string]any)
			return r["result"] == nil && r["logs"].([]any)[0] == "started" && e["kind"] == "runtime" &&
				e["message"] == "<stdin>:3: boom" && e["line"].(float64) == 3 && r["files_touched"] != nil
		}},
		{"while true do end", 1, func(r map[string]any) bool { return r["error"].(map[string]any)["kind"] == "timeout" }},
		{"return", 0, func(r map[string]any) bool { v, ok := r["result"]; return ok && v == nil }},
	}
	for _, c := range cases {
		stdout, stderr, status := toolscript(t, dir, c.script, "run", "--json", "--timeout", "300ms", "-")
		if status != c.wantStatus {
			t.Errorf("%q: status %d, want %d", c.script, status, c.wantStatus)
		}
		if stderr != "" {
			t.Errorf("%q: stderr %q, want nothing", c.script, stderr)
		}
		// Exactly one JSON value and nothing else on standard output.
		dec := json.NewDecoder(strings.NewReader(stdout))
		var r map[string]any
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("%q: stdout %q: %v", c.script, stdout, err)
		}
		if dec.More() || strings.Count(stdout, "\n") != 1 {
			t.Errorf("%q: stdout holds more than one JSON value: %q", c.script, stdout)
		}
		if !c.check(r) {
			t.Errorf("%q: unexpected result %s", c.script, stdout)
		}
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	stdout, _, status := toolscript(t, t.TempDir(), "", "version")
	if status != 0 || !strings.Contains(stdout, "toolscript ") || !strings.Contains(stdout, "luau 0.745") || !strings.Contains(stdout, "wazero v1.") {
		t.Errorf("version: %d %q", status, stdout)
	}
}

func TestHelloExample(t *testing.T) {
	t.Parallel()
	stdout, stderr, status := toolscript(t, "..", "", "run", "--json", "examples/hello.luau", "tests")
	if status != 0 {
		t.Fatalf("status %d: %s", status, stderr)
	}
	var r struct {
		Result struct {
			Greeting string `json:"greeting"`
			Words    int    `json:"words"`
		} `json:"result"`
		Logs []string `json:"logs"`
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	if r.Result.Greeting != "hello, tests" || r.Result.Words != 9 || r.Logs[0] != "hello, tests" {
		t.Errorf("hello.luau gave %s", stdout)
	}
}

func TestRunIO(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := `io.open("out/r.csv", "w"):write("a,b\n"):close() return io.list("out")`
	// Default directory ./toolscript-files, created on first write.
	stdout, stderr, status := toolscript(t, dir, script, "run", "--json", "-")
	if status != 0 || !strings.Contains(stdout, `"files_touched":[{"name":"out/r.csv","op":"write","bytes":4}]`) {
		t.Fatalf("default io: %d %s %s", status, stdout, stderr)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "toolscript-files", "out", "r.csv")); err != nil || string(data) != "a,b\n" {
		t.Errorf("file: %q %v", data, err)
	}
	// --io-dir, relative to the working directory.
	if _, _, status := toolscript(t, dir, script, "run", "--io-dir", "elsewhere", "-"); status != 0 {
		t.Fatalf("--io-dir: status %d", status)
	}
	if _, err := os.Stat(filepath.Join(dir, "elsewhere", "out", "r.csv")); err != nil {
		t.Error(err)
	}
	// An empty file has "bytes": 0; a removed one no size.
	stdout, stderr, status = toolscript(t, dir, `io.open("e.txt", "w"):close() io.open("x.txt", "w"):close() os.remove("x.txt")`, "run", "--json", "-")
	if status != 0 || !strings.Contains(stdout, `"files_touched":[{"name":"e.txt","op":"write","bytes":0},{"name":"x.txt","op":"remove"}]`) {
		t.Errorf("empty and removed files: %d %s %s", status, stdout, stderr)
	}
	// --no-io.
	stdout, _, _ = toolscript(t, dir, `return io == nil`, "run", "--no-io", "-")
	if stdout != "true\n" {
		t.Errorf("--no-io: %q", stdout)
	}
	// --max-bytes.
	_, stderr, status = toolscript(t, dir, `io.open("big", "w"):write(string.rep("x", 100))`, "run", "--max-bytes", "10", "-")
	if status != 1 || !strings.Contains(stderr, "limit error: ") || !strings.Contains(stderr, "write budget exceeded") {
		t.Errorf("--max-bytes: %d %q", status, stderr)
	}
	// [io] in the config file.
	testconfig.Write(t, dir, "[io]\ndir = \"cfgdir\"\n")
	if _, _, status := toolscript(t, dir, script, "run", "-"); status != 0 {
		t.Fatalf("[io] dir: status %d", status)
	}
	if _, err := os.Stat(filepath.Join(dir, "cfgdir", "out", "r.csv")); err != nil {
		t.Error(err)
	}
}
