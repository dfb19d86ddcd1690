//go:build unix

package upstream

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/luau"
	"github.com/toolscript/toolscript/internal/syncbuf"
	"github.com/toolscript/toolscript/internal/testupstreams"
)

// allocated is how many bytes the Go heap has allocated so far, in all.
func allocated() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

func TestMessageCap(t *testing.T) {
	// A tool result of 64 MiB with max_response_bytes 64 KiB: the call
	// fails clearly, and the Go heap never holds the message (the bytes
	// allocated during the call stay far below its size). Over stdio the
	// calls in flight fail alike and the server is restarted on the next
	// call; over HTTP only that response is cut off.
	const (
		maxResponse = 64 << 10
		huge        = 64 << 20
	)
	limit := maxMessageBytes(maxResponse)
	tooLarge := fmt.Sprintf("sdk.py.big: the MCP server py sent a message larger than %d bytes (max_response_bytes is %d)", limit, maxResponse)
	for _, tc := range []struct {
		name  string
		cfg   func(t *testing.T) Config
		stdio bool
	}{
		{"stdio", func(t *testing.T) Config { return stdio("py", testupstreams.Python(t)) }, true},
		{"http event stream", func(t *testing.T) Config { return Config{Name: "py", URL: pyHTTP(t, false)} }, false},
		{"http json", func(t *testing.T) Config { return Config{Name: "py", URL: pyHTTP(t, true)} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "log")
			cfg := tc.cfg(t)
			if tc.stdio {
				cfg.Env = map[string]string{"PYSERVER_LOG": log}
			}
			set := start(t, Options{Stderr: &syncbuf.Buffer{}, MaxResponseBytes: maxResponse}, cfg)
			ctx := context.Background()

			// Under max_response_bytes: the result.
			if r := call(ctx, t, set, "py", "big", `[{"size":1000}]`); r.Fail != luau.SDKOK || len(r.Text) != 1000 {
				t.Fatalf("a small result: %+v", r)
			}
			// Above max_response_bytes, but a message under the cap: the
			// exact check of the result.
			if r := call(ctx, t, set, "py", "big", `[{"size":100000}]`); r.Fail != luau.SDKUpstream ||
				r.Message != "sdk.py.big: the result is 100000 bytes, more than max_response_bytes (65536)" {
				t.Fatalf("a result above max_response_bytes: %+v", r)
			}

			first := set.byName["py"].conn
			inFlight := make(chan *luau.SDKResponse, 1)
			if tc.stdio {
				go func() { inFlight <- call(ctx, t, set, "py", "sleep", `[{"seconds":60,"tag":"s1"}]`) }()
				waitForLine(t, log, "started sleep s1")
			}
			before := allocated()
			r := call(ctx, t, set, "py", "big", fmt.Sprintf(`[{"size":%d}]`, huge))
			grew := allocated() - before
			want := tooLarge
			if tc.stdio {
				want += "; it is restarted on the next call"
			}
			if r.Fail != luau.SDKUpstream || r.Message != want {
				t.Errorf("a result of %d bytes: %+v, want the message %q", huge, r, want)
			}
			if grew > huge/4 {
				t.Errorf("the Go heap allocated %d bytes during the call: the %d-byte message was read", grew, huge)
			}
			t.Logf("allocated during the call: %d bytes (message %d bytes, cap %d)", grew, huge, limit)

			if tc.stdio {
				if r := <-inFlight; r.Fail != luau.SDKUpstream || r.Message != strings.Replace(want, "sdk.py.big", "sdk.py.sleep", 1) {
					t.Errorf("the call in flight: %+v", r)
				}
			}
			// The next call works: on a new server over stdio, on the same
			// connection over HTTP.
			if r := call(ctx, t, set, "py", "say-hello", `[{"name":"again"}]`); r.Fail != luau.SDKOK || string(r.Text) != "Hello, again!" {
				t.Fatalf("the next call: %+v", r)
			}
			next := set.byName["py"].conn
			if tc.stdio {
				if next == first || next.proc.proc.Pid == first.proc.proc.Pid {
					t.Error("the stdio server was not restarted")
				}
				select {
				case <-first.proc.exited:
				case <-time.After(30 * time.Second):
					t.Errorf("the first server (pid %d) was not stopped", first.proc.proc.Pid)
				}
			} else if next != first {
				t.Error("the HTTP connection was replaced")
			}
		})
	}
}

func pyHTTP(t *testing.T, json bool) string {
	url, _ := testupstreams.PythonHTTP(t, 0, json)
	return url
}
