package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/internal/syncbuf"

	"github.com/mark3labs/mcp-go/mcp"
)

func TestRequestsCancellation(t *testing.T) {
	r := newRequests(10)
	// Cancelled before its handler started: the handler does not run, the
	// response is dropped, and the id is forgotten with it.
	r.add("1", "", nil)
	r.cancel("1")
	if _, ok := r.start("1", func() {}); ok {
		t.Error("a request cancelled before its handler started was started")
	}
	if drop, _ := r.answer("1"); !drop {
		t.Error("the response to a cancelled request was not dropped")
	}
	r.add("1", "", nil) // the id reused
	if drop, _ := r.answer("1"); drop {
		t.Error("a request reusing the id of a cancelled one lost its response")
	}

	// A cancellation naming an id never used, or crossing its response,
	// leaves nothing behind.
	r.cancel("never")
	r.add("2", "", nil)
	r.answer("2")
	r.cancel("2")
	for _, key := range []string{"never", "2"} {
		r.add(key, "", nil)
		if _, ok := r.start(key, func() {}); !ok {
			t.Errorf("%s: a later request with the id was taken for cancelled", key)
		}
		if drop, _ := r.answer(key); drop {
			t.Errorf("%s: a later request with the id lost its response", key)
		}
	}
	if r.len() != 0 || len(r.byID) != 0 {
		t.Errorf("%d owed, %d ids kept", r.len(), len(r.byID))
	}

	// Cancelled while running: stopped.
	ctx, stop := context.WithCancel(context.Background())
	r.add("3", "", nil)
	c, ok := r.start("3", stop)
	if !ok {
		t.Fatal("not started")
	}
	r.cancel("3")
	<-ctx.Done()
	r.end("3", c)
	r.answer("3")

	// Unknown keys (in-process calls) run untracked.
	if c, ok := r.start("", func() {}); !ok || c != nil {
		t.Error("an untracked call did not run")
	}
}

func TestRequestsBound(t *testing.T) {
	r := newRequests(2)
	r.add("a", "", nil)
	r.add("b", "", nil)
	closed := make(chan struct{})
	close(closed)
	if r.add("c", "", closed) {
		t.Fatal("a third request was recorded past the bound")
	}
	added := make(chan bool)
	go func() { added <- r.add("c", "", nil) }()
	r.answer("a")
	if !<-added {
		t.Error("the waiting request was not recorded once a response was written")
	}
	waited := make(chan struct{})
	go func() { r.wait(nil); close(waited) }()
	r.answer("b")
	r.answer("c")
	<-waited
}

// testTransport is a Server's stdio message handling, writing to a buffer.
func testTransport() (*stdio, *syncbuf.Buffer) {
	out := &syncbuf.Buffer{}
	s := &stdio{Server: testServer(false), requests: newRequests(maxPending), done: make(chan struct{})}
	s.log = log.New(io.Discard, "", 0)
	s.docURIs = map[string]bool{"toolscript://docs/luau": true}
	s.out = &lineWriter{w: out, requests: s.requests}
	return s, out
}

