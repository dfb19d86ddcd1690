// Package hostedload loads the hosted mode as `serve --http` serves it
// (host/app's assembly: the MCP server on the streamable HTTP transport,
// behind the hosted handler with authentication by a real issuer) with many
// clients running real scripts, and measures it. It is a package of its
// own so that its process holds nothing else: what the load leaves behind
// (goroutines, file descriptors, memory) is what the server left.
//
// TestLoad runs 64 clients and 20,000 executions by default;
// TOOLSCRIPT_LOAD_TOTAL sets another total (a smaller one for a quick run).
package hostedload

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/app"
	"github.com/toolscript/toolscript/host/config"
	"github.com/toolscript/toolscript/host/serve/auth/authtest"
	"github.com/toolscript/toolscript/host/serve/hosted"
	"github.com/toolscript/toolscript/tests/loadgen"
)

// server is the hosted mode serving on a loopback address.
type server struct {
	url    string // of /mcp
	addr   string
	issuer *authtest.Issuer
}

// serve starts the hosted mode as `serve --http --stateless` does (host/app
// assembles it), with authentication by a real issuer and maxConcurrent
// scripts at once, and stops it when the test ends.
func serve(t testing.TB, maxConcurrent int) *server {
	t.Helper()
	issuer := authtest.NewIssuer(t, authtest.Options{PlainHTTP: true})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := config.ResolveServer(nil, config.ServerFlags{
		HTTP: ln.Addr().String(), MaxConcurrent: maxConcurrent, QueueWait: 30 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	settings, err := config.Resolve(nil, config.Flags{NoIO: true}, func(string) string { return "" }, config.Hosted)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	log := &readyWriter{ready: make(chan struct{})}
	go func() {
		served <- app.Serve(ctx, app.ServeConfig{
			Server: srv, Settings: settings,
			Hosted: config.HostedFlags{Stateless: true, Auth: config.Auth{Authority: issuer.URL, Audience: issuer.Audience}},
			SDK:    app.SDKOptions{Stderr: io.Discard}, Version: "load", Stderr: log, Listener: ln,
		})
	}()
	t.Cleanup(func() {
		stop()
		if err := <-served; err != nil {
			t.Error(err)
		}
	})
	select {
	case <-log.ready:
	case err := <-served:
		served <- err
		t.Fatalf("the server stopped before it was ready: %v", err)
	}
	return &server{url: "http://" + ln.Addr().String() + hosted.PathMCP, addr: ln.Addr().String(), issuer: issuer}
}

// readyWriter is the server's log: it closes ready at the line that says
// the server listens.
type readyWriter struct {
	once  sync.Once
	ready chan struct{}
}

func (w *readyWriter) Write(p []byte) (int, error) {
	if strings.Contains(string(p), `"msg":"ready"`) {
		w.once.Do(func() { close(w.ready) })
	}
	return len(p), nil
}

// returnOne is the tools/call of `return 1`.
const returnOne = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_script","arguments":{"script":"return 1"}}}`

// wantResult is in the response of a successful returnOne.
const wantResult = `"structuredContent":{"result":1,"logs":[],"files_touched":[]}`

// execute is a loadgen client: it runs `return 1` with its token, and
// checks the result.
func execute(token string) func(context.Context, *loadgen.Client) (loadgen.Op, error) {
	return func(_ context.Context, c *loadgen.Client) (loadgen.Op, error) {
		return loadgen.Request(c, func(ctx context.Context, _ int) (*http.Request, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.BaseURL+hosted.PathMCP, strings.NewReader(returnOne))
			if err != nil {
				return nil, err
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
			req.Header.Set("Authorization", "Bearer "+token)
			return req, nil
		}, func(resp *http.Response, body []byte) error {
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("HTTP status %d", resp.StatusCode)
			}
			if !strings.Contains(string(body), wantResult) {
				var short json.RawMessage = body[:min(len(body), 200)]
				return fmt.Errorf("unexpected response %s", short)
			}
			return nil
		}), nil
	}
}

// snapshot returns what the process holds, its garbage collected and
// its free memory returned to the system.
func snapshot() loadgen.Process {
	runtime.GC()
	debug.FreeOSMemory()
	return loadgen.Snapshot()
}

// settled takes a snapshot once the process holds no more goroutines and
// files than want, or after 30 seconds: the goroutines of connections
// closed by the clients end a moment later.
func settled(want loadgen.Process) loadgen.Process {
	deadline := time.Now().Add(30 * time.Second)
	for {
		p := snapshot()
		if (p.Goroutines <= want.Goroutines && p.OpenFiles <= want.OpenFiles) || time.Now().After(deadline) {
			return p
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestLoad: 64 clients (8 users, 8 clients each) run 20,000 executions of
// `return 1` over HTTP with valid tokens while slow-loris clients send
// their headers one byte a second. No request fails; the slow clients are
// cut off by the server; afterwards the goroutines and file descriptors
// are back to what they were, and the resident memory near its start.
func TestLoad(t *testing.T) {
	total := 20000
	if s := os.Getenv("TOOLSCRIPT_LOAD_TOTAL"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("TOOLSCRIPT_LOAD_TOTAL=%q: want a positive number", s)
		}
		total = n
	}
	const clients, users, slowClients = 64, 8, 8
	s := serve(t, 4)
	tokens := make([]string, users)
	for i := range tokens {
		tokens[i] = s.issuer.Token(t, "ES256", fmt.Sprint("user", i))
	}
	// Warm up: the pool, the token cache, the HTTP client's first
	// connections; then take the baseline.
	if _, err := loadgen.Run(context.Background(), loadgen.Config{Target: strings.TrimSuffix(s.url, hosted.PathMCP),
		Clients: 4, Total: 200, NewClient: execute(tokens[0])}); err != nil {
		t.Fatal(err)
	}
	before := snapshot()
	t.Logf("before: %+v", before)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var slow sync.WaitGroup
	slowErrs := make(chan error, slowClients)
	for range slowClients {
		slow.Go(func() {
			if _, err := loadgen.SlowHeaders(ctx, s.addr, time.Second); err != nil {
				slowErrs <- err
			}
		})
	}
	rep, err := loadgen.Run(ctx, loadgen.Config{
		Target: strings.TrimSuffix(s.url, hosted.PathMCP), Clients: clients, Total: total, Timeout: 2 * time.Minute,
		NewClient: func(ctx context.Context, c *loadgen.Client) (loadgen.Op, error) {
			return execute(tokens[c.ID%users])(ctx, c)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep)
	if rep.Failed != 0 || rep.Operations != total {
		t.Errorf("%s; errors %v", rep, rep.Errors)
	}
	slow.Wait()
	close(slowErrs)
	for err := range slowErrs {
		t.Errorf("a slow-loris client was not cut off by the server: %v", err)
	}

	after := settled(before)
	t.Logf("after: %+v", after)
	if after.Goroutines > before.Goroutines {
		t.Errorf("goroutines: %d before, %d after", before.Goroutines, after.Goroutines)
	}
	if after.OpenFiles > before.OpenFiles {
		t.Errorf("open files: %d before, %d after", before.OpenFiles, after.OpenFiles)
	}
	// Near its start: Go and wazero keep some memory for reuse.
	if limit := before.RSS + 64<<20; after.RSS > limit {
		t.Errorf("resident memory: %d MiB before, %d MiB after", before.RSS>>20, after.RSS>>20)
	}
}

// BenchmarkHTTPRoundTrip measures `return 1` over HTTP with a valid token
// from one client, one call at a time (reported: the median round trip).
func BenchmarkHTTPRoundTrip(b *testing.B) {
	s := serve(b, 4)
	token := s.issuer.Token(b, "ES256", "alice")
	target := strings.TrimSuffix(s.url, hosted.PathMCP)
	// Warm up, untimed.
	if _, err := loadgen.Run(context.Background(), loadgen.Config{Target: target, Clients: 1, Total: 200, NewClient: execute(token)}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	rep, err := loadgen.Run(context.Background(), loadgen.Config{Target: target, Clients: 1, Total: b.N, NewClient: execute(token)})
	if err != nil {
		b.Fatal(err)
	}
	if rep.Failed > 0 {
		b.Fatalf("%s; errors %v", rep, rep.Errors)
	}
	b.ReportMetric(float64(rep.P50.Microseconds()), "p50-µs")
	b.ReportMetric(float64(rep.P99.Microseconds()), "p99-µs")
}

// BenchmarkHTTPThroughput64 measures executions of `return 1` per second
// over HTTP with valid tokens from 64 concurrent clients (8 users).
func BenchmarkHTTPThroughput64(b *testing.B) {
	s := serve(b, 4)
	tokens := make([]string, 8)
	for i := range tokens {
		tokens[i] = s.issuer.Token(b, "ES256", fmt.Sprint("user", i))
	}
	target := strings.TrimSuffix(s.url, hosted.PathMCP)
	newClient := func(ctx context.Context, c *loadgen.Client) (loadgen.Op, error) {
		return execute(tokens[c.ID%len(tokens)])(ctx, c)
	}
	if _, err := loadgen.Run(context.Background(), loadgen.Config{Target: target, Clients: 64, Total: 500, NewClient: newClient}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	rep, err := loadgen.Run(context.Background(), loadgen.Config{Target: target, Clients: 64, Total: max(b.N, 64), NewClient: newClient, Timeout: 10 * time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	if rep.Failed > 0 {
		b.Fatalf("%s; errors %v", rep, rep.Errors)
	}
	b.ReportMetric(rep.PerSecond, "executions/s")
	b.ReportMetric(float64(rep.P50.Microseconds()), "p50-µs")
}
