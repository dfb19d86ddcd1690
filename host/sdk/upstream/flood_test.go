//go:build unix

package upstream

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolscript/toolscript/internal/syncbuf"
	"github.com/toolscript/toolscript/internal/testupstreams"
)

// floodServer is a stdio MCP server that starts, lists no tools, and once
// the file named by its argument exists sends n requests (ping) without
// ever reading its standard input again (so that the answers to them
// stay unwritten), then notifications/progress with the token the file
// holds.
const floodServer = `
import json, os, sys, time
def send(m):
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()
while True:
    m = json.loads(sys.stdin.readline())
    if m.get("method") == "initialize":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": "2025-06-18",
              "capabilities": {"tools": {}}, "serverInfo": {"name": "flood", "version": "1"}}})
    elif m.get("method") == "tools/list":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"tools": []}})
        break
    elif "id" in m and "method" in m:
        send({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "not here"}})
signal, n = sys.argv[1], int(sys.argv[2])
while not os.path.exists(signal):
    time.sleep(0.01)
token = open(signal).read()
out = sys.stdout
for i in range(n):
    out.write('{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % (i + 1000))
out.write('{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"%s","progress":1}}\n' % token)
out.flush()
time.sleep(3600)
`

// TestServerRequestFlood: a stdio server that sends request after
// request while it reads none of the answers cannot make the host hold a
// goroutine (and the request) for each: at most maxServerRequests of its
// requests wait for their answer to be written, and the rest are dropped
// unread.
func TestServerRequestFlood(t *testing.T) {
	const n = 20000
	dir := t.TempDir()
	script := filepath.Join(dir, "flood.py")
	if err := os.WriteFile(script, []byte(floodServer), 0o600); err != nil {
		t.Fatal(err)
	}
	signal := filepath.Join(dir, "signal")
	python := testupstreams.Python(t)[0]
	set := start(t, Options{Stderr: &syncbuf.Buffer{}}, Config{Name: "flood", Command: python, Args: []string{script, signal, "20000"}})

	// The progress notification after the flood: every request before it
	// has been handed on (or dropped) by then.
	after := make(chan struct{})
	var once sync.Once
	token, done := set.progress.open(func(float64, *float64, string) { once.Do(func() { close(after) }) })
	defer done()
	before := runtime.NumGoroutine()
	tmp := signal + ".tmp"
	if err := os.WriteFile(tmp, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, signal); err != nil {
		t.Fatal(err)
	}
	<-after
	if grew := runtime.NumGoroutine() - before; grew > 2*maxServerRequests {
		t.Errorf("%d requests of the server left %d more goroutines, more than %d", n, grew, 2*maxServerRequests)
	}
}

