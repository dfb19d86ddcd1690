package hosted_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolscript/toolscript/host/contract/limit"
	"github.com/toolscript/toolscript/host/serve/accesslog"
	"github.com/toolscript/toolscript/host/serve/auth"
	"github.com/toolscript/toolscript/host/serve/auth/authtest"
	"github.com/toolscript/toolscript/host/serve/hosted"
	"github.com/toolscript/toolscript/host/serve/metrics"
	"github.com/toolscript/toolscript/internal/syncbuf"
	"github.com/toolscript/toolscript/internal/testclient"
)

// mcpHandler is a real mcp-go streamable HTTP server, stateless, with one
// tool that answers with the directory name of the user its context
// carries, and records the outcome in the access log as the MCP layer
// will.
func mcpHandler() http.Handler {
	s := server.NewMCPServer("hosted-test", "1", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("whoami"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		u, ok := auth.UserFrom(ctx)
		if !ok {
			return mcp.NewToolResultError("no user in the context"), nil
		}
		accesslog.FromContext(ctx).SetOutcome("ok", "")
		return mcp.NewToolResultText(u.DirName()), nil
	})
	return server.NewStreamableHTTPServer(s, server.WithStateLess(true))
}

type fixture struct {
	issuer  *authtest.Issuer
	server  *httptest.Server
	metrics *metrics.Metrics
	logs    *syncbuf.Buffer
}

func newFixture(t testing.TB, withAuth bool, rate int, ready func(context.Context) error) *fixture {
	t.Helper()
	f, h := buildFixture(t, withAuth, rate, ready, 0)
	f.server = httptest.NewServer(h)
	t.Cleanup(f.server.Close)
	return f
}

// buildFixture returns the fixture's parts and its handler, not yet
// served; bodyTimeout 0 is the default.
func buildFixture(t testing.TB, withAuth bool, rate int, ready func(context.Context) error, bodyTimeout time.Duration) (*fixture, http.Handler) {
	t.Helper()
	f := &fixture{logs: &syncbuf.Buffer{}, metrics: metrics.New(hosted.AuthReasons())}
	logger := slog.New(slog.NewJSONHandler(f.logs, nil))
	cfg := hosted.Config{
		MCP:          mcpHandler(),
		MaxBodyBytes: 64 << 10,
		Metrics:      f.metrics,
		AccessLog:    logger,
		Ready:        ready,
		BodyTimeout:  bodyTimeout,
	}
	if withAuth {
		f.issuer = authtest.NewIssuer(t, authtest.Options{})
		a, err := auth.New(context.Background(), auth.Config{
			Issuer: f.issuer.URL, Audience: f.issuer.Audience, HTTPClient: f.issuer.Client(),
			Logger: logger, OnFailure: hosted.AuthFailureHook(f.metrics), OnThrottled: hosted.AuthThrottledHook(f.metrics),
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(a.Close)
		cfg.Auth = a
	}
	if rate > 0 {
		r, err := limit.NewRate[auth.User](rate)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Rate = r
	}
	h, err := hosted.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return f, h
}

// token returns a valid token for sub.
func (f *fixture) token(t testing.TB, sub string) string {
	return f.issuer.Token(t, "ES256", sub)
}

// connect returns an initialized mcp-go client that sends token (none
// when empty).
func (f *fixture) connect(t *testing.T, token string) (*client.Client, error) {
	t.Helper()
	return f.connectTo(t, f.server.URL, token)
}

// connectTo is connect to the server at url.
func (f *fixture) connectTo(t *testing.T, url, token string) (*client.Client, error) {
	t.Helper()
	return testclient.HTTP(t, url+hosted.PathMCP, token)
}

func whoami(ctx context.Context, c *client.Client) (string, error) {
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "whoami"}})
	if err != nil {
		return "", err
	}
	if res.IsError || len(res.Content) != 1 {
		return "", fmt.Errorf("tool error: %+v", res.Content)
	}
	return res.Content[0].(mcp.TextContent).Text, nil
}

