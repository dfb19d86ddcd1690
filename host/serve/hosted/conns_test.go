package hosted_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/serve/hosted"
	"github.com/toolscript/toolscript/internal/testcert"
	"github.com/toolscript/toolscript/internal/testwait"
)

// silent opens n connections from the loopback address from that send
// nothing, and closes them when the test ends or close is called.
func silent(t *testing.T, addr, from string, n int) (close func()) {
	t.Helper()
	d := net.Dialer{Timeout: clientWait, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	conns := make([]net.Conn, 0, n)
	for range n {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	var once sync.Once
	close = func() {
		once.Do(func() {
			for _, c := range conns {
				c.Close()
			}
		})
	}
	t.Cleanup(close)
	return close
}

// inUse opens n connections from the loopback address from, each with a
// request of token in progress (its body awaited: the server has asked
// for it with 100 Continue), closed when the test ends.
func inUse(t *testing.T, addr, from, token string, n int) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, 0, n)
	for range n {
		c, resp := startRequest(t, addr, from, token)
		if resp.StatusCode != http.StatusContinue {
			t.Fatalf("a request in progress from %s: status %d", from, resp.StatusCode)
		}
		conns = append(conns, c)
	}
	return conns
}

// inUseOnceIdle is inUse of one connection whose place is to come from a
// connection the server has answered: that one waits for its next
// request (and so may give its place) only once the server has marked it
// idle, just after the response, so a 503 before then is tried again.
func inUseOnceIdle(t *testing.T, addr, from, token string) {
	t.Helper()
	testwait.Until(t, "a request in progress from "+from, func() bool {
		c, resp := startRequest(t, addr, from, token)
		switch resp.StatusCode {
		case http.StatusContinue:
			return true
		case http.StatusServiceUnavailable:
			c.Close()
			return false
		}
		t.Fatalf("a request in progress from %s: status %d", from, resp.StatusCode)
		return false
	})
}

// startRequest sends the head of a request of token with a body to come
// from from, and returns the connection and the server's first answer.
func startRequest(t *testing.T, addr, from, token string) (net.Conn, *http.Response) {
	t.Helper()
	c := rawRequest(t, addr, from, "POST /mcp HTTP/1.1\nHost: "+addr+"\nAuthorization: Bearer "+token+
		"\nContent-Type: application/json\nContent-Length: 1000\nExpect: 100-continue\n", "")
	_ = c.SetReadDeadline(time.Now().Add(clientWait))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("a request from %s: %v", from, err)
	}
	return c, resp
}

// probe sends GET /healthz on a connection of its own from from, and
// returns the response's status, closing the connection.
func probe(t *testing.T, addr, from string) *http.Response {
	t.Helper()
	c := rawRequest(t, addr, from, "GET /healthz HTTP/1.1\nHost: "+addr+"\nConnection: close\n", "")
	defer c.Close()
	resp, _, _ := response(t, c)
	return resp
}

// TestConnectionCaps: connections over the cap of one client address,
// or over the total, when every connection has a request in progress,
// get 503 with Retry-After and are closed, without touching the others;
// one client at its cap leaves room for the rest; places come back as
// connections close.
func TestConnectionCaps(t *testing.T) {
	f, h := buildFixture(t, true, 0, nil, 0)
	token := f.token(t, "alice")
	var shedTotal, shedClient atomic.Int64
	url, _, _ := serving(t, h, hosted.ServeConfig{MaxConnections: 8, MaxConnectionsPerClient: 4,
		OnShed: func(limit string) {
			switch limit {
			case hosted.ShedConnections:
				shedTotal.Add(1)
			case hosted.ShedClientConnections:
				shedClient.Add(1)
			}
		}})
	addr := strings.TrimPrefix(url, "http://")
	busy := func(t *testing.T, resp *http.Response) {
		t.Helper()
		if resp.StatusCode != http.StatusServiceUnavailable || !resp.Close || resp.Header.Get("Retry-After") != strconv.Itoa(hosted.RetryAfterSeconds) {
			t.Fatalf("status %d, Connection: close %v, Retry-After %q: want 503, close, %d",
				resp.StatusCode, resp.Close, resp.Header.Get("Retry-After"), hosted.RetryAfterSeconds)
		}
	}

	// A client at its cap: its next connection is shed, the others' are
	// not.
	inUse(t, addr, "127.0.0.2", token, 4)
	busy(t, probe(t, addr, "127.0.0.2"))
	if resp := probe(t, addr, "127.0.0.1"); resp.StatusCode != 200 {
		t.Fatalf("another client: status %d", resp.StatusCode)
	}
	if shedClient.Load() != 1 || shedTotal.Load() != 0 {
		t.Errorf("shed %d by the client cap, %d by the total; want 1, 0", shedClient.Load(), shedTotal.Load())
	}

	// The total reached: everyone's next connection is shed.
	third := inUse(t, addr, "127.0.0.3", token, 4)
	busy(t, probe(t, addr, "127.0.0.1"))
	if shedTotal.Load() != 1 {
		t.Errorf("shed %d by the total, want 1", shedTotal.Load())
	}

	// Places come back as the connections close (the server sees them
	// close as it waits for their bodies).
	for _, c := range third {
		c.Close()
	}
	testwait.Until(t, "a place after the connections closed (status 200)", func() bool {
		return probe(t, addr, "127.0.0.1").StatusCode == 200
	})
}

