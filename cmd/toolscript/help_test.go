package main

import (
	"strings"
	"testing"

	"github.com/toolscript/toolscript/internal/testfile"
)

// TestHelpShowsEachDefaultOnce renders every command's help and fails on a
// flag whose line names its default twice ("(default 30s) (default: 0s)"):
// a flag whose zero value means "not given" shows its real default once.
func TestHelpShowsEachDefaultOnce(t *testing.T) {
	for _, command := range []string{"run", "serve", "lint", "sdk", "version"} {
		t.Run(command, func(t *testing.T) {
			stdout, stderr, status := toolscriptRun(t, command, "--help")
			if status != 0 {
				t.Fatalf("status %d: %s", status, stderr)
			}
			for _, line := range strings.Split(stdout, "\n") {
				if n := strings.Count(line, "(default"); n > 1 {
					t.Errorf("a default shown %d times: %s", n, strings.TrimSpace(line))
				}
			}
		})
	}
}

// TestHelpShowsTheRealDefaults: a flag whose value 0 means "not given"
// shows the default that applies, not 0.
func TestHelpShowsTheRealDefaults(t *testing.T) {
	stdout, _, _ := toolscriptRun(t, "run", "--help")
	for _, want := range []string{"(default: 30s)", "(default: 64)", "(default: 50 MiB)", "(default: 100)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("run --help lacks %q:\n%s", want, stdout)
		}
	}
}

// failedRun runs toolscript with args and stdin, wants the status of a
// failed script (1), and returns what it wrote to standard output and
// standard error.
func failedRun(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	stdout, stderr, status := toolscriptRunIn(t, stdin, args...)
	if status != 1 {
		t.Fatalf("status %d, want 1: %s", status, stderr)
	}
	return stdout + stderr
}

// TestRunNamesEverySyntaxError: run reports a script's syntax errors as
// lint does, every one of them, each named by the script's file (or
// standard input's name), with its line and column.
func TestRunNamesEverySyntaxError(t *testing.T) {
	const source = "local x = 1\nlocal y = (\nlocal z = 3 +\nreturn x +\n"
	path := testfile.Temp(t, "script.luau", source)
	tests := []struct {
		name  string
		args  []string
		stdin string
		file  string
	}{
		{"file", []string{"run", path}, "", path},
		{"stdin", []string{"run", "-"}, source, "<stdin>"},
		{"json", []string{"run", "--json", path}, "", path},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := failedRun(t, tt.stdin, tt.args...)
			for _, want := range []string{tt.file + ":3:1: Expected identifier", tt.file + ":4:1: Expected identifier", tt.file + ":5:1: Expected identifier"} {
				if tt.name == "json" {
					want = strings.ReplaceAll(want, "<", `\u003c`)
				}
				if !strings.Contains(text, want) {
					t.Errorf("the output lacks %q:\n%s", want, text)
				}
			}
			if strings.Contains(text, "script:3:") {
				t.Errorf("the output names the script \"script\":\n%s", text)
			}
		})
	}
}

// TestRunNamesTheScriptInErrors: an error of another kind than syntax
// names the script's file (or standard input's name) in its position too;
// a value the script made of an error (pcall's) is the script's own and
// is kept as it is.
func TestRunNamesTheScriptInErrors(t *testing.T) {
	const source = "local ok, e = pcall(function() error('kept') end)\nprint(e)\nerror('boom: ' .. e)\n"
	path := testfile.Temp(t, "script.luau", source)
	tests := []struct {
		name  string
		args  []string
		stdin string
		want  string
	}{
		{"file", []string{"run", path}, "", "error: " + path + ":3: boom: "},
		{"stdin", []string{"run", "-"}, source, "error: <stdin>:3: boom: "},
		{"json", []string{"run", "--json", path}, "", `"message":"` + path + `:3: boom: `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := failedRun(t, tt.stdin, tt.args...)
			if !strings.Contains(text, tt.want) {
				t.Errorf("the output lacks %q:\n%s", tt.want, text)
			}
			if strings.Count(text, "script:1: kept") != 2 { // printed, and in the message
				t.Errorf("pcall's error value changed:\n%s", text)
			}
		})
	}
}

// TestUsageErrorsSuggest: a misspelt flag gets the flag nearest in
// spelling, and a duration given without its unit gets the unit.
func TestUsageErrorsSuggest(t *testing.T) {
	script := testfile.Temp(t, "script.luau", "return 1")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"misspelt run flag", []string{"run", "-jsn", script}, `did you mean --json?`},
		{"misspelt long flag", []string{"run", "--dry-rn", script}, `did you mean --dry-run?`},
		{"misspelt lint flag", []string{"lint", "--strikt", script}, `did you mean --strict?`},
		{"duration without unit", []string{"run", "--timeout", "5", script}, `a duration wants a unit, such as --timeout 5s`},
		{"serve duration without unit", []string{"serve", "--max-timeout=300", script}, `a duration wants a unit, such as --max-timeout 300s`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, status := toolscriptRun(t, tt.args...)
			if status != 2 {
				t.Fatalf("status %d, want 2: %s", status, stderr)
			}
			if !strings.Contains(stderr, tt.want) {
				t.Errorf("standard error lacks %q:\n%s", tt.want, stderr)
			}
		})
	}
}
