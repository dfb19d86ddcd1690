package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/internal/syncbuf"
	"github.com/toolscript/toolscript/internal/testruntime"
)

// testCall is a call of the table tests.
func testCall(id string) (*call, context.Context) {
	ctx, cancel := context.WithCancel(context.Background())
	return &call{key: tableKey{"s", id}, method: "tools/call", cancel: cancel}, ctx
}

func TestTableCancellation(t *testing.T) {
	r := newTable(10)
	// Cancelled before it started: its context is done, the response is
	// dropped, and the id is forgotten with it.
	c, ctx := testCall("1")
	r.add(c, nil)
	r.cancel(c.key)
	if ctx.Err() == nil {
		t.Error("a request cancelled before it started was not stopped")
	}
	if !r.answer(c) {
		t.Error("the response to a cancelled request was not dropped")
	}
	r.release()
	c, _ = testCall("1") // the id reused
	r.add(c, nil)
	if r.answer(c) {
		t.Error("a request reusing the id of a cancelled one lost its response")
	}
	r.release()

	// A cancellation naming an id never used, or crossing its response,
	// leaves nothing behind; the same id in another scope is not touched.
	r.cancel(tableKey{"s", "never"})
	c, _ = testCall("2")
	r.add(c, nil)
	r.answer(c)
	r.release()
	r.cancel(c.key)
	other, otherCtx := testCall("3")
	other.key.scope = "another"
	r.add(other, nil)
	r.cancel(tableKey{"s", "3"})
	if otherCtx.Err() != nil {
		t.Error("a cancellation reached another scope's request")
	}
	r.answer(other)
	r.release()
	for _, id := range []string{"never", "2"} {
		c, ctx := testCall(id)
		r.add(c, nil)
		if ctx.Err() != nil || r.answer(c) {
			t.Errorf("%s: a later request with the id was taken for cancelled", id)
		}
		r.release()
	}
	if owed, _ := r.len(); owed != 0 || len(r.byKey) != 0 {
		t.Errorf("%d owed, %d ids kept", owed, len(r.byKey))
	}

	// Two requests with one id: both counted, both cancelled.
	a, actx := testCall("4")
	b, bctx := testCall("4")
	r.add(a, nil)
	r.add(b, nil)
	if owed, calls := r.len(); owed != 2 || calls != 2 {
		t.Errorf("%d owed, %d calls", owed, calls)
	}
	r.cancel(a.key)
	<-actx.Done()
	<-bctx.Done()
	// The id reused while the cancelled ones are still stopping: the new
	// request is not cancelled.
	again, againCtx := testCall("4")
	r.add(again, nil)
	if !r.answer(a) || !r.answer(b) {
		t.Error("a duplicate's response was not dropped")
	}
	if againCtx.Err() != nil || r.answer(again) {
		t.Error("a request reusing the id of cancelled ones still running was taken for cancelled")
	}
	for range 3 {
		r.release()
	}
}

func TestTableBound(t *testing.T) {
	r := newTable(2)
	a, _ := testCall("a")
	b, _ := testCall("b")
	r.add(a, nil)
	r.add(b, nil)
	closed := make(chan struct{})
	close(closed)
	c, _ := testCall("c")
	if r.add(c, closed) {
		t.Fatal("a third request was recorded past the bound")
	}
	added := make(chan bool)
	go func() { added <- r.add(c, nil) }()
	r.answer(a)
	r.release()
	if !<-added {
		t.Error("the waiting request was not recorded once a response was written")
	}
	waited := make(chan struct{})
	go func() { r.wait(nil); close(waited) }()
	for _, c := range []*call{b, c} {
		r.answer(c)
		r.release()
	}
	<-waited
}

// newServer returns the Server of cfg: without a Runtime, with one of
// one instance; without an ErrorLog, with io.Discard.
func newServer(t testing.TB, cfg Config) *Server {
	t.Helper()
	if cfg.Runtime == nil {
		cfg.Runtime = testruntime.New(t, luau.Config{PoolSize: 1})
	}
	if cfg.ErrorLog == nil {
		cfg.ErrorLog = io.Discard
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// testStdio returns the Server of cfg (newServer) set up as the stdio
// transport sets it up, and a writer on a buffer.
func testStdio(t testing.TB, cfg Config) (*Server, *lineWriter, *syncbuf.Buffer) {
	t.Helper()
	s := newServer(t, cfg)
	s.log = log.New(io.Discard, "", 0)
	if err := s.setTransport(maxPending); err != nil {
		t.Fatal(err)
	}
	out := &syncbuf.Buffer{}
	return s, &lineWriter{w: out}, out
}

// servePipes serves s as the stdio transport does, over pipes: the test
// writes the client's lines to in and reads the server's from lines; end
// closes the input, drains what is left of the output and waits for
// Serve to return.
func servePipes(s *Server) (in io.Writer, lines *bufio.Scanner, end func()) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- s.Serve(context.Background(), inR, outW) }()
	lines = bufio.NewScanner(outR)
	lines.Buffer(nil, 1<<20)
	return inW, lines, func() {
		inW.Close()
		go io.Copy(io.Discard, outR)
		<-served
	}
}

