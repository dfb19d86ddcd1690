package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/toolscript/toolscript/host/contract/redact"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/contract/limit"
	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/host/sdk/sdkdocs"
	"github.com/toolscript/toolscript/host/serve/auth"
	"github.com/toolscript/toolscript/host/serve/auth/authtest"
	"github.com/toolscript/toolscript/host/serve/hosted"
	"github.com/toolscript/toolscript/host/serve/mcpserver"
	"github.com/toolscript/toolscript/host/serve/metrics"
	"github.com/toolscript/toolscript/internal/testclient"
	"github.com/toolscript/toolscript/internal/testrpc"
	"github.com/toolscript/toolscript/internal/testruntime"
	"github.com/toolscript/toolscript/internal/testwait"
)

// These tests run the HTTP transport as the hosted mode does: a real
// runtime, the MCP server, the hosted handler with authentication by a
// real issuer (authtest), on a real HTTP server, driven by mcp-go's client
// or by raw requests.

// hostedOptions vary the server of a test.
type hostedOptions struct {
	stateless  bool
	ioDir      string // "" leaves io off
	perUser    int
	queueWait  time.Duration
	prepare    func(context.Context, *mcpserver.Call) error
	maxScript  int64
	noHosted   bool // serve the transport alone, without authentication
	maxRunning int
	// budget and maxUnwritten are Config.ResponseBudget and
	// MaxUnwrittenBytesPerUser; with budget set, hosted.Serve serves the
	// handler (with writeTimeout), not httptest.
	budget       *limit.Bytes
	maxUnwritten int64
	writeTimeout time.Duration
	largeResults mcpserver.LargeResults
	redactor     *redact.Redactor
	checker      mcpserver.ScriptChecker
}

type hostedServer struct {
	url     string
	issuer  *authtest.Issuer
	srv     *mcpserver.Server
	metrics *metrics.Metrics
}

func startHosted(t *testing.T, o hostedOptions) *hostedServer {
	t.Helper()
	rt := testruntime.New(t, luau.Config{PoolSize: 2})
	m := metrics.New(hosted.AuthReasons())
	cfg := mcpserver.Config{
		Runtime:                  rt,
		Limits:                   luau.Limits{Timeout: 30 * time.Second},
		MaxConcurrent:            o.maxRunning,
		MaxConcurrentPerUser:     o.perUser,
		QueueWait:                o.queueWait,
		MaxScriptBytes:           o.maxScript,
		ProgressInterval:         time.Millisecond,
		Metrics:                  m,
		Prepare:                  o.prepare,
		ErrorLog:                 io.Discard,
		ResponseBudget:           o.budget,
		MaxUnwrittenBytesPerUser: o.maxUnwritten,
		LargeResults:             o.largeResults,
		Redactor:                 o.redactor,
		Checker:                  o.checker,
	}
	if o.checker != nil { // check_script is offered beside the sdk's docs
		cfg.SDKDocs = sdkdocs.New(&catalog.Catalog{})
	}
	if o.ioDir != "" {
		cfg.IO, cfg.PerUserIO = &luau.IO{Dir: o.ioDir}, true
	}
	srv, err := mcpserver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := srv.HTTPHandler(mcpserver.HTTPConfig{Stateless: o.stateless, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	h := &hostedServer{srv: srv, metrics: m}
	var handler http.Handler = tr
	if !o.noHosted {
		h.issuer = authtest.NewIssuer(t, authtest.Options{})
		a, err := auth.New(context.Background(), auth.Config{
			Issuer: h.issuer.URL, Audience: h.issuer.Audience, HTTPClient: h.issuer.Client(),
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(a.Close)
		handler, err = hosted.New(hosted.Config{MCP: tr, Auth: a, MaxBodyBytes: srv.MaxRequestBytes(), Metrics: m})
		if err != nil {
			t.Fatal(err)
		}
	}
	if o.budget != nil {
		h.url = serveHosted(t, handler, hosted.ServeConfig{WriteTimeout: o.writeTimeout}) + hosted.PathMCP
		return h
	}
	ts := httptest.NewServer(handler)
	t.Cleanup(ts.Close)
	h.url = ts.URL + hosted.PathMCP
	return h
}

// smallSendBuffers is a listener whose connections have send buffers of
// 16 KiB, so that a response the client does not read stays in the
// server rather than in the kernel (which would otherwise take megabytes
// of it, as much as its settings allow).
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(16 << 10)
	}
	return c, err
}

// serveHosted serves handler with hosted.Serve on a loopback address
// until the test ends, and returns its base URL.
func serveHosted(t *testing.T, handler http.Handler, cfg hosted.ServeConfig) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listener = smallSendBuffers{ln}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- hosted.Serve(ctx, handler, cfg) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("hosted.Serve: %v", err)
		}
	})
	return "http://" + ln.Addr().String()
}

