//go:build unix

package upstream

import (
	"os"
	"path/filepath"
	"runtime"
	"sync"
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