// initializeLines are the client's lines of initialize (of protocol
// 2025-11-25), declaring capabilities (a JSON object).
func initializeLines(capabilities string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","clientInfo":{"name":"t","version":"1"},"capabilities":` + capabilities + `}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"
}

// handle hands line to the core as the stdio transport does, and runs its
// call to the end.
func handle(s *Server, w *lineWriter, line string) *call {
	var msg envelope
	raw := json.RawMessage(line)
	if json.Unmarshal(raw, &msg) != nil {
		s.handleLine(context.Background(), raw, w, nil) // starts no call
		return nil
	}
	return s.receive(incoming{ctx: context.Background(), msg: &msg, raw: raw, conn: w})
}

// answers decodes what was written.
func answers(t *testing.T, out *syncbuf.Buffer) []map[string]any {
	t.Helper()
	var got []map[string]any
	for _, line := range out.Lines() {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		got = append(got, m)
	}
	out.Reset()
	return got
}

func errorOf(m map[string]any) (code float64, message string) {
	e, _ := m["error"].(map[string]any)
	code, _ = e["code"].(float64)
	message, _ = e["message"].(string)
	return code, message
}

func TestReceive(t *testing.T) {
	s, w, out := testStdio(t, Config{})
	if handle(s, w, "  \t\r\n") != nil || out.String() != "" {
		t.Errorf("a blank line: wrote %q", out.String())
	}
	// Requests with a null or unusable id get an Invalid Request error.
	for _, id := range []string{"null", "true", `{"a":1}`, "1e400"} {
		if c := handle(s, w, `{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`); c != nil {
			t.Errorf("id %s: passed on", id)
		}
	}
	got := answers(t, out)
	if len(got) != 4 {
		t.Fatalf("answers %v", got)
	}
	if code, msg := errorOf(got[0]); got[0]["id"] != nil || code != mcp.INVALID_REQUEST ||
		msg != "Invalid Request: the id must be a string or an integer, not null" {
		t.Errorf("answer %v", got[0])
	}
	if _, msg := errorOf(got[3]); !strings.Contains(msg, "not the number 1e400 (out of range)") {
		t.Errorf("answer %v", got[3])
	}

	// A number out of range in execute_script's arguments is the tool's
	// argument error.
	if c := handle(s, w, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"execute_script","arguments":{"script":"return 1","timeout_ms":1e400}}}`); c != nil {
		t.Error("passed on")
	}
	got = answers(t, out)
	res, _ := got[0]["result"].(map[string]any)
	text, _ := json.Marshal(res["content"])
	if len(got) != 1 || got[0]["id"] != 9.0 || res["isError"] != true ||
		!strings.Contains(string(text), `Invalid arguments: argument \"timeout_ms\" is out of range: 1e400 is not a number this server can read (numbers must be within ±1.8e308)`) {
		t.Errorf("answers %v", got)
	}
	// Elsewhere in the request, or in both: a JSON-RPC error that names no
	// Go type.
	for id, line := range map[float64]string{
		10: `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"execute_script","_meta":{"progressToken":-1e999},"arguments":{"script":"x"}}}`,
		13: `{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"execute_script","_meta":{"progressToken":1e999},"arguments":{"script":"x","timeout_ms":1e400}}}`,
	} {
		handle(s, w, line)
		got = answers(t, out)
		if code, msg := errorOf(got[0]); len(got) != 1 || got[0]["id"] != id || code != mcp.INVALID_PARAMS ||
			!strings.HasPrefix(msg, "Invalid params: the number ") || strings.Contains(msg, "float64") {
			t.Errorf("%v: answers %v", id, got)
		}
	}
	if owed, _ := s.table.len(); owed != 0 {
		t.Errorf("%d owed after the answers", owed)
	}

	// A cancellation reaches the call before it runs: it does not, and
	// gets no response.
	c := handle(s, w, `{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"execute_script","arguments":{"script":"x"}}}`)
	handle(s, w, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c"}}`)
	if c == nil || c.ctx.Err() == nil {
		t.Fatal("the cancellation did not reach the request")
	}
	s.run(c)
	if out.String() != "" {
		t.Errorf("a cancelled call was answered: %s", out.String())
	}

	// A resources/read of an unknown URI is answered in the protocol's
	// terms; a known one is read.
	s.run(handle(s, w, `{"jsonrpc":"2.0","id":11,"method":"resources/read","params":{"uri":"toolscript://docs/nope"}}`))
	got = answers(t, out)
	if code, msg := errorOf(got[0]); code != -32002 || msg != "Resource not found: toolscript://docs/nope (resources/list gives the resources of this server)" ||
		got[0]["error"].(map[string]any)["data"].(map[string]any)["uri"] != "toolscript://docs/nope" {
		t.Errorf("answer %v", got[0])
	}
	s.run(handle(s, w, `{"jsonrpc":"2.0","id":12,"method":"resources/read","params":{"uri":"toolscript://docs/luau"}}`))
	if got = answers(t, out); got[0]["result"] == nil {
		t.Errorf("answer %v", got[0])
	}

	// What mcp-go answers; what needs no answer.
	for line, want := range map[string]string{
		`{"jsonrpc":`:                          "Parse error",
		`[1,2]`:                                "Failed to parse message",
		`{"jsonrpc":"2.0","id":1,"result":{}}`: "",
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`:    "",
		`{"jsonrpc":"1.0","id":5,"method":"ping"}`:                  "Invalid JSON-RPC version",
		`{"jsonrpc":"2.0","id":6,"method":"ping","params":[1e999]}`: "Invalid params: the number 1e999 is out of range",
	} {
		if c := handle(s, w, line); c != nil {
			s.run(c)
		}
		got = answers(t, out)
		_, msg := errorOf(append(got, nil)[0])
		if want == "" && len(got) != 0 || want != "" && (len(got) != 1 || !strings.HasPrefix(msg, want)) {
			t.Errorf("%s: answers %v", line, got)
		}
	}
}

func TestLineWriter(t *testing.T) {
	var failures []error
	w := &lineWriter{w: failingWriter{}, failed: func(err error) { failures = append(failures, err) }}
	for range 3 {
		if err := w.write(map[string]int{"a": 1}); err == nil {
			t.Error("a failed write reported no error")
		}
	}
	if len(failures) != 1 {
		t.Errorf("%d failures reported", len(failures))
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

// TestServeLines: Serve refuses lines too long to read (with the id found
// in them, nothing for a notification), skips blank lines, reads a last
// line without a newline, and answers every request read before the end
// of input.
func TestServeLines(t *testing.T) {
	s := newServer(t, Config{MaxScriptBytes: 1000})
	long := `{"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"script":"` + strings.Repeat("x", 7<<20) + `"}},"id":99}`
	input := `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n" + long + "\n" +
		`{"jsonrpc":"2.0","method":"n","params":"` + strings.Repeat("y", 7<<20) + `"}` + "\n\n" +
		`{"jsonrpc":"2.0","id":"last","method":"tools/call","params":{"name":"execute_script","arguments":{"script":"return 2"}}}`
	out := &syncbuf.Buffer{}
	if err := s.Serve(context.Background(), strings.NewReader(input), out); err != nil {
		t.Fatal(err)
	}
	byID := map[string]string{}
	for _, line := range out.Lines() {
		var m struct {
			ID json.RawMessage
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		byID[string(m.ID)] = line
	}
	if len(byID) != 3 || !strings.Contains(byID["1"], `"result":{}`) ||
		!strings.Contains(byID["99"], `"message":"request too large: more than`) ||
		!strings.Contains(byID[`"last"`], `\"result\":2`) {
		t.Errorf("answers:\n%s", strings.Join(out.Lines(), "\n"))
	}
}

func TestIDKey(t *testing.T) {
	for raw, want := range map[string]string{
		`1`: "1", `1.0`: "1", `1e3`: "1000", `-2`: "-2", `"1"`: `"1"`, `"a\u0062"`: `"ab"`, `0`: "0",
		`1234567890123456789`: "1234567890123456800", `"<"`: `"\u003c"`,
		`null`: "", `true`: "", `{}`: "", `[1]`: "", `1e400`: "", ``: "",
	} {
		got, ok := idKey(json.RawMessage(raw))
		if got != want || ok != (want != "") {
			t.Errorf("idKey(%s) = %q %v, want %q", raw, got, ok, want)
		}
	}
}

// TestResourceNotFound: mcp-go's error for a URI without a handler points to
// resources/list; a handler's ErrResourceNotFound keeps what it says.
func TestResourceNotFound(t *testing.T) {
	cases := []struct{ message, uri, want string }{
		{"handler not found for resource URI 'x://y': resource not found", "x://y",
			"Resource not found: x://y (resources/list gives the resources of this server)"},
		{"resource not found: invalid cursor \"q\": not one this server gave", "sdk://gh/functions?cursor=q",
			"Resource not found: sdk://gh/functions?cursor=q (invalid cursor \"q\": not one this server gave)"},
		{"resource not found: ", "sdk://a", "Resource not found: sdk://a (resources/list gives the resources of this server)"},
	}
	for _, c := range cases {
		e := resourceNotFound(rpcError(json.RawMessage("1"), mcp.RESOURCE_NOT_FOUND, c.message, nil), c.uri)
		if e.Error.Message != c.want || e.Error.Code != mcp.RESOURCE_NOT_FOUND {
			t.Errorf("%q: %d %q, want %q", c.message, e.Error.Code, e.Error.Message, c.want)
		}
		if data, _ := e.Error.Data.(map[string]string); data["uri"] != c.uri {
			t.Errorf("%q: data %v", c.message, e.Error.Data)
		}
	}
}