func (h *hostedServer) token(t *testing.T, sub string) string { return h.issuer.Token(t, "ES256", sub) }

// connect returns an initialized mcp-go client of the user sub.
func (h *hostedServer) connect(t *testing.T, sub string) *client.Client {
	t.Helper()
	c, err := testclient.HTTP(t, h.url, h.token(t, sub))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// execution is the structured content of execute_script.
type execution struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	} `json:"error"`
}

func run(t *testing.T, c *client.Client, script string, meta *mcp.Meta) execution {
	t.Helper()
	res := testclient.Call(t, c, mcp.CallToolParams{Name: mcpserver.ToolName, Arguments: map[string]any{"script": script}, Meta: meta})
	return testclient.Structured[execution](t, res)
}

// TestHTTPExecute: tools, resources, scripts and their progress over HTTP
// with a token, in both modes. Every progress notification arrives before
// the response, the last one included.
func TestHTTPExecute(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		t.Run(fmt.Sprintf("stateless=%v", stateless), func(t *testing.T) {
			h := startHosted(t, hostedOptions{stateless: stateless})
			c := h.connect(t, "alice")
			ctx := testwait.Context(t)
			tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
			if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != mcpserver.ToolName {
				t.Fatalf("tools/list: %v %+v", err, tools)
			}
			doc, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "toolscript://docs/luau"}})
			if err != nil || len(doc.Contents) != 1 {
				t.Fatalf("resources/read: %v %+v", err, doc)
			}
			if out := run(t, c, "return 6 * 7", nil); string(out.Result) != "42" || out.Error != nil {
				t.Errorf("result %s, error %+v", out.Result, out.Error)
			}

			var mu sync.Mutex
			var seen []float64
			c.OnNotification(func(n mcp.JSONRPCNotification) {
				if n.Method == string(mcp.MethodNotificationProgress) {
					mu.Lock()
					seen = append(seen, n.Params.AdditionalFields["progress"].(float64))
					mu.Unlock()
				}
			})
			script := `for i = 1, 200 do local t = os.clock() while os.clock() - t < 0.0002 do end progress(i, 200) end return "done"`
			if out := run(t, c, script, &mcp.Meta{ProgressToken: "p1"}); string(out.Result) != `"done"` {
				t.Fatalf("result %s, error %+v", out.Result, out.Error)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) == 0 || seen[len(seen)-1] != 200 || !slices.IsSorted(seen) {
				t.Errorf("progress notifications before the response: %v", seen)
			}
		})
	}
}

// post sends one JSON-RPC message as user sub (no token when empty) with
// the session id given, and returns the response.
func (h *hostedServer) post(t *testing.T, sub, session, body string) *http.Response {
	t.Helper()
	return h.send(t, http.MethodPost, sub, session, body)
}

