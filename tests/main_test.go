package tests

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
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
