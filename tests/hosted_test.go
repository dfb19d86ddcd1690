package tests

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolscript/toolscript/host/serve/auth"
	"github.com/toolscript/toolscript/host/serve/auth/authtest"
	"github.com/toolscript/toolscript/internal/testcert"
	"github.com/toolscript/toolscript/internal/testclient"
	"github.com/toolscript/toolscript/internal/testrpc"
	"github.com/toolscript/toolscript/internal/testwait"
)

// These tests run `toolscript serve --http` as a process, with a real
// issuer (authtest, over plain HTTP on loopback, which the server accepts
// there), and talk to it as clients do.

// lineWatcher collects a process's standard error and hands each line to
// the waiters.
type lineWatcher struct {
	mu      sync.Mutex
	buf     strings.Builder
	partial string
	lines   []string
	changed chan struct{}
}

func newLineWatcher() *lineWatcher { return &lineWatcher{changed: make(chan struct{})} }

func (w *lineWatcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	text := w.partial + string(p)
	parts := strings.Split(text, "\n")
	w.partial = parts[len(parts)-1]
	w.lines = append(w.lines, parts[:len(parts)-1]...)
	close(w.changed)
	w.changed = make(chan struct{})
	return len(p), nil
}

func (w *lineWatcher) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// wait returns the first JSON line whose msg is msg, waiting for it up to
// a minute or until the process exits.
func (w *lineWatcher) wait(t *testing.T, msg string, exited <-chan struct{}) map[string]any {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		w.mu.Lock()
		for _, line := range w.lines {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == msg {
				w.mu.Unlock()
				return m
			}
		}
		changed := w.changed
		w.mu.Unlock()
		select {
		case <-changed:
		case <-exited:
			t.Fatalf("the server exited before it logged %q:\n%s", msg, w.String())
		case <-timeout:
			t.Fatalf("no %q line in a minute:\n%s", msg, w.String())
		}
	}
}

// hostedProcess is `toolscript serve --http` running.
type hostedProcess struct {
	url    string // of /mcp
	base   string
	cmd    *exec.Cmd
	stderr *lineWatcher
	exited chan struct{}
	err    error // the exit error, set before exited is closed
}

// startServe runs `toolscript serve --http 127.0.0.1:0 ARGS` in dir and
// waits until it serves.
func startServe(t *testing.T, dir string, args ...string) *hostedProcess {
	t.Helper()
	return startServeCmd(t, exec.Command(binary, append([]string{"serve", "--http", "127.0.0.1:0"}, args...)...), dir)
}

// startServeCmd runs cmd, a `toolscript serve --http 127.0.0.1:0`, in dir
// and waits until it serves.
func startServeCmd(t *testing.T, cmd *exec.Cmd, dir string) *hostedProcess {
	t.Helper()
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TOOLSCRIPT_IO_DIR=")
	p := &hostedProcess{cmd: cmd, stderr: newLineWatcher(), exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Error("the server did not stop on SIGTERM")
		}
		if t.Failed() {
			t.Logf("server stderr:\n%s", p.stderr.String())
		}
	})
	ready := p.stderr.wait(t, "ready", p.exited)
	p.url, _ = ready["url"].(string)
	p.base = strings.TrimSuffix(p.url, "/mcp")
	return p
}

// issuerArgs starts an issuer and returns it with the flags that trust it.
func issuerArgs(t *testing.T) (*authtest.Issuer, []string) {
	iss := authtest.NewIssuer(t, authtest.Options{PlainHTTP: true})
	return iss, []string{"--auth-authority", iss.URL, "--auth-audience", iss.Audience}
}