// TestServeConnectionCapErrors: negative caps are refused.
func TestServeConnectionCapErrors(t *testing.T) {
	for _, cfg := range []hosted.ServeConfig{{MaxConnections: -1}, {MaxConnectionsPerClient: -1}} {
		cfg.Addr = "127.0.0.1:0"
		if err := hosted.Serve(context.Background(), http.NotFoundHandler(), cfg); err == nil || !strings.Contains(err.Error(), "negative") {
			t.Errorf("%+v: %v", cfg, err)
		}
	}
}

func TestDefaultMaxConnections(t *testing.T) {
	for _, tt := range []struct {
		files uint64
		want  int
	}{
		{0, hosted.MaxConnectionsCeiling},
		{256, 64},
		{1024, 768},
		{4096, 3072},
		{20000, hosted.MaxConnectionsCeiling},
		{1 << 20, hosted.MaxConnectionsCeiling},
	} {
		if got := hosted.DefaultMaxConnections(tt.files); got != tt.want {
			t.Errorf("DefaultMaxConnections(%d) = %d, want %d", tt.files, got, tt.want)
		}
	}
}

// TestConnectionCapsTLS: over TLS, a connection over the cap gets its 503
// after the handshake, and the connections within it are served.
func TestConnectionCapsTLS(t *testing.T) {
	cert, key, pool := testcert.SelfSigned(t)
	// A request to /hold is in progress until the test's end.
	held, release := make(chan struct{}, 1), make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			held <- struct{}{}
			<-release
		}
		io.WriteString(w, r.Proto)
	})
	url, _, _ := serving(t, h, hosted.ServeConfig{TLSCertFile: cert, TLSKeyFile: key, MaxConnections: 2, MaxConnectionsPerClient: 1})
	t.Cleanup(func() { close(release) }) // before the server's shutdown
	newClient := func() *http.Client {
		return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	}

	// Within the cap: served.
	resp, err := newClient().Get(url)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.TLS == nil {
		t.Fatalf("status %d, body %q", resp.StatusCode, b)
	}
	// A connection with a request in progress takes the address's one
	// place (from the idle one); the next one is over the cap.
	// The first connection goes idle (the server's ConnState) just after
	// its response: until then it is in use and the /hold request finds
	// no place (503), so it is tried again.
	attempted := make(chan struct{}, 1)
	testwait.Until(t, "a /hold request in progress", func() bool {
		go func() {
			if resp, err := newClient().Get(url + "/hold"); err == nil {
				resp.Body.Close()
			}
			attempted <- struct{}{}
		}()
		select {
		case <-held:
			return true
		case <-attempted:
			return false
		}
	})
	resp, err = newClient().Get(url)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Proto != "HTTP/1.1" || resp.Header.Get("Retry-After") == "" {
		t.Errorf("over the cap: status %d, %s, Retry-After %q, body %q", resp.StatusCode, resp.Proto, resp.Header.Get("Retry-After"), b)
	}
}

// TestWaitingConnectionsGivePlace: at a cap, a new connection takes the
// place of one waiting for a request (the same client's at the client's
// cap, anyone's at the total), never of one in use.
func TestWaitingConnectionsGivePlace(t *testing.T) {
	f, h := buildFixture(t, true, 0, nil, 0)
	url, _, _ := serving(t, h, hosted.ServeConfig{MaxConnections: 3, MaxConnectionsPerClient: 2})
	addr := strings.TrimPrefix(url, "http://")
	// keepAlive sends a request from from and leaves the connection open
	// for the next one (idle, once the server is done with it).
	keepAlive := func(from string) {
		t.Helper()
		c := rawRequest(t, addr, from, "GET /healthz HTTP/1.1\nHost: "+addr+"\n", "")
		if resp, _, _ := response(t, c); resp.StatusCode != 200 || resp.Close {
			t.Fatalf("keep-alive request from %s: status %d, close %v", from, resp.StatusCode, resp.Close)
		}
	}
	// served waits until a new connection from from is served: the
	// server learns that a connection is idle just after its response.
	served := func(from string) {
		t.Helper()
		testwait.Until(t, "a new connection from "+from+" served (status 200)", func() bool {
			return probe(t, addr, from).StatusCode == 200
		})
	}

	// A client at its cap with idle connections: its new connection
	// takes the place of one of them.
	keepAlive("127.0.0.2")
	keepAlive("127.0.0.2")
	served("127.0.0.2")
	// The total reached with one idle connection (127.0.0.2's other) and
	// two silent ones: another client takes a place.
	silent(t, addr, "127.0.0.3", 2)
	served("127.0.0.4")
	// The total reached with connections in use only: no place to take.
	token := f.token(t, "alice")
	inUse(t, addr, "127.0.0.5", token, 2)
	inUseOnceIdle(t, addr, "127.0.0.7", token) // 127.0.0.2's idle one's place
	if resp := probe(t, addr, "127.0.0.6"); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("with every connection in use: status %d, want 503", resp.StatusCode)
	}
}
