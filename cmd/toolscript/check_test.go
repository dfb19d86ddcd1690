package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/internal/testfile"
)

// TestRunCheck: run --check refuses a script with a type error before it
// runs (no request reaches the API; exit status 1; each error named by
// the script's file, line and column, one a line), and runs a correct
// script; --json carries the kind type.
func TestRunCheck(t *testing.T) {
	api, config, _ := shopConfig(t)
	planted := testfile.Temp(t, "planted.luau", "local pet = sdk.shop.get_pet({petId = 7})\nreturn pet.nmae\n")
	text := failedRun(t, "", "run", "--config", config, "--check", planted)
	if !strings.Contains(text, "type error: "+planted+":2:") || !strings.Contains(text, "nmae") {
		t.Errorf("run --check of a type error:\n%s", text)
	}
	text = failedRun(t, "", "run", "--config", config, "--check", "--json", planted)
	if !strings.Contains(text, `"kind":"type"`) {
		t.Errorf("run --check --json of a type error:\n%s", text)
	}
	if n := api.Requests.Load(); n != 0 {
		t.Errorf("the API got %d requests from refused scripts", n)
	}
	correct := testfile.Temp(t, "correct.luau", "local pet = sdk.shop.get_pet({petId = 7})\nreturn pet.id\n")
	stdout, stderr, status := toolscriptRun(t, "run", "--config", config, "--check", correct)
	if status != 0 || strings.TrimSpace(stdout) != "7" {
		t.Errorf("run --check of a correct script: status %d, stdout %q, stderr %q", status, stdout, stderr)
	}
	if n := api.Requests.Load(); n != 1 {
		t.Errorf("the API got %d requests, want 1", n)
	}
}

// TestRunWithoutCheckCompilesNoChecker: the type checker costs a run
// nothing unless --check asks for it: a run without it leaves only the
// VM's compiled module in the compilation cache, a run with it the
// checker's too.
func TestRunWithoutCheckCompilesNoChecker(t *testing.T) {
	script := testfile.Temp(t, "hello.luau", "return 1 + 1\n")
	compiled := func(args ...string) int {
		cache := t.TempDir()
		t.Setenv("XDG_CACHE_HOME", cache)
		if stdout, stderr, status := toolscriptRun(t, append([]string{"run"}, args...)...); status != 0 || strings.TrimSpace(stdout) != "2" {
			t.Fatalf("run %v: status %d, stdout %q, stderr %q", args, status, stdout, stderr)
		}
		n := 0
		err := filepath.WalkDir(cache, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				n++
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	without, with := compiled(script), compiled("--check", script)
	if without == 0 || with <= without {
		t.Errorf("compiled modules cached: %d by a run, %d by a run with --check: want the checker's only with --check", without, with)
	}
}
