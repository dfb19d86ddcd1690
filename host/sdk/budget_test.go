package sdk

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"

	"github.com/toolscript/toolscript/host/contract/limit"
	"github.com/toolscript/toolscript/host/contract/sdkcall"
	"github.com/toolscript/toolscript/internal/testinflight"
	"github.com/toolscript/toolscript/internal/testwait"
)

// The host memory budgets: the bytes of responses held for scripts, per
// execution (max_host_bytes) and for all of them (max_host_bytes_total).

// free reports whether all of b's bytes are free.
func free(b *limit.Bytes) bool {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // take them at once or not at all
	if b.Acquire(ctx, b.Size()) != nil {
		return false
	}
	b.Release(b.Size())
	return true
}

func TestHostBudgetDefaults(t *testing.T) {
	for _, c := range []struct {
		cfg         Config
		exec, total int64
	}{
		{Config{}, DefaultMaxHostBytes, DefaultMaxHostBytesTotal},
		{Config{MaxResponseBytes: 100 << 20}, 100 << 20, 100 << 20},
		{Config{MaxHostBytes: 1000}, 1000, DefaultMaxHostBytesTotal},
		{Config{MaxHostBytes: 1 << 30}, 1 << 30, 1 << 30},
		{Config{MaxHostBytes: 1000, MaxHostBytesTotal: 2000}, 1000, 2000},
	} {
		c.cfg.withDefaults()
		if c.cfg.MaxHostBytes != c.exec || c.cfg.MaxHostBytesTotal != c.total {
			t.Errorf("%+v: want %d and %d", c.cfg, c.exec, c.total)
		}
	}
}

// TestHostBudgetTooLarge: a response larger than a budget by itself fails
// with kind limit, naming the function and the setting, with its
// announced size or as it is read; a small one goes through, and nothing
// stays held.
func TestHostBudgetTooLarge(t *testing.T) {
	a := newTestAPI(t)
	for _, c := range []struct {
		name string
		cfg  Config
		args string
		want string // in the message; "" for success
	}{
		{"announced, per execution", Config{MaxHostBytes: 1 << 20}, `{"n":2000000}`,
			"sdk.pets.big: the response needs 2000"}, // and the headers' bytes
		{"chunked, per execution", Config{MaxHostBytes: 1 << 20}, `{"n":2000000,"chunked":true}`,
			"more than max_host_bytes (1048576 bytes, what one execution's sdk calls may hold at once; [limits] max_host_bytes)"},
		{"announced, all executions", Config{MaxHostBytes: 4 << 20, MaxHostBytesTotal: 1 << 20}, `{"n":2000000}`,
			"more than max_host_bytes_total (1048576 bytes, what all executions' sdk calls may hold at once; [limits] max_host_bytes_total)"},
		{"chunked, all executions", Config{MaxHostBytes: 4 << 20, MaxHostBytesTotal: 1 << 20}, `{"n":2000000,"chunked":true}`,
			"[limits] max_host_bytes_total"},
		{"small chunked", Config{MaxHostBytes: 1 << 20}, `{"n":1000,"chunked":true}`, ""},
		{"small", Config{MaxHostBytes: 1 << 20}, `{"n":1000}`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			client := newClient(t, a, c.cfg, APIConfig{})
			s := client.Session(nil)
			r := call(t, s, "big", `[`+c.args+`]`)
			if c.want == "" {
				if r.Fail != sdkcall.OK || len(r.Text) != 1000 {
					t.Fatalf("%+v", r)
				}
				if free(s.budget) || free(client.budget) {
					t.Error("a response's bytes are free before the script has them")
				}
				r.Release()
			} else if r.Fail != sdkcall.Limit || !strings.Contains(r.Message, c.want) || !strings.HasPrefix(r.Message, "sdk.pets.big: ") {
				t.Fatalf("%d %q, want kind limit and %q", r.Fail, r.Message, c.want)
			}
			if !free(s.budget) || !free(client.budget) {
				t.Error("bytes stay held")
			}
		})
	}
}

// gatedAPI answers GET /big?n=N with N bytes (Content-Length announced),
// sending the headers and the first byte at once and the rest when the
// test opens the gate. It counts the requests in flight.
type gatedAPI struct {
	srv     *httptest.Server
	arrived chan int
	gate    chan struct{}

	inFlight testinflight.Gauge
}