// post sends one JSON-RPC message to /mcp as a stateless client does.
func (f *fixture) post(t *testing.T, token, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, f.server.URL+hosted.PathMCP, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := f.server.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

const callWhoami = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`
const listTools = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`

// TestUsersOverMCP: users reach the tool with their own identity, each
// with a directory name of their own, over a real MCP client and server,
// many calls at once.
func TestUsersOverMCP(t *testing.T) {
	f := newFixture(t, true, 0, nil)
	users := []string{"alice", "bob", "Alice", "carol|1"}
	var wg sync.WaitGroup
	for _, sub := range users {
		c, err := f.connect(t, f.token(t, sub))
		if err != nil {
			t.Fatalf("%s: %v", sub, err)
		}
		want := auth.User{Issuer: f.issuer.URL, Subject: sub}.DirName()
		for range 4 {
			wg.Go(func() {
				for range 10 {
					got, err := whoami(context.Background(), c)
					if err != nil {
						t.Errorf("%s: %v", sub, err)
						return
					}
					if got != want {
						t.Errorf("%s's call saw the directory %q, want %q", sub, got, want)
					}
				}
			})
		}
	}
	wg.Wait()

	// The access log has the user, the method, the tool and the outcome.
	var found bool
	for _, line := range f.logs.Lines() {
		var e map[string]any
		if json.Unmarshal([]byte(line), &e) != nil || e["msg"] != "request" || e["method"] != "tools/call" {
			continue
		}
		found = true
		if e["tool"] != "whoami" || e["outcome"] != "ok" || e["status"] != 200.0 || e["user"] == "" {
			t.Errorf("access log line %s", line)
		}
	}
	if !found {
		t.Errorf("no access log line for a tools/call: %s", f.logs.String())
	}
}

// TestRefusals: what a request the handler refuses gets, and how it shows
// in the access log and the metrics.
func TestRefusals(t *testing.T) {
	f := newFixture(t, true, 3, nil)
	alice, bob := f.token(t, "alice"), f.token(t, "bob")

	// Three calls a minute: the fourth is refused, with Retry-After.
	for i := range 3 {
		if resp := f.post(t, alice, callWhoami); resp.StatusCode != 200 {
			t.Fatalf("call %d: status %d", i, resp.StatusCode)
		}
	}
	resp := f.post(t, alice, callWhoami)
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("fourth call: status %d, want 429", resp.StatusCode)
	}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || s < 1 || s > 20 {
		t.Errorf("Retry-After %q", resp.Header.Get("Retry-After"))
	}
	// Other methods are not counted; other users have their own rate.
	if resp := f.post(t, alice, listTools); resp.StatusCode != 200 {
		t.Errorf("tools/list past the rate: status %d", resp.StatusCode)
	}
	if resp := f.post(t, bob, callWhoami); resp.StatusCode != 200 {
		t.Errorf("another user: status %d", resp.StatusCode)
	}

	tests := []struct {
		name    string
		token   string
		body    string
		status  int
		outcome string
		kind    string
	}{
		{name: "no token", body: callWhoami, status: 401, outcome: "unauthenticated", kind: "missing"},
		{name: "expired token", body: callWhoami, status: 401, outcome: "unauthenticated", kind: "expired",
			token: authtest.Sign(t, f.issuer.Key(t, "ES256"), expired(f.issuer.Claims("alice")))},
		{name: "body too large", token: bob, body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{"x":"` +
			strings.Repeat("a", 64<<10) + `"}}}`, status: 413, outcome: "too_large"},
		{name: "rate", token: alice, body: callWhoami, status: 429, outcome: "rate_limited"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.logs.Reset()
			resp := f.post(t, tt.token, tt.body)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.status)
			}
			line := f.accessLine(t)
			if line["outcome"] != tt.outcome || (tt.kind != "" && line["error_kind"] != tt.kind) {
				t.Errorf("access log line %v: want outcome %q, kind %q", line, tt.outcome, tt.kind)
			}
		})
	}

	scrape := f.get(t, hosted.PathMetrics)
	for _, want := range []string{
		`toolscript_auth_failures_total{reason="missing"} 1`,
		`toolscript_auth_failures_total{reason="expired"} 1`,
		`toolscript_limit_refusals_total{limit="rate"} 2`,
	} {
		if !strings.Contains(scrape, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// TestAuthFailuresBounded: past its bound on failed authentications, a
// client address gets 429 with Retry-After, counted as a refusal by the
// limit "auth_failures" and marked so in the access log; a valid token
// still passes.
func TestAuthFailuresBounded(t *testing.T) {
	f := newFixture(t, true, 0, nil)
	valid := f.token(t, "alice")
	if resp := f.post(t, valid, callWhoami); resp.StatusCode != 200 {
		t.Fatalf("a valid token: status %d", resp.StatusCode)
	}
	forged := authtest.Sign(t, authtest.Key{ID: f.issuer.Key(t, "ES256").ID, Alg: "ES256",
		Signer: f.issuer.GenerateKey(t, "ES256").Signer}, f.issuer.Claims("mallory"))
	for i := range auth.DefaultFailuresPerMinute {
		if resp := f.post(t, forged, callWhoami); resp.StatusCode != 401 {
			t.Fatalf("failure %d: status %d, want 401", i, resp.StatusCode)
		}
	}
	f.logs.Reset()
	resp := f.post(t, forged, callWhoami)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("past the bound: status %d, Retry-After %q; want 429, 1", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if line := f.accessLine(t); line["outcome"] != "rate_limited" || line["error_kind"] != metrics.LimitAuthFailures {
		t.Errorf("access log line %v: want outcome rate_limited, kind %s", line, metrics.LimitAuthFailures)
	}
	if resp := f.post(t, valid, callWhoami); resp.StatusCode != 200 {
		t.Errorf("the valid token past the bound: status %d", resp.StatusCode)
	}
	scrape := f.get(t, hosted.PathMetrics)
	for _, want := range []string{
		fmt.Sprintf(`toolscript_auth_failures_total{reason="signature"} %d`, auth.DefaultFailuresPerMinute),
		`toolscript_limit_refusals_total{limit="auth_failures"} 1`,
	} {
		if !strings.Contains(scrape, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestWithoutAuth(t *testing.T) {
	f := newFixture(t, false, 0, nil)
	c, err := f.connect(t, "")
	if err != nil {
		t.Fatal(err)
	}
	got, err := whoami(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if want := hosted.Anonymous().DirName(); got != want {
		t.Errorf("directory %q, want %q", got, want)
	}
	if resp, err := http.Get(f.server.URL + auth.MetadataPath); err != nil || resp.StatusCode != 404 {
		t.Errorf("metadata without auth: %v %v", resp.StatusCode, err)
	}
}

func TestProbes(t *testing.T) {
	var mu sync.Mutex
	var notReady error
	f := newFixture(t, true, 0, func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		return notReady
	})
	if body := f.get(t, hosted.PathHealth); body != "ok\n" {
		t.Errorf("/healthz: %q", body)
	}
	if body := f.get(t, hosted.PathReady); body != "ready\n" {
		t.Errorf("/readyz: %q", body)
	}
	mu.Lock()
	notReady = errors.New("specs not loaded")
	mu.Unlock()
	resp, err := http.Get(f.server.URL + hosted.PathReady)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !strings.Contains(string(body), "specs not loaded") {
		t.Errorf("/readyz when not ready: %d %q", resp.StatusCode, body)
	}
	if body := f.get(t, auth.MetadataPath); !strings.Contains(body, `"authorization_servers":["`+f.issuer.URL+`"]`) {
		t.Errorf("metadata: %s", body)
	}
	// Probes and scrapes stay out of the access log; other requests don't.
	f.logs.Reset()
	f.get(t, hosted.PathHealth)
	f.get(t, hosted.PathMetrics)
	if s := f.logs.String(); s != "" {
		t.Errorf("probes were logged: %s", s)
	}
	resp, _ = http.Get(f.server.URL + "/nothing")
	resp.Body.Close()
	if resp.StatusCode != 404 || len(f.logs.Lines()) != 1 {
		t.Errorf("unknown path: %d, log %q", resp.StatusCode, f.logs.String())
	}
}

func TestNewErrors(t *testing.T) {
	if _, err := hosted.New(hosted.Config{MaxBodyBytes: 1}); err == nil {
		t.Error("no MCP handler: no error")
	}
	if _, err := hosted.New(hosted.Config{MCP: http.NotFoundHandler()}); err == nil {
		t.Error("no body cap: no error")
	}
}

func (f *fixture) get(t *testing.T, path string) string {
	t.Helper()
	resp, err := http.Get(f.server.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: status %d (%s)", path, resp.StatusCode, body)
	}
	return string(body)
}

// accessLine returns the one access log line written since the last Reset.
func (f *fixture) accessLine(t *testing.T) map[string]any {
	t.Helper()
	var found []map[string]any
	for _, line := range f.logs.Lines() {
		var e map[string]any
		if json.Unmarshal([]byte(line), &e) == nil && e["msg"] == "request" {
			found = append(found, e)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d access log lines, want 1: %s", len(found), f.logs.String())
	}
	return found[0]
}

func expired(c jwt.MapClaims) jwt.MapClaims {
	c["exp"] = time.Now().Add(-time.Hour).Unix()
	return c
}
