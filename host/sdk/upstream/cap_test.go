//go:build unix

package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/contract/sdkcall"
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
			if r := call(ctx, t, set, "py", "big", `[{"size":1000}]`); r.Fail != sdkcall.OK || len(r.Text) != 1000 {
				t.Fatalf("a small result: %+v", r)
			}
			// Above max_response_bytes, but a message under the cap: the
			// exact check of the result.
			if r := call(ctx, t, set, "py", "big", `[{"size":100000}]`); r.Fail != sdkcall.Upstream ||
				r.Message != "sdk.py.big: the result is 100000 bytes, more than max_response_bytes (65536)" {
				t.Fatalf("a result above max_response_bytes: %+v", r)
			}

			first := set.byName["py"].conn
			// A call in flight: it answers once a second one arrives.
			inFlight := make(chan *sdkcall.Response, 1)
			go func() { inFlight <- call(ctx, t, set, "py", "gather", `[{"key":"cap","n":2}]`) }()
			before := allocated()
			r := call(ctx, t, set, "py", "big", fmt.Sprintf(`[{"size":%d}]`, huge))
			grew := allocated() - before
			if r.Fail != sdkcall.Upstream || r.Message != tooLarge {
				t.Errorf("a result of %d bytes: %+v, want the message %q", huge, r, tooLarge)
			}
			if grew > huge/4 {
				t.Errorf("the Go heap allocated %d bytes during the call: the %d-byte message was read", grew, huge)
			}
			t.Logf("allocated during the call: %d bytes (message %d bytes, cap %d)", grew, huge, limit)

			if r := call(ctx, t, set, "py", "gather", `[{"key":"cap","n":2}]`); r.Fail != sdkcall.OK || string(r.Text) != "2 together" {
				t.Errorf("the second call: %+v", r)
			}
			if r := <-inFlight; r.Fail != sdkcall.OK || string(r.Text) != "2 together" {
				t.Errorf("the call in flight: %+v", r)
			}
			// The next call works, on the same connection.
			if r := call(ctx, t, set, "py", "say-hello", `[{"name":"again"}]`); r.Fail != sdkcall.OK || string(r.Text) != "Hello, again!" {
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
					if r.Fail != sdkcall.Upstream || r.Message != tooLarge {
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
				if r.Fail != sdkcall.OK || string(r.Text) != fmt.Sprint(calls) {
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

func TestRefusedMessages(t *testing.T) {
	// Over stdio, a message nested deeper than encoding/json decodes, or
	// with more content blocks than the budget, or larger than the cap,
	// fails its call at once (not at the timeout), wherever its id is in
	// it; the connection goes on. A result within those bounds but deeper
	// than a script's values nest fails as the server's fault.
	const maxResponse = 64 << 10
	limit := maxMessageBytes(maxResponse)
	cfg := stdio("py", testupstreams.Python(t))
	cfg.Timeout = time.Minute
	set := start(t, Options{Stderr: &syncbuf.Buffer{}, MaxResponseBytes: maxResponse}, cfg)
	first := set.byName["py"].conn
	ctx := context.Background()
	deep := fmt.Sprintf("sdk.py.raw: the MCP server py sent a message nested more than %d levels deep", maxDepth)
	for _, c := range []struct {
		tool, args string
		fail       sdkcall.Failure
		message    string
	}{
		{"raw", fmt.Sprintf(`[{"depth":%d}]`, maxDepth+10), sdkcall.Upstream, deep},
		{"raw", fmt.Sprintf(`[{"depth":%d,"id_last":true}]`, maxDepth+10), sdkcall.Upstream, deep},
		{"raw", fmt.Sprintf(`[{"size":%d,"id_last":true}]`, 2*limit), sdkcall.Upstream,
			fmt.Sprintf("sdk.py.raw: the MCP server py sent a message larger than %d bytes (max_response_bytes is %d)", limit, maxResponse)},
		// {"v":[[...]]} with 127 lists, the innermost holding nothing:
		// 128 levels deep, as a script's JSON reader counts (the object
		// is level 1), then 129.
		{"raw", `[{"depth":127}]`, sdkcall.OK, ""},
		{"raw", `[{"depth":128}]`, sdkcall.Upstream, "sdk.py.raw: the result nests 129 levels deep, more than the 128 a script can take"},
	} {
		r := call(ctx, t, set, "py", c.tool, c.args)
		if r.Fail != c.fail || r.Message != c.message {
			t.Errorf("%s %.60s: %+v, want %d %q", c.tool, c.args, r, c.fail, c.message)
		}
	}
	if r := call(ctx, t, set, "py", "say-hello", `[{"name":"again"}]`); r.Fail != sdkcall.OK || string(r.Text) != "Hello, again!" {
		t.Fatalf("the next call: %+v", r)
	}
	if set.byName["py"].conn != first {
		t.Error("the connection was replaced")
	}
}

func TestBlockBudget(t *testing.T) {
	// A result of more than maxBlocks content blocks fails with kind
	// limit before mcp-go decodes it, over stdio and HTTP alike; the
	// connection stays.
	for _, tc := range []struct {
		name string
		cfg  func(t *testing.T) Config
	}{
		{"stdio", func(t *testing.T) Config { return stdio("py", testupstreams.Python(t)) }},
		{"http event stream", func(t *testing.T) Config { return Config{Name: "py", URL: pyHTTP(t, false)} }},
		{"http json", func(t *testing.T) Config { return Config{Name: "py", URL: pyHTTP(t, true)} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := start(t, Options{Stderr: &syncbuf.Buffer{}, MaxResponseBytes: 10 << 20}, tc.cfg(t))
			first := set.byName["py"].conn
			ctx := context.Background()
			r := call(ctx, t, set, "py", "blocks", fmt.Sprintf(`[{"n":%d}]`, maxBlocks+1))
			want := fmt.Sprintf("sdk.py.blocks: the MCP server py sent a result of more than %d content blocks", maxBlocks)
			if r.Fail != sdkcall.Limit || r.Message != want {
				t.Errorf("%d blocks: %+v, want the limit error %q", maxBlocks+1, r, want)
			}
			r = call(ctx, t, set, "py", "blocks", fmt.Sprintf(`[{"n":%d,"text":"ab"}]`, maxBlocks))
			if r.Fail != sdkcall.OK || len(r.Text) != 3*maxBlocks-1 {
				t.Errorf("%d blocks: %+v", maxBlocks, r)
			}
			if set.byName["py"].conn != first {
				t.Error("the connection was replaced")
			}
		})
	}
}

func TestErrorMessagesCapped(t *testing.T) {
	// A tool error's text and a JSON-RPC error's message reach the
	// script cut to 1 KiB, saying how much was left out.
	set := start(t, Options{Stderr: &syncbuf.Buffer{}}, stdio("py", testupstreams.Python(t)))
	ctx := context.Background()
	reason := "x" + strings.Repeat("é", 50000) // 100 KB, two bytes a character
	r := call(ctx, t, set, "py", "fail", `[{"reason":"`+reason+`"}]`)
	var content []struct{ Text string }
	_ = json.Unmarshal(r.Content, &content)
	if len(content) != 1 || !strings.HasSuffix(content[0].Text, "failed on purpose: "+reason) {
		t.Fatalf("the content: %.200s", r.Content)
	}
	text := content[0].Text
	cut := 1024
	if text[cut] != 0xc3 { // 1024 bytes end in the middle of an é
		cut--
	}
	want := "sdk.py.fail: " + text[:cut] + fmt.Sprintf("... (%d more bytes)", len(text)-cut)
	if r.Fail != sdkcall.Upstream || r.Message != want {
		t.Errorf("a tool error: %.200q..., want %.200q...", r.Message, want)
	}
	r = call(ctx, t, set, "py", "rpc_error", `[{"size":100000}]`)
	want = "sdk.py.rpc_error: the MCP server py answered with an error: " + strings.Repeat("e", 1024) + "... (98976 more bytes)"
	if r.Fail != sdkcall.Upstream || r.Message != want {
		t.Errorf("a JSON-RPC error: %.200q, want %.200q", r.Message, want)
	}
}

func TestArgumentErrorCapped(t *testing.T) {
	// An argument error quoting a long enum of the tool's schema is cut
	// to 1 KiB too.
	set := start(t, Options{Stderr: &syncbuf.Buffer{}}, stdio("py", testupstreams.Python(t)))
	r := call(context.Background(), t, set, "py", "pick", `[{"choice":"nope"}]`)
	prefix := "sdk.py.pick: argument 'choice': value must be one of 'option-0', 'option-1'"
	if r.Fail != sdkcall.Argument || !strings.HasPrefix(r.Message, prefix) || len(r.Message) > len("sdk.py.pick: ")+1024+len("... (99999 more bytes)") ||
		!strings.Contains(r.Message, " more bytes)") {
		t.Errorf("%d bytes: %q", len(r.Message), r.Message)
	}
	if r := call(context.Background(), t, set, "py", "pick", `[{"choice":"option-499"}]`); r.Fail != sdkcall.OK || string(r.Text) != "option-499" {
		t.Errorf("%+v", r)
	}
}

func TestCapText(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"abc", 3, "abc"},
		{"abcd", 3, "abc... (1 more bytes)"},
		{"aé", 2, "a... (2 more bytes)"},
		{"€€", 4, "€... (3 more bytes)"},
		{"€", 0, "... (3 more bytes)"},
	} {
		if got := capText(c.in, c.n); got != c.want {
			t.Errorf("capText(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

func TestHTTPErrorFailsOneCall(t *testing.T) {
	// Over HTTP, a request that fails (here a proxy in front of the
	// server answers one tool's calls with 502) fails that call alone:
	// a call of another user in flight meanwhile gets its answer, and the
	// connection stays.
	addr := sayHelloProxy(t, func(w http.ResponseWriter, _ *http.Request) bool {
		http.Error(w, "bad gateway: "+strings.Repeat("x", 5000), http.StatusBadGateway)
		return true
	})
	set := start(t, Options{Stderr: &syncbuf.Buffer{}}, Config{Name: "py", URL: addr})
	first := set.byName["py"].conn
	ctx := context.Background()
	inFlight := make(chan *sdkcall.Response, 1)
	go func() { inFlight <- call(ctx, t, set, "py", "gather", `[{"key":"http","n":2}]`) }()
	r := call(ctx, t, set, "py", "say-hello", `[{"name":"A"}]`)
	if r.Fail != sdkcall.Upstream || !strings.HasPrefix(r.Message, "sdk.py.say_hello: the MCP server py could not be reached: request failed with status 502: bad gateway: xxx") ||
		!strings.HasSuffix(r.Message, " more bytes)") {
		t.Errorf("the failed call: %+v", r)
	}
	if r := call(ctx, t, set, "py", "gather", `[{"key":"http","n":2}]`); r.Fail != sdkcall.OK || string(r.Text) != "2 together" {
		t.Errorf("the second call: %+v", r)
	}
	if r := <-inFlight; r.Fail != sdkcall.OK || string(r.Text) != "2 together" {
		t.Errorf("the call in flight: %+v", r)
	}
	if set.byName["py"].conn != first {
		t.Error("the connection was replaced")
	}
}

func TestHTTPHeadersCapped(t *testing.T) {
	// A streamable HTTP server whose answer to one tool carries 4 MiB of
	// headers (a proxy in front of a real server adds them): the call
	// fails without the headers being held whole, the other calls work.
	addr := sayHelloProxy(t, func(w http.ResponseWriter, _ *http.Request) bool {
		for i := range 64 {
			w.Header().Set(fmt.Sprintf("X-Padding-%d", i), strings.Repeat("x", 64<<10))
		}
		return false
	})
	set := start(t, Options{Stderr: &syncbuf.Buffer{}}, Config{Name: "py", URL: addr})
	ctx := context.Background()
	if r := call(ctx, t, set, "py", "say-hello", `[{"name":"A"}]`); r.Fail != sdkcall.Upstream || !strings.Contains(r.Message, "header") {
		t.Errorf("a response with 4 MiB of headers: %+v", r)
	}
	if r := call(ctx, t, set, "py", "gather", `[{"key":"headers","n":1}]`); r.Fail != sdkcall.OK || string(r.Text) != "1 together" {
		t.Errorf("the next call: %+v", r)
	}
}

// sayHelloProxy is the URL of a real streamable HTTP server (pyserver)
// behind a proxy that lets onSayHello change the answer to calls of the
// tool say-hello: it may write its own answer (and return true), or set
// headers on the server's or change the request passed on to it.
func sayHelloProxy(t *testing.T, onSayHello func(http.ResponseWriter, *http.Request) bool) string {
	target, err := url.Parse(pyHTTP(t, false))
	if err != nil {
		t.Fatal(err)
	}
	base := &url.URL{Scheme: target.Scheme, Host: target.Host}
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(base) }, FlushInterval: -1}
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			if bytes.Contains(body, []byte(`"name":"say-hello"`)) && onSayHello(w, r) {
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	return front.URL + target.Path
}

func TestToolErrorContentBounded(t *testing.T) {
	// A tool error's content is held to max_response_bytes as a result
	// is: past it the script gets the error's message and no content,
	// and the message says why.
	const maxResponse = 64 << 10
	set := start(t, Options{Stderr: &syncbuf.Buffer{}, MaxResponseBytes: maxResponse}, stdio("py", testupstreams.Python(t)))
	ctx := context.Background()
	for _, c := range []struct {
		size    int
		content bool
	}{{maxResponse / 2, true}, {2 * maxResponse, false}} {
		r := call(ctx, t, set, "py", "fail", fmt.Sprintf(`[{"reason":"%s"}]`, strings.Repeat("x", c.size)))
		if r.Fail != sdkcall.Upstream || !strings.Contains(r.Message, "failed on purpose: xxx") {
			t.Fatalf("%d bytes: %.200q", c.size, r.Message)
		}
		if got := len(r.Content) > c.size; got != c.content {
			t.Errorf("%d bytes: the content (%d bytes) kept %v, want %v", c.size, len(r.Content), got, c.content)
		}
		if said := strings.Contains(r.Message, "more than max_response_bytes"); said == c.content {
			t.Errorf("%d bytes: the message %.100q...%q", c.size, r.Message, r.Message[max(0, len(r.Message)-120):])
		}
	}
}