// TestServerRequestsCount: what counts as a server's request waiting for
// its answer, and what as the answer written.
func TestServerRequestsCount(t *testing.T) {
	scanned := func(line string) *scan {
		var s scan
		s.feed([]byte(line), false)
		return &s
	}
	for _, tc := range []struct {
		name    string
		read    string // a line of the server's
		written string // then what the client writes, in one write
		waiting int64
	}{
		{"a request", `{"jsonrpc":"2.0","id":7,"method":"ping"}`, "", 1},
		{"a request, its id last", `{"jsonrpc":"2.0","method":"ping","params":{"id":1},"id":"a"}`, "", 1},
		{"a request answered", `{"jsonrpc":"2.0","id":7,"method":"ping"}`, `{"jsonrpc":"2.0","id":7,"result":{}}` + "\n", 0},
		{"answered in pieces", `{"id":7,"method":"ping"}`, `{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"no"}}` + "\n" + `{"id":8,"method":"x"}` + "\n", 0},
		{"a notification", `{"jsonrpc":"2.0","method":"notifications/progress"}`, "", 0},
		{"a null id", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, "", 0},
		{"a response", `{"jsonrpc":"2.0","id":3,"result":{"method":"x"}}`, "", 0},
		{"the client's request is no answer", `{"id":7,"method":"ping"}`, `{"jsonrpc":"2.0","id":9,"method":"tools/list"}` + "\n", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r serverRequests
			if !r.admit(scanned(tc.read)) {
				t.Fatal("refused with none waiting")
			}
			r.wrote([]byte(tc.written))
			if got := r.waiting.Load(); got != tc.waiting {
				t.Errorf("%d waiting, want %d", got, tc.waiting)
			}
		})
	}
	var r serverRequests
	noted := 0
	r.note = func() { noted++ }
	for range maxServerRequests {
		if !r.admit(scanned(`{"id":1,"method":"ping"}`)) {
			t.Fatal("a request within the bound was dropped")
		}
	}
	if r.admit(scanned(`{"id":1,"method":"ping"}`)) || r.admit(scanned(`{"id":2,"method":"ping"}`)) || noted != 1 {
		t.Errorf("past the bound: requests admitted, or %d notes (want 1)", noted)
	}
	if !r.admit(scanned(`{"method":"notifications/progress"}`)) {
		t.Error("a notification was dropped")
	}
	r.wrote([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n"))
	if !r.admit(scanned(`{"id":3,"method":"ping"}`)) {
		t.Error("a request after an answer was dropped")
	}
}

// TestHTTPServerRequestFlood: over streamable HTTP, a server that sends
// request after request on its stream and answers none of the POSTs that
// carry their answers cannot make the host hold a goroutine and a
// connection for each: past maxServerRequests waiting, the stream that
// carries the next request is ended.
func TestHTTPServerRequestFlood(t *testing.T) {
	const n = 5000
	signal := make(chan string, 1) // the progress token, when the flood may begin
	var answers atomic.Int64       // answers the server received
	ended := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			token := ""
			select {
			case token = <-signal:
			case <-r.Context().Done():
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			for i := range n {
				fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"ping\"}\n\n", i+1000)
			}
			fmt.Fprintf(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":%q,\"progress\":1}}\n\n", token)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			ended <- struct{}{}
			return
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &msg)
		switch {
		case msg.Method == "" && msg.ID != nil: // an answer: never acknowledged
			answers.Add(1)
			<-r.Context().Done()
			return
		case msg.ID == nil:
			w.WriteHeader(http.StatusAccepted)
			return
		}
		var result any = map[string]any{"tools": []any{}}
		if msg.Method == "initialize" {
			result = map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo": map[string]any{"name": "flood", "version": "1"}}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": result})
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(srv.CloseClientConnections)
	set := start(t, Options{Stderr: &syncbuf.Buffer{}}, Config{Name: "flood", URL: srv.URL})

	after := make(chan struct{})
	var once sync.Once
	token, done := set.progress.open(func(float64, *float64, string) { once.Do(func() { close(after) }) })
	defer done()
	before := runtime.NumGoroutine()
	signal <- token
	select {
	case <-after: // the whole flood was read
	case <-ended: // the stream was ended
	}
	// Each answer in flight holds a goroutine of mcp-go's, the
	// connection's two and the server's handler.
	if grew := runtime.NumGoroutine() - before; grew > 6*maxServerRequests {
		t.Errorf("%d requests of the server left %d more goroutines, more than %d", n, grew, 6*maxServerRequests)
	}
}

// TestIsAnswer: the POSTs that carry answers to a server's requests, as
// mcp-go makes them, are told from the client's own requests and
// notifications.
func TestIsAnswer(t *testing.T) {
	for _, tc := range []struct {
		body string
		want bool
	}{
		{`{"jsonrpc":"2.0","id":1000,"result":{}}`, true},
		{`{"jsonrpc":"2.0","id":"a","error":{"code":-32600,"message":"no"}}`, true},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x"}}`, false},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, false},
	} {
		req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		if got := isAnswer(req); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.body, got, tc.want)
		}
		if b, _ := io.ReadAll(req.Body); string(b) != tc.body {
			t.Errorf("the body sent became %q", b)
		}
	}
}
