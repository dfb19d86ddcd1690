//go:build unix

package testupstreams

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Control lets a test break, hold and count the starts of a stdio server
// (unix: it runs the server through sh). Each start of Command appends a
// line to the file Starts; while Break() is in effect a start fails at
// once (exit status 1, "broken" on its standard error); between Hold()
// and Release() a start waits, before the server runs, until Release.
type Control struct {
	dir string
	// held is the gate opened for writing by WaitHeld: the start that
	// opened it for reading waits there.
	held *os.File
	// Command is the server's command line wrapped in the control shell.
	Command []string
}

// Controlled wraps the command line argv of a stdio server.
func Controlled(tb testing.TB, argv []string) *Control {
	tb.Helper()
	dir := tb.TempDir()
	script := `echo start >> "$0/starts"
if [ -e "$0/broken" ]; then echo "broken" >&2; exit 1; fi
if [ -p "$0/gate" ]; then read -r _ < "$0/gate"; fi
exec "$@"`
	return &Control{dir: dir, Command: append([]string{"sh", "-c", script, dir}, argv...)}
}

// Starts is how many times the server was started.
func (c *Control) Starts() int {
	b, _ := os.ReadFile(filepath.Join(c.dir, "starts"))
	return strings.Count(string(b), "start\n")
}

// Break makes the next starts fail; Fix undoes it.
func (c *Control) Break(tb testing.TB) {
	tb.Helper()
	if err := os.WriteFile(filepath.Join(c.dir, "broken"), nil, 0o644); err != nil {
		tb.Fatal(err)
	}
}

// Fix lets the next starts run the server again.
func (c *Control) Fix(tb testing.TB) {
	tb.Helper()
	if err := os.Remove(filepath.Join(c.dir, "broken")); err != nil {
		tb.Fatal(err)
	}
}

// Hold makes the next start wait before it runs the server, until
// Release: the gate is a FIFO the start reads a line from.
func (c *Control) Hold(tb testing.TB) {
	tb.Helper()
	if err := syscall.Mkfifo(filepath.Join(c.dir, "gate"), 0o600); err != nil {
		tb.Fatal(err)
	}
}

// Unhold lets the later starts run the server at once, while a start
// held at the gate stays held.
func (c *Control) Unhold(tb testing.TB) {
	tb.Helper()
	if err := os.Remove(filepath.Join(c.dir, "gate")); err != nil {
		tb.Fatal(err)
	}
}

// WaitHeld returns once a start waits at the gate (Hold): opening the
// FIFO for writing blocks until a start has opened it for reading. It
// fails the test if none comes within watchdog.
func (c *Control) WaitHeld(tb testing.TB, watchdog time.Duration) {
	tb.Helper()
	opened := make(chan *os.File, 1)
	failed := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(filepath.Join(c.dir, "gate"), os.O_WRONLY, 0)
		if err != nil {
			failed <- err
			return
		}
		opened <- f
	}()
	timer := time.NewTimer(watchdog)
	defer timer.Stop()
	select {
	case c.held = <-opened:
	case err := <-failed:
		tb.Fatal(err)
	case <-timer.C:
		tb.Fatalf("no start of the server waited at the gate within %s", watchdog)
	}
}

// Release lets the start held at the gate run the server (it blocks until
// a start is waiting there, unless WaitHeld saw one), and removes the gate
// for later starts.
func (c *Control) Release(tb testing.TB) {
	tb.Helper()
	gate := filepath.Join(c.dir, "gate")
	f := c.held
	c.held = nil
	if f == nil {
		var err error
		if f, err = os.OpenFile(gate, os.O_WRONLY, 0); err != nil {
			tb.Fatal(err)
		}
	}
	defer f.Close()
	if err := os.Remove(gate); err != nil {
		tb.Fatal(err)
	}
	if _, err := f.WriteString("go\n"); err != nil {
		tb.Fatal(err)
	}
}