func newGatedAPI(t *testing.T) *gatedAPI {
	g := &gatedAPI{arrived: make(chan int, 16), gate: make(chan struct{})}
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer g.inFlight.Enter()()
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", strconv.Itoa(n))
		body := []byte(strings.Repeat("x", n))
		w.Write(body[:1])
		w.(http.Flusher).Flush()
		g.arrived <- n
		select {
		case <-g.gate:
		case <-r.Context().Done():
			return
		}
		w.Write(body[1:])
	}))
	t.Cleanup(g.srv.Close)
	return g
}

// TestHostBudgetWaits: a call whose response does not fit in what other
// calls hold waits until they release it, which they do only once the
// script has their bytes; it then succeeds. Both requests were in flight
// at the server at once: the budget, not the API, kept them apart.
func TestHostBudgetWaits(t *testing.T) {
	const n = 600_000
	for _, c := range []struct {
		name    string
		cfg     Config
		oneExec bool // both calls in one execution (else two)
	}{
		{"one execution", Config{MaxHostBytes: 1 << 20}, true},
		{"all executions", Config{MaxHostBytesTotal: 1 << 20}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := newGatedAPI(t)
			client := newClient(t, &testAPI{srv: g.srv}, c.cfg, APIConfig{})
			sessions := []*Session{client.Session(nil), client.Session(nil)}
			budget := client.budget
			if c.oneExec {
				sessions[1] = sessions[0]
				budget = sessions[0].budget
			}
			results := make(chan *sdkcall.Response, 2)
			for i, s := range sessions {
				go func() { results <- call(t, s, "big", fmt.Sprintf(`[{"n":%d}]`, n+i)) }()
			}
			<-g.arrived
			<-g.arrived
			testwait.Waiters(t, budget, 1) // one holds its bytes, the other waits
			close(g.gate)
			first := <-results
			if first.Fail != sdkcall.OK || len(first.Text) < n {
				t.Fatalf("first: %d %s", first.Fail, first.Message)
			}
			// Its bytes are held until the script has them: the other still waits.
			if budget.Waiters() != 1 {
				t.Fatalf("%d waiters before the first response was released", budget.Waiters())
			}
			select {
			case r := <-results:
				t.Fatalf("the second call returned while the first held the budget: %+v", r)
			default:
			}
			first.Release()
			second := <-results
			if second.Fail != sdkcall.OK || len(second.Text) < n || len(second.Text)+len(first.Text) != 2*n+1 {
				t.Fatalf("second: %d %s", second.Fail, second.Message)
			}
			second.Release()
			if peak := g.inFlight.Peak(); peak != 2 {
				t.Errorf("%d requests in flight at the server at once, want 2", peak)
			}
			if !free(client.budget) || !free(sessions[0].budget) || !free(sessions[1].budget) {
				t.Error("bytes stay held")
			}
		})
	}
}

// TestHostBudgetWaitEnds: a call that waits for the budget until its
// context ends fails with kind limit, naming the setting.
func TestHostBudgetWaitEnds(t *testing.T) {
	g := newGatedAPI(t)
	client := newClient(t, &testAPI{srv: g.srv}, Config{MaxHostBytesTotal: 1 << 20}, APIConfig{})
	id := fnID(t, client, "big")
	first := make(chan *sdkcall.Response, 1)
	go func() { first <- client.Session(nil).Call(context.Background(), id, []byte(`[{"n":600000}]`)) }()
	<-g.arrived
	ctx, cancel := context.WithCancel(context.Background())
	second := make(chan *sdkcall.Response, 1)
	go func() { second <- client.Session(nil).Call(ctx, id, []byte(`[{"n":600001}]`)) }()
	<-g.arrived
	testwait.Waiters(t, client.budget, 1)
	cancel()
	r := <-second
	if r.Fail != sdkcall.Limit || !strings.Contains(r.Message, "sdk.pets.big: the response waited for") ||
		!strings.Contains(r.Message, "max_host_bytes_total (1048576 bytes, what all executions' sdk calls may hold at once; [limits] max_host_bytes_total) stayed in use") {
		t.Errorf("%d %q", r.Fail, r.Message)
	}
	close(g.gate)
	(<-first).Release()
	if !free(client.budget) {
		t.Error("bytes stay held")
	}
}

// headersAPI answers with headerBytes of headers (X-Pad-<i> lines) and a
// body of bodyBytes (announced).
func headersAPI(t *testing.T, headerBytes, bodyBytes int) *testAPI {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		value := strings.Repeat("h", 8000)
		for i := 0; headerBytes > 0; i++ {
			k := "X-Pad-" + strconv.Itoa(i)
			v := value[:max(1, min(len(value), headerBytes-len(k)-4))]
			w.Header()[k] = []string{v}
			headerBytes -= len(k) + len(v) + 4
		}
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", strconv.Itoa(bodyBytes))
		w.Write([]byte(strings.Repeat("b", bodyBytes)))
	}))
	t.Cleanup(srv.Close)
	return &testAPI{srv: srv}
}

