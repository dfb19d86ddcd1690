package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolscript/toolscript/internal/testwait"
)

// post returns a NewClient whose clients POST their sequence number to
// path and expect 200.
func post(path string) func(context.Context, *Client) (Op, error) {
	return func(_ context.Context, c *Client) (Op, error) {
		return Request(c, func(ctx context.Context, seq int) (*http.Request, error) {
			return http.NewRequestWithContext(ctx, http.MethodPost, c.BaseURL+path, strings.NewReader(fmt.Sprint(seq)))
		}, nil), nil
	}
}

func TestRun(t *testing.T) {
	var served atomic.Int64
	var mu sync.Mutex
	seen := map[string]bool{}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen[string(body)] = true
		mu.Unlock()
		if strings.HasSuffix(string(body), "7") {
			http.Error(w, "seven", http.StatusInternalServerError)
		}
	})
	var prepared atomic.Int64
	before := Snapshot()
	rep, err := Run(context.Background(), Config{
		Handler: handler, Clients: 8, Total: 1000,
		NewClient: func(ctx context.Context, c *Client) (Op, error) {
			prepared.Add(1)
			return post("/x")(ctx, c)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep)
	if rep.Operations != 1000 || served.Load() != 1000 || len(seen) != 1000 {
		t.Errorf("%d operations, %d served, %d distinct: want 1000 each", rep.Operations, served.Load(), len(seen))
	}
	if rep.Failed != 100 || rep.Errors["HTTP status 500"] != 100 {
		t.Errorf("%d failed (%v), want 100 with status 500", rep.Failed, rep.Errors)
	}
	if prepared.Load() != 8 {
		t.Errorf("%d clients prepared, want 8", prepared.Load())
	}
	if rep.TimedOut {
		t.Error("timed out")
	}
	if !(rep.Min > 0 && rep.Min <= rep.P50 && rep.P50 <= rep.P90 && rep.P90 <= rep.P99 && rep.P99 <= rep.Max) || rep.PerSecond <= 0 {
		t.Errorf("latencies out of order: %s", rep)
	}
	// The run left no goroutine behind (the server and the idle
	// connections are closed when it ends).
	testwait.Until(t, "the goroutines back to where they were", func() bool { return Snapshot().Goroutines <= before.Goroutines })
}

// TestRunConcurrency: the clients do run at once: the first requests are
// held until all clients have one in flight.
func TestRunConcurrency(t *testing.T) {
	const clients = 16
	var arrived atomic.Int64
	all := make(chan struct{})
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if n := arrived.Add(1); n == clients {
			close(all)
		}
		select {
		case <-all:
		case <-r.Context().Done():
		}
	})
	rep, err := Run(context.Background(), Config{Handler: handler, Clients: clients, Total: 4 * clients, NewClient: post("/")})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Failed != 0 || rep.Operations != 4*clients {
		t.Errorf("%s; errors %v", rep, rep.Errors)
	}
}

// TestRunTimeout: a run ends at its timeout, however slow the server.
func TestRunTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Reading the body lets the server notice the client going away.
		io.Copy(io.Discard, r.Body)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	rep, err := Run(context.Background(), Config{Handler: handler, Clients: 2, Total: 100, Timeout: 50 * time.Millisecond, NewClient: post("/")})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.TimedOut || rep.Operations >= 100 || rep.Failed != rep.Operations {
		t.Errorf("%s, timed out %v", rep, rep.TimedOut)
	}
}

func TestRunRefuses(t *testing.T) {
	ok := func(context.Context, *Client) (Op, error) { return nil, nil }
	h := http.NotFoundHandler()
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"not loopback", Config{Target: "http://example.com", Clients: 1, Total: 1, NewClient: ok}, "not a loopback"},
		{"private address", Config{Target: "http://10.0.0.1:8080", Clients: 1, Total: 1, NewClient: ok}, "not a loopback"},
		{"no clients", Config{Handler: h, Total: 1, NewClient: ok}, "clients"},
		{"too many clients", Config{Handler: h, Clients: MaxClients + 1, Total: 1, NewClient: ok}, "clients"},
		{"nothing to do", Config{Handler: h, Clients: 1, NewClient: ok}, "operations"},
		{"too much to do", Config{Handler: h, Clients: 1, Total: MaxTotal + 1, NewClient: ok}, "operations"},
		{"too long", Config{Handler: h, Clients: 1, Total: 1, Timeout: MaxDuration + 1, NewClient: ok}, "timeout"},
		{"no target", Config{Clients: 1, Total: 1, NewClient: ok}, "no Target"},
		{"no NewClient", Config{Handler: h, Clients: 1, Total: 1}, "NewClient"},
		{"client fails", Config{Handler: h, Clients: 1, Total: 1, NewClient: func(context.Context, *Client) (Op, error) {
			return nil, errors.New("boom")
		}}, "boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Run(context.Background(), tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestLoopbackOnly: a redirect to another address is not followed out.
func TestLoopbackOnly(t *testing.T) {
	srv := httptest.NewServer(http.RedirectHandler("http://192.0.2.1/", http.StatusFound))
	defer srv.Close()
	rep, err := Run(context.Background(), Config{Target: srv.URL, Clients: 1, Total: 1, NewClient: post("/")})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Failed != 1 {
		t.Fatalf("%s", rep)
	}
	for text := range rep.Errors {
		if !strings.Contains(text, "not a loopback address") {
			t.Errorf("error %q", text)
		}
	}
}

// TestSlowHeaders: a server with a header timeout closes a slow-loris
// connection, and serves others meanwhile; a slow client elsewhere is
// refused.
func TestSlowHeaders(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), ReadHeaderTimeout: 200 * time.Millisecond}
	go srv.Serve(ln)
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := SlowHeaders(ctx, ln.Addr().String(), 10*time.Millisecond)
		done <- err
	}()
	rep, err := Run(ctx, Config{Target: "http://" + ln.Addr().String(), Clients: 4, Total: 100, NewClient: post("/")})
	if err != nil || rep.Failed != 0 {
		t.Errorf("others while a slow client holds a connection: %s, %v", rep, err)
	}
	if err := <-done; err != nil {
		t.Errorf("the slow connection: %v (the server should have closed it)", err)
	}
	if _, err := SlowHeaders(ctx, "192.0.2.1:80", time.Second); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("slow client to another address: %v", err)
	}
}

func TestSnapshot(t *testing.T) {
	s := Snapshot()
	if s.Goroutines < 1 || s.OpenFiles < 3 || s.RSS <= 0 {
		t.Errorf("snapshot %+v", s)
	}
}