func TestAdmit(t *testing.T) {
	s, out := testTransport()
	if got := s.admit([]byte("  \t\r\n")); got != nil || out.String() != "" {
		t.Errorf("a blank line: %q, wrote %q", got, out.String())
	}
	// Requests with a null or unusable id get an Invalid Request error.
	for _, id := range []string{"null", "true", `{"a":1}`, "1e400"} {
		line := []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}` + "\n")
		if got := s.admit(line); got != nil {
			t.Errorf("id %s: passed on", id)
		}
	}
	var answers []rpcError
	for line := range strings.SplitSeq(strings.TrimSpace(out.String()), "\n") {
		var e rpcError
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		answers = append(answers, e)
	}
	if len(answers) != 4 || string(answers[0].ID) != "null" || answers[0].Error.Code != mcp.INVALID_REQUEST ||
		answers[0].Error.Message != "Invalid Request: the id must be a string or an integer, not null" ||
		!strings.Contains(answers[3].Error.Message, "not the number 1e400 (out of range)") {
		t.Errorf("answers %+v", answers)
	}

	// A number out of range in the arguments becomes the tool's argument
	// error; the request is passed on, and tracked.
	line := s.admit([]byte(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"execute_script","arguments":{"script":"return 1","timeout_ms":1e400}}}` + "\n"))
	var req mcp.CallToolRequest
	if err := json.Unmarshal(line, &req); err != nil {
		t.Fatalf("mcp-go cannot read %s: %v", line, err)
	}
	_, err := parseArguments(req)
	var argErr *argumentError
	if !errors.As(err, &argErr) || err.Error() != `argument "timeout_ms" is out of range: 1e400 is not a number this server can read (numbers must be within ±1.8e308)` {
		t.Errorf("argument error %v", err)
	}
	if s.requests.len() != 1 {
		t.Errorf("%d requests tracked", s.requests.len())
	}
	// Elsewhere in the request: a JSON-RPC error that names no Go type.
	out.Reset()
	if got := s.admit([]byte(`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"execute_script","_meta":{"progressToken":-1e999},"arguments":{"script":"x"}}}`)); got != nil {
		t.Errorf("passed on %s", got)
	}
	if got := out.String(); !strings.Contains(got, `"id":10,"error":{"code":-32602,"message":"Invalid params: the number -1e999 is out of range`) || strings.Contains(got, "float64") {
		t.Errorf("wrote %s", got)
	}

	// In both: the arguments cannot carry it alone.
	out.Reset()
	if got := s.admit([]byte(`{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"execute_script","_meta":{"progressToken":1e999},"arguments":{"script":"x","timeout_ms":1e400}}}`)); got != nil {
		t.Errorf("passed on %s", got)
	}
	if got := out.String(); !strings.Contains(got, `"id":13,"error":{"code":-32602,"message":"Invalid params: the number`) {
		t.Errorf("wrote %s", got)
	}

	// A cancellation reaches the table; a resources/read of an unknown URI
	// is noted.
	s.admit([]byte(`{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"execute_script","arguments":{"script":"x"}}}`))
	s.admit([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c"}}`))
	if _, ok := s.requests.start(`"c"`, func() {}); ok {
		t.Error("the cancellation did not reach the request")
	}
	s.admit([]byte(`{"jsonrpc":"2.0","id":11,"method":"resources/read","params":{"uri":"toolscript://docs/nope"}}`))
	s.admit([]byte(`{"jsonrpc":"2.0","id":12,"method":"resources/read","params":{"uri":"toolscript://docs/luau"}}`))
	if _, uri := s.requests.answer("11"); uri != "toolscript://docs/nope" {
		t.Errorf("unknown URI %q", uri)
	}
	if _, uri := s.requests.answer("12"); uri != "" {
		t.Errorf("a known URI was noted: %q", uri)
	}
	// What mcp-go answers itself passes through.
	for _, line := range []string{`{"jsonrpc":`, `[1,2]`, `{"jsonrpc":"2.0","id":1,"result":{}}`, `{"jsonrpc":"2.0","method":"notifications/initialized"}`} {
		if got := s.admit([]byte(line)); string(got) != line {
			t.Errorf("%s: got %q", line, got)
		}
	}
}

func TestLineWriter(t *testing.T) {
	var out bytes.Buffer
	r := newRequests(10)
	var failures []error
	w := &lineWriter{w: &out, requests: r}
	r.add("3", "", nil)
	r.add(`"s"`, "", nil)
	r.add("4", "toolscript://docs/nope", nil)
	r.cancel("3")
	r.cancel(`"s"`)
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":3}}`,
		`{"jsonrpc":"2.0","id":3,"result":{}}`,  // dropped
		`{"jsonrpc":"2.0","id":"s","error":{}}`, // dropped
		`{"jsonrpc":"2.0","id":3,"result":{"again":true}}`,
		`{"jsonrpc":"2.0","id":4,"error":{"code":-32002,"message":"handler not found for resource URI 'toolscript://docs/nope': resource not found"}}`,
	} {
		if n, err := w.Write([]byte(msg + "\n")); err != nil || n != len(msg)+1 {
			t.Fatalf("Write: %d %v", n, err)
		}
	}
	want := `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":3}}` + "\n" +
		`{"jsonrpc":"2.0","id":3,"result":{"again":true}}` + "\n" +
		`{"jsonrpc":"2.0","id":4,"error":{"code":-32002,"message":"Resource not found: toolscript://docs/nope (resources/list gives the resources of this server)","data":{"uri":"toolscript://docs/nope"}}}` + "\n"
	if out.String() != want {
		t.Errorf("wrote\n%s\nwant\n%s", out.String(), want)
	}
	if r.len() != 0 {
		t.Errorf("%d requests still owed", r.len())
	}

	// The first failed write is reported, once.
	w = &lineWriter{w: failingWriter{}, requests: r, failed: func(err error) { failures = append(failures, err) }}
	for range 3 {
		if _, err := w.Write([]byte("{}\n")); err == nil {
			t.Error("a failed write reported no error")
		}
	}
	if len(failures) != 1 {
		t.Errorf("%d failures reported", len(failures))
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }
