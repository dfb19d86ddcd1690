package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"

	"github.com/toolscript/toolscript/internal/testclient"
	"github.com/toolscript/toolscript/internal/testfile"
	"github.com/toolscript/toolscript/internal/testwait"
)

// The io directory as MCP clients meet it: started in a working directory
// that cannot hold it, or given a path that is a file, or "~/...".

func TestRunIODirIsAFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	testfile.Write(t, filepath.Join(dir, "afile"), "x")
	want := `the io directory "afile" (` + filepath.Join(dir, "afile") + `) is not a directory (set --io-dir or TOOLSCRIPT_IO_DIR to an absolute path)`
	// A script without io runs; the problem is reported at start-up.
	stdout, stderr, status := toolscript(t, dir, "return 1", "run", "--io-dir", "afile", "-")
	if status != 0 || stdout != "1\n" || stderr != "toolscript: warning: "+want+"\n" {
		t.Errorf("no io: %d %q %q", status, stdout, stderr)
	}
	// io.list() says what is wrong instead of listing [].
	_, stderr, status = toolscript(t, dir, "return io.list()", "run", "--io-dir", "afile", "-")
	if status != 1 || !strings.Contains(stderr, "io error: <stdin>:1: io.list: '.': "+want) {
		t.Errorf("io.list: %d %q", status, stderr)
	}
}

// TestRunIODirCannotBeCreated is what Claude Desktop does: start the
// command in a working directory the user cannot write (/), so the default
// ./toolscript-files cannot be created. Root writes anywhere, so as root
// the binary runs as nobody (setpriv).
func TestRunIODirCannotBeCreated(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	work := filepath.Join(base, "work")
	if err := os.Mkdir(work, 0o555); err != nil {
		t.Fatal(err)
	}
	bin := binary
	var asUser []string
	if os.Geteuid() == 0 {
		setpriv, err := exec.LookPath("setpriv")
		if err != nil {
			t.Skip("running as root without setpriv: every directory is writable")
		}
		asUser = []string{setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"}
		// nobody must reach the binary and the directory.
		for _, d := range []string{filepath.Dir(base), base} {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		bin = filepath.Join(base, "toolscript")
		data, err := os.ReadFile(binary)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The compiled-module cache is the user's own, so that the only
	// warning is the io directory's.
	cache := filepath.Join(base, "cache")
	if err := os.Mkdir(cache, 0o700); err != nil {
		t.Fatal(err)
	}
	if asUser != nil {
		if err := os.Chown(cache, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	args := append(asUser, bin, "run", "-")
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "TOOLSCRIPT_IO_DIR=", "XDG_CACHE_HOME="+cache)
	cmd.Stdin = strings.NewReader(`io.open("x.txt", "w"):close()`)
	out, err := cmd.CombinedOutput()
	want := `the io directory "./toolscript-files" (` + filepath.Join(work, "toolscript-files") + `) cannot be created: ` + work + `: permission denied (set --io-dir or TOOLSCRIPT_IO_DIR to an absolute path)`
	if exitErr, ok := err.(*exec.ExitError); !ok || exitErr.ExitCode() != 1 ||
		string(out) != "toolscript: warning: "+want+"\nio error: <stdin>:1: io.open: 'x.txt': "+want+"\n" {
		t.Errorf("%v:\n%s\nwant the message %q", err, out, want)
	}
}

// TestServeIODir starts `toolscript serve` with --io-dir naming a file: the
// server warns, keeps serving, and io errors say what is wrong. Then with
// "~/files", which a client passes without a shell to expand it.
func TestServeIODir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	testfile.Write(t, filepath.Join(dir, "afile"), "")
	r := startRaw(t, dir, "--io-dir", filepath.Join(dir, "afile"))
	r.initialize("2025-11-25")
	r.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_script","arguments":{"script":"return io.list()"}}}`)
	m := r.recv()
	want := "the io directory " + filepath.Join(dir, "afile") + " is not a directory (set --io-dir or TOOLSCRIPT_IO_DIR to an absolute path)"
	sc := m["result"].(map[string]any)["structuredContent"].(map[string]any)
	if e, _ := sc["error"].(map[string]any); e == nil || e["kind"] != "io" || e["message"] != "script:1: io.list: '.': "+want {
		t.Errorf("io.list: %v", sc)
	}
	r.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute_script","arguments":{"script":"return 2"}}}`)
	if m := r.recv(); m["result"].(map[string]any)["structuredContent"].(map[string]any)["result"] != 2.0 {
		t.Errorf("after the io error: %v", m)
	}
	if !strings.Contains(r.stderr.String(), "toolscript: warning: "+want+"\n") {
		t.Errorf("stderr %q", r.stderr.String())
	}

	home := t.TempDir()
	c := client.NewClient(newStdioServe(t, dir, []string{"HOME=" + home}, "--io-dir", "~/files").transport)
	if _, err := testclient.Start(t, c, "2025-11-25"); err != nil {
		t.Fatal(err)
	}
	defer c.Close() // the server ends here, not with the test
	ctx := testwait.Context(t)
	_, out := callScript(t, ctx, c, map[string]any{"script": `io.open("x.txt", "w"):write("home"):close()`})
	if out.Error != nil {
		t.Fatalf("%+v", out.Error)
	}
	if b, err := os.ReadFile(filepath.Join(home, "files", "x.txt")); err != nil || string(b) != "home" {
		t.Errorf("~/files/x.txt: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "~")); err == nil {
		t.Error("a directory named ~ was created")
	}
}
