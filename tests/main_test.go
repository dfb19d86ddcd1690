package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/toolscript/toolscript/host/runtime/result"
	"github.com/toolscript/toolscript/internal/testconfig"
	"github.com/toolscript/toolscript/internal/testfile"
)

// binary is the toolscript binary the end-to-end tests run, built once.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "toolscript-tests")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "toolscript")
	// The version is set, so that no output the tests compare depends on
	// how or where the binary was built (in a git clone, Go would stamp
	// the commit's pseudo-version into it).
	build := exec.Command("go", "build", "-ldflags", "-X main.version=dev", "-o", binary, "../cmd/toolscript")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building toolscript:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// toolscript runs the binary in dir with stdin and returns its standard
// output, standard error and exit status.
func toolscript(t *testing.T, dir, stdin string, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	return toolscriptIn(t, dir, stdin, nil, args...)
}

// toolscriptEnv is toolscript with variables added to the environment.
func toolscriptEnv(t *testing.T, dir string, env []string, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	return toolscriptIn(t, dir, "", env, args...)
}

// runJSON runs source with `toolscript run --json` and the flags in
// extra (and --no-io, unless they give --io-dir), in a directory holding
// config (when not empty) as toolscript.toml, with env added to the
// environment; it returns the one result standard output holds, and what
// the command wrote.
func runJSON(t *testing.T, source, config string, env []string, extra ...string) (res *result.Result, stdout, stderr string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "script.luau")
	testfile.Write(t, path, source)
	if config != "" {
		testconfig.Write(t, dir, config)
	}
	args := []string{"run", "--json"}
	if !slices.Contains(extra, "--io-dir") {
		args = append(args, "--no-io")
	}
	args = append(append(args, extra...), path)
	stdout, stderr, _ = toolscriptEnv(t, dir, env, args...)
	res = &result.Result{}
	if err := json.Unmarshal([]byte(stdout), res); err != nil {
		t.Fatalf("output is not one result: %v\nstdout %q\nstderr %q", err, stdout, stderr)
	}
	return res, stdout, stderr
}

func toolscriptIn(t *testing.T, dir, stdin string, env []string, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Stdin = bytes.NewBufferString(stdin)
	cmd.Env = append(append(os.Environ(), "TOOLSCRIPT_IO_DIR="), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if exitErr, ok := err.(*exec.ExitError); ok {
		return out.String(), errOut.String(), exitErr.ExitCode()
	} else if err != nil {
		t.Fatalf("running toolscript: %v", err)
	}
	return out.String(), errOut.String(), 0
}