func (h *hostedServer) send(t *testing.T, method, sub, session, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(method, h.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if sub != "" {
		req.Header.Set("Authorization", "Bearer "+h.token(t, sub))
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

const initialize = `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

func cancel(id string) string {
	return `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"` + id + `"}}`
}

// response returns the response among the messages, skipping notifications.
func response(t *testing.T, msgs <-chan map[string]any) map[string]any {
	t.Helper()
	for {
		if m := testrpc.Next(t, msgs); m["method"] == nil {
			return m
		}
	}
}

// ended checks that a response ends without a JSON-RPC response (the
// request was cancelled): notifications only.
func ended(t *testing.T, msgs <-chan map[string]any) {
	t.Helper()
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				return
			}
			if m["method"] == nil {
				t.Errorf("a cancelled request was answered: %v", m)
			}
		case <-time.After(time.Minute):
			t.Fatal("the response did not end")
		}
	}
}

// busy is a script that reports progress until it is stopped.
const busy = `local i = 0 while true do i += 1 if i % 20000 == 0 then progress(i) end end`

// errorKind returns the error kind of a tools/call response ("" for none).
func errorKind(t *testing.T, m map[string]any) string {
	t.Helper()
	res, ok := m["result"].(map[string]any)
	if !ok {
		t.Fatalf("not a result: %v", m)
	}
	sc, _ := res["structuredContent"].(map[string]any)
	e, _ := sc["error"].(map[string]any)
	kind, _ := e["kind"].(string)
	return kind
}

// TestHTTPSessionsBelongToTheirUser: a session id is refused to every user
// but the one who opened it, for requests and for DELETE; a stateless
// server issues none.
func TestHTTPSessionsBelongToTheirUser(t *testing.T) {
	h := startHosted(t, hostedOptions{})
	resp := h.post(t, "alice", "", initialize)
	session := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || session == "" {
		t.Fatalf("initialize: status %d, session %q", resp.StatusCode, session)
	}
	if resp := h.post(t, "alice", session, testrpc.ToolCall("1", "return 1")); resp.StatusCode != http.StatusOK {
		t.Errorf("alice in her session: status %d", resp.StatusCode)
	}
	if resp := h.post(t, "mallory", session, testrpc.ToolCall("1", "return 1")); resp.StatusCode != http.StatusNotFound {
		t.Errorf("mallory in alice's session: status %d, want 404", resp.StatusCode)
	}
	if resp := h.send(t, http.MethodDelete, "mallory", session, ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("mallory ends alice's session: status %d, want 404", resp.StatusCode)
	}
	if resp := h.post(t, "alice", "ts-unknown", testrpc.ToolCall("1", "return 1")); resp.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown session: status %d, want 404", resp.StatusCode)
	}
	if resp := h.send(t, http.MethodDelete, "alice", session, ""); resp.StatusCode != http.StatusOK {
		t.Errorf("alice ends her session: status %d", resp.StatusCode)
	}
	if resp := h.post(t, "alice", session, testrpc.ToolCall("1", "return 1")); resp.StatusCode != http.StatusNotFound {
		t.Errorf("an ended session: status %d, want 404", resp.StatusCode)
	}
	if resp := h.send(t, http.MethodGet, "alice", "", ""); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: status %d, want 405 (no stream)", resp.StatusCode)
	}

	stateless := startHosted(t, hostedOptions{stateless: true})
	if resp := stateless.post(t, "alice", "", initialize); resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") != "" {
		t.Errorf("stateless initialize: status %d, session %q", resp.StatusCode, resp.Header.Get("Mcp-Session-Id"))
	}
}

// TestHTTPCancellation: notifications/cancelled stops a running call of
// the same user (and session), which gets no response; the same id from
// another user, or from another session of the same user, stops nothing.
func TestHTTPCancellation(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		t.Run(fmt.Sprintf("stateless=%v", stateless), func(t *testing.T) {
			h := startHosted(t, hostedOptions{stateless: stateless})
			session, other := "", ""
			if !stateless {
				session = h.post(t, "alice", "", initialize).Header.Get("Mcp-Session-Id")
				other = h.post(t, "alice", "", initialize).Header.Get("Mcp-Session-Id")
			}
			msgs := testrpc.Messages(h.post(t, "alice", session, testrpc.ToolCall("c1", busy)))
			testrpc.Next(t, msgs) // a progress notification: the script runs

			if resp := h.post(t, "mallory", "", cancel("c1")); resp.StatusCode != http.StatusAccepted {
				t.Errorf("mallory's cancellation: status %d", resp.StatusCode)
			}
			if !stateless {
				h.post(t, "alice", other, cancel("c1"))
			}
			// Still running: it reports progress again.
			if m := testrpc.Next(t, msgs); m["method"] != string(mcp.MethodNotificationProgress) {
				t.Fatalf("after the others' cancellations: %v", m)
			}
			h.post(t, "alice", session, cancel("c1"))
			ended(t, msgs)
		})
	}
}

// TestHTTPMetaAuthIsolation: each call's _meta.auth reaches that call's
// Prepare, and through it its script, and no other: two users call at
// once, each with credentials of their own.
func TestHTTPMetaAuthIsolation(t *testing.T) {
	var mu sync.Mutex
	seen := map[string][]string{} // by subject: the _meta.auth values seen
	h := startHosted(t, hostedOptions{maxRunning: 4, prepare: func(_ context.Context, c *mcpserver.Call) error {
		mu.Lock()
		seen[c.User.Subject] = append(seen[c.User.Subject], string(c.MetaAuth))
		mu.Unlock()
		// The script gets what its call brought, and returns it.
		c.Script.Args = []string{c.User.Subject, string(c.MetaAuth)}
		return nil
	}})
	users := []string{"alice", "bob"}
	const calls = 40
	var wg sync.WaitGroup
	for _, user := range users {
		c := h.connect(t, user)
		for i := range calls {
			wg.Go(func() {
				secret := fmt.Sprintf(`{"petstore":{"type":"bearer","token":"%s-%d"}}`, user, i)
				var meta map[string]any
				json.Unmarshal([]byte(secret), &meta)
				res, err := c.CallTool(testwait.Context(t), mcp.CallToolRequest{Params: mcp.CallToolParams{
					Name: mcpserver.ToolName, Arguments: map[string]any{"script": "return {...}"},
					Meta: &mcp.Meta{AdditionalFields: map[string]any{"auth": meta}}}})
				if err != nil {
					t.Errorf("%s: %v", user, err)
					return
				}
				b, _ := json.Marshal(res.StructuredContent)
				var out struct{ Result []string }
				json.Unmarshal(b, &out)
				var got any
				if len(out.Result) == 2 {
					json.Unmarshal([]byte(out.Result[1]), &got)
				}
				if len(out.Result) != 2 || out.Result[0] != user || !reflect.DeepEqual(got, meta) {
					t.Errorf("%s's call %d saw %q", user, i, out.Result)
				}
			})
		}
	}
	wg.Wait()
	mu.Lock()
	for _, user := range users {
		if len(seen[user]) != calls {
			t.Errorf("%s: %d calls prepared, want %d", user, len(seen[user]), calls)
		}
		for _, v := range seen[user] {
			if !strings.Contains(v, `"token":"`+user+"-") {
				t.Errorf("%s's call was prepared with %s", user, v)
			}
		}
	}
	mu.Unlock()
	// A call without _meta.auth has none.
	c := h.connect(t, "carol")
	if out := run(t, c, "return select('#', ...), select(2, ...)", nil); string(out.Result) != "2" {
		t.Errorf("without _meta.auth: %s", out.Result)
	}
}

