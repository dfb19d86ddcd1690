//go:build unix

package upstream

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

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
	// allocated during the call stay far below its size). Only that call
	// fails: a call in flight meanwhile gets its answer, and the
	// connection stays (the stdio server is not restarted).
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
			set := start(t, Options{Stderr: &syncbuf.Buffer{}, MaxResponseBytes: maxResponse}, tc.cfg(t))
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
			// A call in flight: it answers once a second one arrives.
			inFlight := make(chan *luau.SDKResponse, 1)
			go func() { inFlight <- call(ctx, t, set, "py", "gather", `[{"key":"cap","n":2}]`) }()
			before := allocated()
			r := call(ctx, t, set, "py", "big", fmt.Sprintf(`[{"size":%d}]`, huge))
			grew := allocated() - before
			if r.Fail != luau.SDKUpstream || r.Message != tooLarge {
				t.Errorf("a result of %d bytes: %+v, want the message %q", huge, r, tooLarge)
			}
			if grew > huge/4 {
				t.Errorf("the Go heap allocated %d bytes during the call: the %d-byte message was read", grew, huge)
			}
			t.Logf("allocated during the call: %d bytes (message %d bytes, cap %d)", grew, huge, limit)

			if r := call(ctx, t, set, "py", "gather", `[{"key":"cap","n":2}]`); r.Fail != luau.SDKOK || string(r.Text) != "2 together" {
				t.Errorf("the second call: %+v", r)
			}
			if r := <-inFlight; r.Fail != luau.SDKOK || string(r.Text) != "2 together" {
				t.Errorf("the call in flight: %+v", r)
			}
			// The next call works, on the same connection.
			if r := call(ctx, t, set, "py", "say-hello", `[{"name":"again"}]`); r.Fail != luau.SDKOK || string(r.Text) != "Hello, again!" {
				t.Fatalf("the next call: %+v", r)
			}
			if next := set.byName["py"].conn; next != first {
				t.Error("the connection was replaced")
			}
			if tc.stdio && !testupstreams.Alive(first.proc.proc.Pid) {
				t.Error("the stdio server was stopped")
			}
		})
	}
}

// oversizedCalls and normalCalls make TestOversizeIsolated: user A makes
// oversizedCalls calls whose results are above the cap on a message while
// user B makes normalCalls calls or more on the same connection, until A
// is done.
const (
	oversizedCalls = 50
	normalCalls    = 40
)

func TestOversizeIsolated(t *testing.T) {
	// One user's oversized results never fail another user's calls on a
	// shared upstream: each of A's calls fails with a clear error, every
	// one of B's succeeds, and the upstream is neither restarted nor
	// reconnected.
	const maxResponse = 64 << 10
	limit := maxMessageBytes(maxResponse)
	tooLarge := fmt.Sprintf("sdk.py.big: the MCP server py sent a message larger than %d bytes (max_response_bytes is %d)", limit, maxResponse)
	for _, tc := range []struct {
		name  string
		cfg   func(t *testing.T, log string) Config
		stdio bool
	}{
		{"stdio", func(t *testing.T, log string) Config {
			cfg := stdio("py", testupstreams.Python(t))
			cfg.Env = map[string]string{"PYSERVER_LOG": log}
			return cfg
		}, true},
		{"http", func(t *testing.T, _ string) Config { return Config{Name: "py", URL: pyHTTP(t, false)} }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "log")
			set := start(t, Options{Stderr: &syncbuf.Buffer{}, MaxResponseBytes: maxResponse}, tc.cfg(t, log))
			first := set.byName["py"].conn
			ctx := context.Background()
			aDone := make(chan struct{})
			var aFailures []string
			go func() {
				defer close(aDone)
				for i := range oversizedCalls {
					r := call(ctx, t, set, "py", "big", fmt.Sprintf(`[{"size":%d}]`, 2*limit))
					if r.Fail != luau.SDKUpstream || r.Message != tooLarge {
						aFailures = append(aFailures, fmt.Sprintf("A's call %d: %+v", i, r))
					}
				}
			}()
			calls := 0
			for done := false; !done || calls < normalCalls; calls++ {
				select {
				case <-aDone:
					done = true
				default:
				}
				r := call(ctx, t, set, "py", "ping", fmt.Sprintf(`[{"n":%d}]`, calls))
				if r.Fail != luau.SDKOK || string(r.Text) != fmt.Sprint(calls) {
					t.Errorf("B's call %d: %+v", calls, r)
				}
			}
			for _, f := range aFailures {
				t.Error(f)
			}
			t.Logf("B made %d calls while A made %d oversized ones", calls, oversizedCalls)
			if set.byName["py"].conn != first {
				t.Error("the connection was replaced")
			}
			if tc.stdio {
				b, _ := os.ReadFile(log)
				if n := strings.Count(string(b), "pid "); n != 1 || !testupstreams.Alive(first.proc.proc.Pid) {
					t.Errorf("the server was started %d times: %q", n, b)
				}
			}
		})
	}
}

func pyHTTP(t *testing.T, json bool) string {
	url, _ := testupstreams.PythonHTTP(t, 0, json)
	return url
}