// TestHostBudgetHeaders: headers count toward max_response_bytes, and
// headers larger than it are refused before they are all read.
func TestHostBudgetHeaders(t *testing.T) {
	for _, c := range []struct {
		name          string
		headers, body int
		want          string // "" for success
	}{
		{"9 MB of headers", 9 << 20, 10, "sdk.pets.big: the response's headers are larger than 1000000 bytes (headers count toward max_response_bytes"},
		{"headers and body each under the cap", 600_000, 600_000, "sdk.pets.big: the response is 1200"},
		{"headers and body together under the cap", 300_000, 600_000, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			client := newClient(t, headersAPI(t, c.headers, c.body), Config{MaxResponseBytes: 1_000_000}, APIConfig{})
			r := call(t, client.Session(nil), "big", `[{"n":1}]`)
			if c.want == "" {
				if r.Fail != sdkcall.OK || len(r.Text) != c.body {
					t.Fatalf("%d %s", r.Fail, r.Message)
				}
				r.Release()
				return
			}
			if r.Fail != sdkcall.Limit || !strings.HasPrefix(r.Message, c.want) || !strings.Contains(r.Message, "max_response_bytes") {
				t.Errorf("%d %q, want kind limit and %q", r.Fail, r.Message, c.want)
			}
			if !free(client.budget) {
				t.Error("bytes stay held")
			}
		})
	}
}

// TestHostBudgetDecoderWindow: a brotli decoder's window counts toward
// the host memory budgets while a response is read. Four bytes (a window
// of 16 MiB, a meta-block that says 16 MiB follow) make the decoder
// allocate 16 MiB before the first byte of the body is read; the server
// then stalls, and the call holds at least the window. (zstd's window is
// refused past max_response_bytes.)
func TestHostBudgetDecoderWindow(t *testing.T) {
	head := append([]byte{0xCF, 0xFF, 0xFF, 0xFF}, bytes.Repeat([]byte("a"), 100)...)
	// The same, as the first meta-block of a brotli stream of a 16 MiB
	// window too (flushed, not ended).
	var twice bytes.Buffer
	w := brotli.NewWriterOptions(&twice, brotli.WriterOptions{Quality: 5, LGWin: 24})
	w.Write(head)
	w.Flush()
	for _, tc := range []struct {
		coding string
		head   []byte
		window int64
	}{
		{"br", head, 16 << 20},
		{"br, br", twice.Bytes(), 24 << 20}, // two windows: all the budget
	} {
		t.Run(tc.coding, func(t *testing.T) {
			release := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Encoding", tc.coding)
				w.Header().Set("Content-Type", "text/plain")
				w.Write(tc.head)
				w.(http.Flusher).Flush()
				select {
				case <-release:
				case <-r.Context().Done():
				}
			}))
			defer srv.Close()
			client := newClient(t, newTestAPI(t), Config{MaxResponseBytes: 1 << 20}, APIConfig{BaseURL: srv.URL})
			s := client.Session(nil)
			done := make(chan *sdkcall.Response, 1)
			go func() { done <- call(t, s, "echo", `[{"value":"x"}]`) }()
			// The call holds its bytes from before the body is read until
			// it ends.
			var early *sdkcall.Response
			testwait.Until(t, "the call holds its bytes", func() bool {
				select {
				case early = <-done:
					return true
				default:
					return s.HostBytesHeld() > 0
				}
			})
			if early != nil {
				t.Fatalf("the call ended first: %d %s", early.Fail, early.Message)
			}
			if held := s.HostBytesHeld(); held < tc.window {
				t.Errorf("reading a %s body of a %d MiB window holds %d bytes", tc.coding, tc.window>>20, held)
			}
			close(release)
			if r := <-done; r.Release != nil {
				r.Release()
			}
		})
	}
}

// TestBrotliWindow: the window read from a stream's first byte is the one
// its encoder used, for every window brotli allows.
func TestBrotliWindow(t *testing.T) {
	for bits := 10; bits <= 24; bits++ {
		var b bytes.Buffer
		w := brotli.NewWriterOptions(&b, brotli.WriterOptions{Quality: 5, LGWin: bits})
		w.Write([]byte("some text"))
		w.Close()
		if got := brotliWindow(b.Bytes()[0]); got != 1<<bits {
			t.Errorf("LGWin %d: window %d, want %d", bits, got, 1<<bits)
		}
	}
}
