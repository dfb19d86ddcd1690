//go:build unix

package hosted_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/serve/hosted"
	"github.com/toolscript/toolscript/internal/testhostile"
	"github.com/toolscript/toolscript/internal/testwait"
)

// hostileConnections is how many slow, unauthenticated requests
// TestHostileConnections sends at once (fewer when the process may not
// open twice as many files).
const hostileConnections = 3000

// TestHostileConnections: thousands of connections from one address, each
// announcing a 100 kB body, sending one byte and no token, and holding
// the connection open, pin nothing: each gets 401 (503 past the cap of
// its address) and is closed by the server, while a probe and a real MCP
// client with a valid token from another address are served; the
// server's goroutines come back to where they were.
func TestHostileConnections(t *testing.T) {
	n := hostileConnections
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err == nil {
		// Both ends of each connection are in this process.
		if files := int(min(rl.Cur, 1<<20)); 2*n+256 > files {
			n = (files - 256) / 2
		}
	}
	if n < 500 {
		t.Skipf("the process may open too few files for this test (%d)", rl.Cur)
	}
	f, h := buildFixture(t, true, 0, nil, 0)
	url, _, _ := serving(t, h, hosted.ServeConfig{MaxConnections: 2 * n, MaxConnectionsPerClient: n / 3})
	addr := strings.TrimPrefix(url, "http://")
	c, err := f.connectTo(t, url, f.token(t, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	before := runtime.NumGoroutine()

	head := strings.ReplaceAll("POST /mcp HTTP/1.1\nHost: "+addr+"\nContent-Type: application/json\n"+
		"Content-Length: 100000\n\n", "\n", "\r\n")
	d := net.Dialer{Timeout: clientWait, LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
	hostile := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range hostile {
			c.Close()
		}
	}()
	for range n {
		hc, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("after %d connections: %v", len(hostile), err)
		}
		hostile = append(hostile, hc)
		if _, err := io.WriteString(hc, head+"{"); err != nil {
			t.Fatalf("after %d connections: %v", len(hostile), err)
		}
	}

	// With all of them open on this side, the server serves the others.
	if resp := probe(t, addr, "127.0.0.1"); resp.StatusCode != 200 {
		t.Errorf("/healthz: status %d", resp.StatusCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), clientWait)
	defer cancel()
	if got, err := whoami(ctx, c); err != nil || !strings.Contains(got, "alice") {
		t.Errorf("a valid user's call: %q, %v", got, err)
	}

	// Each hostile connection got its answer and was closed by the server.
	deadline := time.Now().Add(clientWait)
	statuses, failures := testhostile.Outcomes(hostile, deadline, answer)
	t.Logf("%d hostile connections: statuses %v", n, statuses)
	if len(failures) > 0 {
		t.Fatalf("%d hostile connections not answered and closed, such as: %s", len(failures), failures[0])
	}
	if statuses["401"] == 0 || statuses["401"]+statuses["503"] != n {
		t.Errorf("statuses %v: want only 401 and 503, %d in all", statuses, n)
	}

	// The server's goroutines for them are gone.
	testwait.Until(t, fmt.Sprintf("at most 20 goroutines more than the %d before the hostile connections", before), func() bool {
		return runtime.NumGoroutine() <= before+20
	})
}

// answer reads the response on hc and then the server's close, by
// deadline: the status (as text), or why not.
func answer(hc net.Conn, deadline time.Time) (string, error) {
	_ = hc.SetReadDeadline(deadline)
	br := bufio.NewReader(hc)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return "", err
	}
	if !resp.Close {
		return "", errors.New("a response without Connection: close")
	}
	if _, err := br.ReadByte(); err != io.EOF && !errors.Is(err, syscall.ECONNRESET) {
		return "", errors.New("the connection was not closed: " + errString(err))
	}
	return strconv.Itoa(resp.StatusCode), nil
}

func errString(err error) string {
	if err == nil {
		return "more bytes"
	}
	return err.Error()
}

// TestSilentAddresses: sixteen addresses keep every place taken with
// silent connections, each opening a new one as soon as the server
// closes one of theirs; a valid user's calls, each on a new connection,
// all succeed.
func TestSilentAddresses(t *testing.T) {
	const total, addresses, perAddress, calls = 128, 16, 12, 43
	f, h := buildFixture(t, true, 0, nil, 0)
	url, _, _ := serving(t, h, hosted.ServeConfig{MaxConnections: total, MaxConnectionsPerClient: total / 8})
	addr := strings.TrimPrefix(url, "http://")

	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() {
		stop()
		wg.Wait()
	}()
	closed := make(chan struct{}, addresses*perAddress)
	for i := range addresses {
		d := net.Dialer{Timeout: clientWait, LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(i+2))}}
		for range perAddress {
			wg.Go(func() { holdSilent(ctx, d, addr, closed) })
		}
	}
	// The server is full once it closes silent connections (whether by
	// taking their places or by 503) faster than the header timeout would.
	for range total {
		select {
		case <-closed:
		case <-time.After(clientWait):
			t.Fatal("the silent connections did not fill the server")
		}
	}

	token := f.token(t, "alice")
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: clientWait}
	failed := 0
	for i := range calls {
		req, _ := http.NewRequest(http.MethodPost, url+hosted.PathMCP, strings.NewReader(callWhoami))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			t.Errorf("call %d: %v", i, err)
			failed++
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "u.alice.") {
			t.Errorf("call %d: status %d, %.200s", i, resp.StatusCode, body)
			failed++
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d calls of a valid user failed", failed, calls)
	}
}

// holdSilent keeps a silent connection from d open to addr until ctx
// ends: whenever the server closes it, it says so on closed (when there
// is room) and opens another.
func holdSilent(ctx context.Context, d net.Dialer, addr string, closed chan<- struct{}) {
	for ctx.Err() == nil {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			continue
		}
		stop := context.AfterFunc(ctx, func() { c.Close() })
		_, _ = io.Copy(io.Discard, c) // until the server closes it
		stop()
		c.Close()
		select {
		case closed <- struct{}{}:
		default:
		}
	}
}