// connectHTTP returns an initialized mcp-go client of the hosted server at
// url, with a bearer token unless token is empty.
func connectHTTP(t *testing.T, url, token string, opts ...transport.StreamableHTTPCOption) *client.Client {
	t.Helper()
	c, err := testclient.HTTP(t, url, token, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// rpc posts one JSON-RPC message to /mcp and returns the response.
func rpc(t *testing.T, hc *http.Client, url, token, body string, header ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// structured returns the structured content of a tools/call response,
// skipping notifications.
func structured(t *testing.T, msgs <-chan map[string]any) execResult {
	t.Helper()
	for {
		m := testrpc.Next(t, msgs)
		if m["method"] != nil {
			continue
		}
		var out execResult
		res, _ := m["result"].(map[string]any)
		b, _ := json.Marshal(res["structuredContent"])
		if res == nil || json.Unmarshal(b, &out) != nil {
			t.Fatalf("not a tool result: %v", m)
		}
		return out
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestHostedExecute: a valid token runs scripts over HTTP; no token gets
// 401 pointing to the metadata; the probes and the metrics answer.
func TestHostedExecute(t *testing.T) {
	t.Parallel()
	iss, args := issuerArgs(t)
	p := startServe(t, t.TempDir(), args...)

	c := connectHTTP(t, p.url, iss.Token(t, "RS256", "alice"))
	tools, err := c.ListTools(testwait.Context(t), mcp.ListToolsRequest{})
	if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != "execute_script" {
		t.Fatalf("tools/list: %v %+v", err, tools)
	}
	if tools.Tools[0].Annotations.ReadOnlyHint == nil || !*tools.Tools[0].Annotations.ReadOnlyHint {
		t.Error("io is on: the hosted mode has it off by default")
	}
	_, out := callScript(t, testwait.Context(t), c, map[string]any{"script": `print("hi") return {sum = 1 + 2}`})
	if string(out.Result) != `{"sum":3}` || len(out.Logs) != 1 || out.Error != nil {
		t.Errorf("result %s, logs %v, error %+v", out.Result, out.Logs, out.Error)
	}

	resp := rpc(t, nil, p.url, "", testrpc.ToolCall("1", "return 1"))
	if resp.StatusCode != http.StatusUnauthorized ||
		!strings.Contains(resp.Header.Get("WWW-Authenticate"), `resource_metadata="`+p.base+auth.MetadataPath+`"`) {
		t.Errorf("no token: status %d, WWW-Authenticate %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	resp = rpc(t, nil, p.url, "not.a.token", testrpc.ToolCall("1", "return 1"))
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
		t.Errorf("a bad token: status %d, WWW-Authenticate %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	if status, body := get(t, p.base+auth.MetadataPath); status != 200 || !strings.Contains(body, iss.URL) {
		t.Errorf("metadata: %d %s", status, body)
	}
	if status, _ := get(t, p.base+"/healthz"); status != 200 {
		t.Errorf("/healthz: %d", status)
	}
	if status, body := get(t, p.base+"/readyz"); status != 200 {
		t.Errorf("/readyz: %d %s", status, body)
	}
	status, body := get(t, p.base+"/metrics")
	if status != 200 || !strings.Contains(body, `toolscript_executions_total{kind="",outcome="ok"} 1`) ||
		!strings.Contains(body, `toolscript_auth_failures_total{reason="missing"} 1`) {
		t.Errorf("/metrics: %d\n%s", status, body)
	}
	// The access log has a line per request, with the user and never the script.
	line := p.stderr.wait(t, "request", p.exited)
	if line["path"] != "/mcp" {
		t.Errorf("access log line %v", line)
	}
	if strings.Contains(p.stderr.String(), "1 + 2") {
		t.Error("the access log holds script text")
	}
}

// TestHostedScopes: a token without a required scope gets 403.
func TestHostedScopes(t *testing.T) {
	t.Parallel()
	iss, args := issuerArgs(t)
	p := startServe(t, t.TempDir(), append(args, "--auth-scopes", "toolscript.run")...)
	claims := iss.Claims("alice")
	noScope := authtest.Sign(t, iss.Key(t, "ES256"), claims)
	resp := rpc(t, nil, p.url, noScope, testrpc.ToolCall("1", "return 1"))
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="insufficient_scope"`) {
		t.Errorf("missing scope: status %d, WWW-Authenticate %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	claims["scope"] = "openid toolscript.run"
	if resp := rpc(t, nil, p.url, authtest.Sign(t, iss.Key(t, "ES256"), claims), testrpc.ToolCall("1", "return 1")); resp.StatusCode != http.StatusOK {
		t.Errorf("with the scope: status %d", resp.StatusCode)
	}
}

// TestHostedRateLimit: past the rate, 429 with Retry-After; another user
// is not concerned.
func TestHostedRateLimit(t *testing.T) {
	t.Parallel()
	iss, args := issuerArgs(t)
	p := startServe(t, t.TempDir(), append(args, "--rate-limit", "2", "--stateless")...)
	alice := iss.Token(t, "ES256", "alice")
	for i := range 2 {
		if resp := rpc(t, nil, p.url, alice, testrpc.ToolCall(fmt.Sprint(i), "return 1")); resp.StatusCode != http.StatusOK {
			t.Fatalf("call %d: status %d", i, resp.StatusCode)
		}
	}
	resp := rpc(t, nil, p.url, alice, testrpc.ToolCall("3", "return 1"))
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("past the rate: status %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	// Listing tools runs nothing, and is not counted.
	if resp := rpc(t, nil, p.url, alice, `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`); resp.StatusCode != http.StatusOK {
		t.Errorf("tools/list past the rate: status %d", resp.StatusCode)
	}
	if resp := rpc(t, nil, p.url, iss.Token(t, "ES256", "bob"), testrpc.ToolCall("1", "return 1")); resp.StatusCode != http.StatusOK {
		t.Errorf("bob: status %d", resp.StatusCode)
	}
}

// TestHostedOrigin: a browser on an origin not allowed gets 403, even with
// a valid token; an allowed one is served.
func TestHostedOrigin(t *testing.T) {
	t.Parallel()
	iss, args := issuerArgs(t)
	p := startServe(t, t.TempDir(), append(args, "--allowed-origins", "https://app.example.com")...)
	token := iss.Token(t, "ES256", "alice")
	if resp := rpc(t, nil, p.url, token, testrpc.ToolCall("1", "return 1"), "Origin", "https://evil.example.com"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("another origin: status %d, want 403", resp.StatusCode)
	}
	resp := rpc(t, nil, p.url, token, testrpc.ToolCall("1", "return 1"), "Origin", "https://app.example.com")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example.com" {
		t.Errorf("the allowed origin: status %d, headers %v", resp.StatusCode, resp.Header)
	}
}

// TestHostedTLS: --tls-cert and --tls-key serve HTTPS.
func TestHostedTLS(t *testing.T) {
	t.Parallel()
	iss, args := issuerArgs(t)
	cert, key, pool := testcert.SelfSigned(t)
	p := startServe(t, t.TempDir(), append(args, "--tls-cert", cert, "--tls-key", key)...)
	if !strings.HasPrefix(p.url, "https://") {
		t.Fatalf("serving %s", p.url)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	c := connectHTTP(t, p.url, iss.Token(t, "EdDSA", "alice"), transport.WithHTTPBasicClient(hc))
	if _, out := callScript(t, testwait.Context(t), c, map[string]any{"script": "return 'secure'"}); string(out.Result) != `"secure"` {
		t.Errorf("result %s", out.Result)
	}
}

// TestHostedUserDirectories: with io enabled, users do not see each
// other's files.
func TestHostedUserDirectories(t *testing.T) {
	t.Parallel()
	iss, args := issuerArgs(t)
	dir := t.TempDir()
	p := startServe(t, dir, append(args, "--io-dir", "files")...)
	alice := connectHTTP(t, p.url, iss.Token(t, "ES256", "alice"))
	bob := connectHTTP(t, p.url, iss.Token(t, "ES256", "bob"))
	ctx := testwait.Context(t)
	if _, out := callScript(t, ctx, alice, map[string]any{"script": `local f = io.open("notes.txt", "w") f:write("alice's") f:close() return io.list()`}); string(out.Result) != `["notes.txt"]` {
		t.Fatalf("alice: %s %+v", out.Result, out.Error)
	}
	if _, out := callScript(t, ctx, bob, map[string]any{"script": `return #io.list()`}); string(out.Result) != "0" {
		t.Errorf("bob sees %s entries", out.Result)
	}
	aliceDir := auth.User{Issuer: iss.URL, Subject: "alice"}.DirName()
	if _, out := callScript(t, ctx, bob, map[string]any{"script": `return io.open("../` + aliceDir + `/notes.txt"):read("a")`}); out.Error == nil {
		t.Errorf("bob read alice's file: %s", out.Result)
	}
	b, err := os.ReadFile(filepath.Join(dir, "files", aliceDir, "notes.txt"))
	if err != nil || string(b) != "alice's" {
		t.Errorf("alice's file: %q %v", b, err)
	}
}

// TestHostedGracefulShutdown: on SIGTERM a running script finishes and is
// answered, and the server exits 0; past the grace period a script is
// stopped, its call answered, and the server exits 0 too.
func TestHostedGracefulShutdown(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		grace  string
		script string
		kind   string
	}{
		{"finishes", "1m", `progress(1) local t = os.clock() while os.clock() - t < 0.5 do end return "finished"`, ""},
		{"grace over", "200ms", `progress(1) while true do end`, "timeout"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			iss, args := issuerArgs(t)
			p := startServe(t, t.TempDir(), append(args, "--shutdown-grace", c.grace, "--stateless")...)
			msgs := testrpc.Messages(rpc(t, nil, p.url, iss.Token(t, "ES256", "alice"), testrpc.ToolCall("long", c.script)))
			if m := testrpc.Next(t, msgs); m["method"] != "notifications/progress" {
				t.Fatalf("first message %v", m)
			}
			p.cmd.Process.Signal(syscall.SIGTERM)
			out := structured(t, msgs)
			kind := ""
			if out.Error != nil {
				kind = out.Error.Kind
			}
			if kind != c.kind || (c.kind == "" && string(out.Result) != `"finished"`) {
				t.Errorf("result %s, error %+v", out.Result, out.Error)
			}
			<-p.exited
			if p.err != nil {
				t.Errorf("exit: %v", p.err)
			}
			p.stderr.wait(t, "stopped", nil)
		})
	}
}

// TestHostedFailsClosed: without an issuer, serve refuses to listen beyond
// loopback unless told, and hosted flags need --http.
func TestHostedFailsClosed(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--http", ":0"}, "--insecure-no-auth"},
		{[]string{"serve", "--http", "0.0.0.0:0"}, "without authentication"},
		{[]string{"serve", "--rate-limit", "5"}, "--rate-limit: only with --http"},
		{[]string{"serve", "--http", "127.0.0.1:0", "--tls-cert", "c.pem"}, "--tls-key"},
		{[]string{"serve", "--http", "127.0.0.1:0", "--auth-authority", "https://i.example.com"}, "audience"},
	} {
		_, stderr, status := toolscript(t, t.TempDir(), "", c.args...)
		if status != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: status %d, stderr %q (want %q)", c.args, status, stderr, c.want)
		}
	}
	// Loopback without authentication: served, with a warning.
	p := startServe(t, t.TempDir())
	if !strings.Contains(p.stderr.String(), "authentication is off") {
		t.Errorf("no warning: %s", p.stderr.String())
	}
	connectURL(t, p.url)
	// A page on another site rebinding its name to 127.0.0.1 is refused.
	resp := rpc(t, nil, p.url, "", testrpc.ToolCall("1", "return 1"), "Host", "evil.example.com")
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a foreign Host on loopback: status %d, want 403", resp.StatusCode)
	}
}

// TestHostedMetricsAddress: with --metrics-addr, /metrics is served there
// (without a token) and no longer on the public address, which keeps
// serving /mcp and its probes.
func TestHostedMetricsAddress(t *testing.T) {
	t.Parallel()
	iss, args := issuerArgs(t)
	p := startServe(t, t.TempDir(), append(args, "--metrics-addr", "127.0.0.1:0")...)
	line := p.stderr.wait(t, "metrics", p.exited)
	metricsURL, _ := line["url"].(string)
	if !strings.HasPrefix(metricsURL, "http://127.0.0.1:") || strings.HasPrefix(metricsURL, p.base) {
		t.Fatalf("metrics url %q (public %s)", metricsURL, p.base)
	}
	c := connectHTTP(t, p.url, iss.Token(t, "RS256", "alice"))
	if _, out := callScript(t, testwait.Context(t), c, map[string]any{"script": `return 1`}); string(out.Result) != "1" {
		t.Fatalf("execute_script: %s %+v", out.Result, out.Error)
	}
	if status, body := get(t, metricsURL); status != 200 || !strings.Contains(body, `toolscript_executions_total{kind="",outcome="ok"} 1`) {
		t.Errorf("%s: %d\n%s", metricsURL, status, body)
	}
	if status, _ := get(t, p.base+"/metrics"); status != http.StatusNotFound {
		t.Errorf("the public /metrics: %d, want 404", status)
	}
	if status, _ := get(t, p.base+"/healthz"); status != 200 {
		t.Errorf("/healthz: %d", status)
	}
	if status, _ := get(t, strings.TrimSuffix(metricsURL, "/metrics")+"/mcp"); status != http.StatusNotFound {
		t.Errorf("the metrics address serves /mcp: %d", status)
	}
}
