//go:build unix

package tests

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/host/runtime/result"
)

func TestIOFIFO(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "files")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, mode := range []string{"r", "w", "a", "r+"} {
		// Opening a FIFO with no writer blocks until one comes, perhaps in
		// a system call no deadline interrupts: the watchdog fails the
		// test rather than let it hang.
		done := make(chan *result.Result, 1)
		go func() {
			done <- runIO(t, dir, `io.open("fifo", "`+mode+`")`, luau.IO{MaxBytes: 100}, luau.Limits{Timeout: 10 * time.Second})
		}()
		var res *result.Result
		select {
		case res = <-done:
		case <-time.After(time.Minute):
			t.Fatalf("mode %s: opening a FIFO blocked", mode)
		}
		if res.Error == nil || res.Error.Kind != result.IO || !strings.Contains(res.Error.Message, "io.open: 'fifo':") {
			t.Errorf("mode %s: error = %+v", mode, res.Error)
		}
	}
	res := runIO(t, dir, `os.remove("fifo") return io.list()`, luau.IO{MaxBytes: 100}, luau.Limits{})
	if res.Error != nil || string(res.Value) != "[]" {
		t.Errorf("removing the FIFO: %s %v", res.Value, res.Error)
	}
}