// TestHTTPUserDirectories: with io enabled, each user works in a directory
// of their own, and sees nothing of another's.
func TestHTTPUserDirectories(t *testing.T) {
	dir := t.TempDir()
	h := startHosted(t, hostedOptions{ioDir: dir})
	alice, bob := h.connect(t, "alice"), h.connect(t, "bob")
	if out := run(t, alice, `local f = io.open("secret.txt", "w") f:write("alice's") f:close() return io.list()`, nil); string(out.Result) != `["secret.txt"]` {
		t.Fatalf("alice: %s %+v", out.Result, out.Error)
	}
	if out := run(t, bob, `return io.list()`, nil); string(out.Result) != `{}` && string(out.Result) != `[]` {
		t.Errorf("bob lists %s", out.Result)
	}
	if out := run(t, bob, `return io.open("secret.txt")`, nil); out.Error == nil {
		t.Errorf("bob opened alice's file: %s", out.Result)
	}
	aliceDir := auth.User{Issuer: h.issuer.URL, Subject: "alice"}.DirName()
	for _, path := range []string{"../" + aliceDir + "/secret.txt", "/" + aliceDir + "/secret.txt"} {
		if out := run(t, bob, fmt.Sprintf(`local f = io.open(%q) return f:read("a")`, path), nil); out.Error == nil || strings.Contains(string(out.Result), "alice") {
			t.Errorf("bob read %s: %s", path, out.Result)
		}
	}
	if out := run(t, bob, `os.remove("../`+aliceDir+`/secret.txt")`, nil); out.Error == nil {
		t.Error("bob removed alice's file")
	}
	b, err := os.ReadFile(filepath.Join(dir, aliceDir, "secret.txt"))
	if err != nil || string(b) != "alice's" {
		t.Errorf("alice's file on disk: %q %v", b, err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != aliceDir {
		t.Errorf("the io directory holds %v, want alice's directory only", entries)
	}
}

// TestHTTPPerUserSlots: a user with all their slots busy gets a JSON-RPC
// error after the queue wait; another user is served meanwhile.
func TestHTTPPerUserSlots(t *testing.T) {
	h := startHosted(t, hostedOptions{stateless: true, maxRunning: 4, perUser: 1, queueWait: 100 * time.Millisecond})
	msgs := testrpc.Messages(h.post(t, "alice", "", testrpc.ToolCall("long", busy)))
	testrpc.Next(t, msgs) // alice's slot is taken

	m := response(t, testrpc.Messages(h.post(t, "alice", "", testrpc.ToolCall("second", "return 1"))))
	e, _ := m["error"].(map[string]any)
	if e == nil || !strings.Contains(fmt.Sprint(e["message"]), "too many executions at once for this user") {
		t.Errorf("alice's second call: %v", m)
	}
	if kind := errorKind(t, response(t, testrpc.Messages(h.post(t, "bob", "", testrpc.ToolCall("b", "return 1"))))); kind != "" {
		t.Errorf("bob's call failed: %s", kind)
	}
	if got := counter(t, h.metrics, "toolscript_limit_refusals_total", "limit", metrics.LimitUserSlots); got != 1 {
		t.Errorf("%v user_slots refusals counted, want 1", got)
	}
	h.post(t, "alice", "", cancel("long"))
	ended(t, msgs)
}

// counter returns the value of a counter with one label.
func counter(t *testing.T, m *metrics.Metrics, name, label, value string) float64 {
	t.Helper()
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, metric := range f.GetMetric() {
			for _, l := range metric.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return metric.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestHTTPStop: Stop ends the running scripts, and their calls are
// answered.
func TestHTTPStop(t *testing.T) {
	h := startHosted(t, hostedOptions{stateless: true})
	msgs := testrpc.Messages(h.post(t, "alice", "", testrpc.ToolCall("s", busy)))
	testrpc.Next(t, msgs)
	h.srv.Stop()
	if kind := errorKind(t, response(t, msgs)); kind != "timeout" {
		t.Errorf("a stopped script's call ended with kind %q", kind)
	}
}

// TestHTTPBodyCap: the transport refuses a body larger than the largest
// request, even without the hosted handler's cap in front.
func TestHTTPBodyCap(t *testing.T) {
	h := startHosted(t, hostedOptions{stateless: true, noHosted: true, maxScript: 10})
	big := testrpc.ToolCall("big", strings.Repeat("x", int(h.srv.MaxRequestBytes())))
	req, _ := http.NewRequest(http.MethodPost, h.url, bytes.NewReader([]byte(big)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("status %d, want 413", resp.StatusCode)
	}
}

// TestHTTPCancelledBeforeAnyOutput: a call cancelled before anything was
// written on its response gets 202 Accepted and no body.
func TestHTTPCancelledBeforeAnyOutput(t *testing.T) {
	h := startHosted(t, hostedOptions{stateless: true, maxRunning: 1, queueWait: time.Minute})
	// The only slot is taken: the second call waits for it, having
	// written nothing.
	first := testrpc.Messages(h.post(t, "alice", "", testrpc.ToolCall("first", busy)))
	testrpc.Next(t, first)
	waiting := make(chan *http.Response, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, h.url, strings.NewReader(`{"jsonrpc":"2.0","id":"second","method":"tools/call","params":{"name":"execute_script","arguments":{"script":"return 1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+h.token(t, "alice"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			close(waiting)
			return
		}
		waiting <- resp
	}()
	// Cancel the second once the core holds it (waiting for its slot).
	ctx, cancelWait := context.WithTimeout(context.Background(), time.Minute)
	defer cancelWait()
	if err := h.srv.WaitTrackedCalls(ctx, func(calls int) bool { return calls >= 2 }); err != nil {
		t.Fatalf("the second call was never tracked: %v", err)
	}
	h.post(t, "alice", "", cancel("second"))
	resp := <-waiting
	if resp == nil {
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusAccepted || len(body) != 0 {
		t.Errorf("status %d, body %q; want 202 and none", resp.StatusCode, body)
	}
	h.post(t, "alice", "", cancel("first"))
	ended(t, first)
}

// failingBody is a request body that cannot be read.
type failingBody struct{}

func (failingBody) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }

// TestHTTPMessageFromContext: a message the handler before decoded
// (hosted) is taken from the context, and the body is not read again;
// without one, the body is read; either way the transport's bound holds.
func TestHTTPMessageFromContext(t *testing.T) {
	rt := testruntime.New(t, luau.Config{PoolSize: 1})
	srv, err := mcpserver.New(mcpserver.Config{Runtime: rt, ErrorLog: io.Discard, MaxScriptBytes: 10})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := srv.HTTPHandler(mcpserver.HTTPConfig{Stateless: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	call := testrpc.ToolCall("7", "return 42")
	for _, c := range []struct {
		name    string
		message string // decoded into the context; "" for none
		status  int
		want    string
	}{
		{"decoded before", call, http.StatusOK, `"structuredContent":{"result":42`},
		{"read here", "", http.StatusBadRequest, "reading the request body failed"},
		{"decoded before, over the bound", testrpc.ToolCall("8", strings.Repeat("x", int(srv.MaxRequestBytes()))),
			http.StatusRequestEntityTooLarge, "request body too large"},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/mcp", io.NopCloser(failingBody{}))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			ctx := auth.WithUser(req.Context(), hosted.Anonymous())
			if c.message != "" {
				ctx = mcpserver.WithMessage(ctx, mcpserver.DecodeMessage([]byte(c.message)))
			}
			rec := httptest.NewRecorder()
			tr.ServeHTTP(rec, req.WithContext(ctx))
			if rec.Code != c.status || !strings.Contains(rec.Body.String(), c.want) {
				t.Errorf("%d %s, want %d and %q", rec.Code, rec.Body, c.status, c.want)
			}
		})
	}
}
