package main

import (
	"strings"
	"testing"
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
