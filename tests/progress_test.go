package tests

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// progressSteps is Luau that sets the local n and calls progress(i, n,
// "step " .. i) for i from 1 to n, each after the given seconds of work.
func progressSteps(n int, seconds float64) string {
	return fmt.Sprintf(`
local n = %d
for i = 1, n do
	local t = os.clock()
	while os.clock() - t < %g do end
	progress(i, n, "step " .. i)
end
`, n, seconds)
}

// progressScript calls progress 30 times over about 0.6 s, then prints and
// returns.
var progressScript = progressSteps(30, 0.02) + `print("done")
return n`

// runOnTerminal runs `toolscript ARGS` with standard error on a
// pseudo-terminal of 100 columns and standard output on a pipe; it returns
// what each received.
func runOnTerminal(t *testing.T, stdin string, args ...string) (terminal, stdout string, elapsed time.Duration) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 24, Cols: 100}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, args...)
	cmd.Dir = t.TempDir()
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = tty
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	read := make(chan []byte)
	go func() {
		b, err := io.ReadAll(ptmx)
		if err != nil && !errors.Is(err, syscall.EIO) { // EIO: the other side is closed
			t.Errorf("reading the terminal: %v", err)
		}
		read <- b
	}()
	if err := cmd.Wait(); err != nil {
		t.Errorf("toolscript %v: %v", args, err)
	}
	elapsed = time.Since(start)
	return string(<-read), out.String(), elapsed
}

func TestRunProgressBar(t *testing.T) {
	t.Parallel()
	terminal, stdout, elapsed := runOnTerminal(t, progressScript, "run", "-")
	if stdout != "done\n30\n" {
		t.Errorf("standard output %q", stdout)
	}
	for _, want := range []string{"\r[", "/30", "%", "step "} {
		if !strings.Contains(terminal, want) {
			t.Errorf("the terminal lacks %q: %q", want, terminal)
		}
	}
	// Cleared at the end, and no line drawn wider than the terminal.
	if !strings.HasSuffix(terminal, "\r\x1b[K") {
		t.Errorf("the bar was not cleared at the end: %q", terminal)
	}
	for _, line := range strings.Split(terminal, "\r") {
		if len(strings.TrimSuffix(line, "\x1b[K")) >= 100 {
			t.Errorf("a line wider than the terminal: %q", line)
		}
	}
	// At most ten draws a second (a loaded machine only draws less).
	if draws, most := strings.Count(terminal, "\r["), int(elapsed/(100*time.Millisecond))+2; draws > most {
		t.Errorf("%d draws in %s, at most %d allowed", draws, elapsed, most)
	}
}

func TestRunProgressBarOnlyOnATerminal(t *testing.T) {
	t.Parallel()
	// --json keeps its output pure, and draws nothing.
	terminal, stdout, _ := runOnTerminal(t, progressScript, "run", "--json", "-")
	if terminal != "" {
		t.Errorf("--json drew on the terminal: %q", terminal)
	}
	if !strings.HasPrefix(stdout, `{"result":30,"logs":["done"]`) || strings.Count(stdout, "\n") != 1 {
		t.Errorf("--json output %q", stdout)
	}
	// Standard error that is not a terminal gets nothing.
	stdout, stderr, status := toolscript(t, t.TempDir(), progressScript, "run", "-")
	if status != 0 || stdout != "done\n30\n" || stderr != "" {
		t.Errorf("with standard error on a pipe: %d %q %q", status, stdout, stderr)
	}
}
