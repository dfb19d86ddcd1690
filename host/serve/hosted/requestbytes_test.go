package hosted_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/serve/auth"
	"github.com/toolscript/toolscript/host/serve/auth/authtest"
	"github.com/toolscript/toolscript/host/serve/hosted"
	"github.com/toolscript/toolscript/host/serve/metrics"
	"github.com/toolscript/toolscript/internal/testwait"
)

// TestRequestBytesBounded: the requests to /mcp being handled are held
// within their user's budget and the server's: past the user's a request
// gets 429 (413 when it alone is more than the budget), past the server's
// 503, each with Retry-After, before the MCP handler sees it; a request
// answered gives its bytes back.
func TestRequestBytesBounded(t *testing.T) {
	issuer := authtest.NewIssuer(t, authtest.Options{})
	a, err := auth.New(context.Background(), auth.Config{Issuer: issuer.URL, Audience: issuer.Audience, HTTPClient: issuer.Client(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	entered, unblock := make(chan struct{}, 8), make(chan struct{})
	blocking := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		entered <- struct{}{}
		<-unblock
	})
	m := metrics.New(hosted.AuthReasons())
	// A body of 10,000 bytes of one string weighs 74,000 or so: two fit a
	// user's budget, three the server's.
	h, err := hosted.New(hosted.Config{MCP: blocking, Auth: a, MaxBodyBytes: 1 << 20, Metrics: m,
		MaxRequestBytesPerUser: 150_000, MaxRequestBytesTotal: 230_000})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	body := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"pad":"` + strings.Repeat("x", 10_000) + `"}}}`
	post := func(sub, body string) <-chan *http.Response {
		out := make(chan *http.Response, 1)
		req, _ := http.NewRequestWithContext(testwait.Context(t), http.MethodPost, srv.URL+hosted.PathMCP, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+issuer.Token(t, "ES256", sub))
		go func() {
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				resp = &http.Response{Body: http.NoBody}
			}
			out <- resp
		}()
		return out
	}
	answered := func(what string, resps <-chan *http.Response, status int) {
		t.Helper()
		resp := <-resps
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != status || resp.Header.Get("Retry-After") != "1" {
			t.Errorf("%s: status %d, Retry-After %q; want %d and 1", what, resp.StatusCode, resp.Header.Get("Retry-After"), status)
		}
	}

	answered("a request heavier than a user's budget", post("alice", `{"pad":[`+strings.TrimSuffix(strings.Repeat("0,", 600), ",")+`]}`), http.StatusRequestEntityTooLarge)
	first := post("alice", body)
	<-entered
	second := post("alice", body)
	<-entered
	answered("alice's third request", post("alice", body), http.StatusTooManyRequests)
	third := post("bob", body)
	<-entered
	answered("bob's second request, past the server's budget", post("bob", body), http.StatusServiceUnavailable)
	close(unblock)
	for _, resps := range []<-chan *http.Response{first, second, third} {
		resp := <-resps
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("a request within the budgets: status %d", resp.StatusCode)
		}
	}
	scrape := httptest.NewRecorder()
	m.Handler().ServeHTTP(scrape, httptest.NewRequest(http.MethodGet, hosted.PathMetrics, nil))
	if want := `toolscript_limit_refusals_total{limit="request_bytes"} 3`; !strings.Contains(scrape.Body.String(), want) {
		t.Errorf("metrics lack %q", want)
	}
	// Given back: alice's request goes through again.
	unblock = make(chan struct{})
	close(unblock)
	if resp := <-post("alice", body); resp.StatusCode != http.StatusOK {
		t.Errorf("alice's request once hers were answered: status %d", resp.StatusCode)
	}
}
