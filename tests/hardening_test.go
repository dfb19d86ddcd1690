package tests

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolscript/toolscript/internal/syncbuf"
	"github.com/toolscript/toolscript/internal/testfile"
	"github.com/toolscript/toolscript/internal/testwait"
)

// pathological are scripts whose work once ran in C code that never reached
// the deadline check: the whole process then waited for them at its next
// garbage collection.
var pathological = map[string]string{
	"find":  `local h = string.rep("a", 2^17) for i = 1, 1e9 do string.find(h, string.rep("a", 2^15) .. "b", 1, true) end`,
	"empty": `local t = {} for i = 1, 2^20 do t[i] = i end for i = 1, 2^20 do t[i] = nil end local r = {} for i = 1, 10000 do r[i] = t end return r`,
	"dag":   `local t = {} for i = 1, 40 do t = {t, t} end return json.encode(t)`,
	"sort":  `local t = table.create(2e6, 0) for i = 1, #t do t[i] = (i * 7919) % 2e6 end for i = 1, 1e9 do table.sort(t, rawequal) end`,
}

// While pathological scripts run, serve keeps answering ping and running
// other scripts (counted while they run), and each of them ends with kind
// timeout, stopped by its own time limit; the test context's minute is the
// watchdog for a script that never reaches its deadline check.
func TestServeStaysResponsiveDuringPathologicalScripts(t *testing.T) {
	// 2025-11-25 still has ping (the newest revision leaves liveness to
	// the transport, and mcp-go's Ping then sends nothing).
	c, _ := mcpClient(t, t.TempDir(), "2025-11-25", "--max-concurrent", "8", "--no-io")
	ctx := testwait.Context(t)

	var wg sync.WaitGroup
	for name, src := range pathological {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, out := callScript(t, ctx, c, map[string]any{"script": src, "timeout_ms": 1500})
			if !res.IsError || out.Error == nil || out.Error.Kind != "timeout" || !strings.Contains(out.Error.Message, "time limit of 1.5s") {
				t.Errorf("%s: error %+v, want kind timeout at the time limit of 1.5s", name, out.Error)
			}
		}()
	}

	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	pings, scripts := 0, 0
	for {
		select {
		case <-done:
			if pings < 5 || scripts < 5 {
				t.Errorf("only %d pings and %d scripts answered while the pathological ones ran", pings, scripts)
			}
			t.Logf("%d pings and %d scripts answered", pings, scripts)
			return
		case <-time.After(50 * time.Millisecond):
		}
		//lint:ignore SA1019 a real ping under 2025-11-25
		if err := c.Ping(ctx); err != nil {
			t.Fatalf("ping: %v", err)
		}
		pings++
		res, _ := callScript(t, ctx, c, map[string]any{"script": "return 1"})
		if res.IsError {
			t.Fatalf("return 1 failed: %v", textsOf(res))
		}
		scripts++
	}
}

// One SIGINT or SIGTERM stops the script `toolscript run` runs. (After it,
// the signal's default action is back, so that a second one ends the
// process whatever the guest is doing; with every loop of the module
// reaching the deadline check, no script is left to show it.)
func TestRunSignalStopsTheScript(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			script := filepath.Join(dir, "loop.luau")
			testfile.Write(t, script, `print("started") while true do end`)
			cmd := exec.Command(binary, "run", "--timeout", "1m", script)
			stdout := &syncbuf.Buffer{}
			var stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			testwait.Until(t, "the script started", func() bool { return strings.Contains(stdout.String(), "started") })
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-exited:
				// One signal stops the script: status 1, the error says so.
				if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "cancelled") {
					t.Errorf("after one %s: %v, stderr %q", sig, err, stderr.String())
				}
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("toolscript run did not stop on %s", sig)
			}
		})
	}
}
