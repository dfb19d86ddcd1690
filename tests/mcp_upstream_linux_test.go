//go:build linux

package tests

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toolscript/toolscript/internal/syncbuf"
	"github.com/toolscript/toolscript/internal/testupstreams"
	"github.com/toolscript/toolscript/internal/testwait"
)

// alive reports whether process pid runs (a zombie waiting to be reaped
// by a parent that does not reap it does not count).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	rest := string(b[bytes.LastIndexByte(b, ')')+2:])
	return !strings.HasPrefix(rest, "Z")
}

// exits reports whether the process pid ends within watchdog. Its pidfd
// becomes readable when it exits (a zombie has exited): the wait is an
// event, not a poll of /proc.
func exits(t *testing.T, pid int, watchdog time.Duration) bool {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return true // gone, and reaped already
	}
	if err != nil {
		t.Fatalf("pidfd_open(%d): %v", pid, err)
	}
	defer unix.Close(fd)
	deadline := time.Now().Add(watchdog)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(left.Milliseconds())+1)
		switch {
		case errors.Is(err, unix.EINTR):
		case err != nil:
			t.Fatalf("poll on the pidfd of %d: %v", pid, err)
		case n > 0:
			return true
		}
	}
}

func TestUpstreamStoppedWithServe(t *testing.T) {
	// serve stopped by SIGTERM stops the upstream it started before it
	// exits; killed by SIGKILL, the kernel kills the upstream (no orphans).
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "log")
			cmd := exec.Command(binary, "serve", "--no-io", "--mcp=py="+testupstreams.Shell(testupstreams.Python(t)))
			cmd.Env = append(os.Environ(), "PYSERVER_LOG="+log, "XDG_CACHE_HOME="+t.TempDir())
			stdin, err := cmd.StdinPipe() // kept open: serve waits for requests
			if err != nil {
				t.Fatal(err)
			}
			defer stdin.Close()
			stderr := &syncbuf.Buffer{}
			cmd.Stderr = stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill() // a no-op once serve has exited
			defer func() {
				if t.Failed() {
					t.Logf("serve's stderr: %s", stderr.String())
				}
			}()
			pid := 0
			testwait.Until(t, "serve started its upstream (its pid logged, ready on stderr)", func() bool {
				b, _ := os.ReadFile(log)
				if line, ok := strings.CutPrefix(string(b), "pid "); ok {
					pid, _ = strconv.Atoi(strings.TrimSpace(strings.SplitN(line, "\n", 2)[0]))
				}
				return pid != 0 && strings.Contains(stderr.String(), "ready")
			})
			if !alive(pid) {
				t.Fatalf("the upstream %d is not running", pid)
			}
			cmd.Process.Signal(sig)
			cmd.Wait()
			if !exits(t, pid, time.Minute) {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("the upstream %d outlived serve (%s)", pid, sig)
			}
		})
	}
}

func TestHostedReadinessChecksUpstreams(t *testing.T) {
	// /readyz asks each upstream MCP server for its tools: ready while the
	// server answers, 503 naming it once it is gone, ready again when it
	// is back.
	port := testupstreams.FreePort(t)
	url, kill := testupstreams.PythonHTTP(t, port, false)
	p := startServe(t, t.TempDir(), "--no-io", "--mcp=py="+url)
	if status, body := get(t, p.base+"/readyz"); status != 200 {
		t.Fatalf("/readyz with the server up: %d %s", status, body)
	}
	kill()
	if status, body := get(t, p.base+"/readyz"); status != 503 || !strings.Contains(body, "mcp server py") {
		t.Errorf("/readyz with the server gone: %d %s", status, body)
	}
	testupstreams.PythonHTTP(t, port, false)
	testwait.Until(t, "/readyz 200 after the server came back", func() bool {
		status, _ := get(t, p.base+"/readyz")
		return status == 200
	})
}
