package hosted_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/serve/auth"
	"github.com/toolscript/toolscript/host/serve/hosted"
)

// clientWait bounds every wait of these tests for the server: far beyond
// what the server is configured to take, so that only a server that
// never answers makes a test fail.
const clientWait = 30 * time.Second

// rawRequest opens a connection to addr (host:port), from the loopback
// address from (empty: any), and writes head (the request line and
// headers, without the blank line) and then the start of a body.
func rawRequest(t *testing.T, addr, from, head, body string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: clientWait}
	if from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, strings.ReplaceAll(head, "\n", "\r\n")+"\r\n"+body); err != nil {
		t.Fatal(err)
	}
	return c
}

// response reads the response on c, its body, and whether the server
// then closed the connection; it fails the test if the server does
// neither within clientWait.
func response(t *testing.T, c net.Conn) (resp *http.Response, body string, closed bool) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(clientWait))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no response: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the response body: %v", err)
	}
	if !resp.Close {
		return resp, string(b), false
	}
	_, err = br.ReadByte()
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		t.Fatal("the server said Connection: close but kept the connection open")
	}
	return resp, string(b), err != nil
}

// TestUnreadBodies: a request whose body is slow, never comes, or is not
// wanted gets its answer at once, or when the body deadline passes,
// never later; the answer says Connection: close, and the server closes
// the connection rather than wait for the rest of the body.
func TestUnreadBodies(t *testing.T) {
	f, h := buildFixture(t, true, 0, nil, time.Second)
	url, _, _ := serving(t, h, hosted.ServeConfig{})
	addr := strings.TrimPrefix(url, "http://")
	token := f.token(t, "alice")
	post := func(headers string) string {
		return "POST /mcp HTTP/1.1\nHost: " + addr + "\nContent-Type: application/json\n" +
			"Accept: application/json, text/event-stream\nMcp-Protocol-Version: 2025-06-18\n" + headers
	}

	tests := []struct {
		name, head, body string
		// trickle sends a byte of body every few milliseconds until the
		// answer comes.
		trickle bool
		status  int
	}{
		{name: "no token, 100 kB announced, 1 byte sent", head: post("Content-Length: 100000\n"), body: "{", status: 401},
		{name: "no token, 100 MB announced, 1 byte sent", head: post("Content-Length: 100000000\n"), body: "{", status: 401},
		{name: "no token, chunked, one chunk sent", head: post("Transfer-Encoding: chunked\n"), body: "1\r\n{\r\n", status: 401},
		{name: "no token, 100-continue", head: post("Content-Length: 100000\nExpect: 100-continue\n"), status: 401},
		{name: "no token, trickled body", head: post("Content-Length: 100000\n"), body: "{", trickle: true, status: 401},
		{name: "bad token, 100 kB announced, 1 byte sent", head: post("Content-Length: 100000\nAuthorization: Bearer x.y.z\n"), body: "{", status: 401},
		{name: "probe with an unread body", head: "GET /healthz HTTP/1.1\nHost: " + addr + "\nContent-Length: 100000\n", body: "{", status: 200},
		{name: "unknown path with an unread body", head: "POST /nowhere HTTP/1.1\nHost: " + addr + "\nContent-Length: 100000\n", body: "{", status: 404},
		{name: "valid token, 1 byte sent", head: post("Content-Length: 1000\nAuthorization: Bearer " + token + "\n"), body: "{", status: 408},
		{name: "valid token, trickled body", head: post("Content-Length: 100000\nAuthorization: Bearer " + token + "\n"), body: "{", trickle: true, status: 408},
		{name: "valid token, chunked, one chunk sent", head: post("Transfer-Encoding: chunked\nAuthorization: Bearer " + token + "\n"), body: "1\r\n{\r\n", status: 408},
		{name: "valid token, over the cap then silence", head: post("Content-Length: 100000000\nAuthorization: Bearer " + token + "\n"),
			body: strings.Repeat("a", 65<<10), status: 413},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.logs.Reset()
			c := rawRequest(t, addr, "", tt.head, tt.body)
			answered := make(chan struct{})
			defer close(answered)
			if tt.trickle {
				go func() {
					tick := time.NewTicker(20 * time.Millisecond)
					defer tick.Stop()
					for range int(clientWait / (20 * time.Millisecond)) {
						select {
						case <-answered:
							return
						case <-tick.C:
						}
						if _, err := c.Write([]byte(" ")); err != nil {
							return
						}
					}
				}()
			}
			resp, body, closed := response(t, c)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d (%q)", resp.StatusCode, tt.status, body)
			}
			if !resp.Close || !closed {
				t.Errorf("Connection: close %v, closed by the server %v; want both", resp.Close, closed)
			}
			if tt.status == 408 {
				if line := f.accessLine(t); line["outcome"] != "body_timeout" || line["status"] != 408.0 {
					t.Errorf("access log line %v", line)
				}
			}
			if tt.status == 401 && !strings.Contains(resp.Header.Get("WWW-Authenticate"), `resource_metadata="`+url+auth.MetadataPath+`"`) {
				t.Errorf("WWW-Authenticate %q", resp.Header.Get("WWW-Authenticate"))
			}
		})
	}

	// A body sent whole keeps the connection for the next request.
	t.Run("whole bodies keep the connection", func(t *testing.T) {
		head := post(fmt.Sprintf("Content-Length: %d\nAuthorization: Bearer %s\n", len(callWhoami), token))
		c := rawRequest(t, addr, "", head, callWhoami)
		for i := range 2 {
			resp, body, _ := response(t, c)
			if resp.StatusCode != 200 || resp.Close || !strings.Contains(body, "alice") {
				t.Fatalf("request %d: status %d, Connection: close %v, body %q", i, resp.StatusCode, resp.Close, body)
			}
			if i == 0 {
				if _, err := io.WriteString(c, strings.ReplaceAll(head, "\n", "\r\n")+"\r\n"+callWhoami); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}

// TestBodyDeadlineLifted: once the body is read, the request outlives the
// body deadline: a script running longer keeps its connection and its
// context.
func TestBodyDeadlineLifted(t *testing.T) {
	const timeout = 100 * time.Millisecond
	mcp := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		select {
		case <-r.Context().Done():
			http.Error(w, "the request's context ended", http.StatusInternalServerError)
		case <-time.After(5 * timeout):
			io.WriteString(w, "finished")
		}
	})
	h, err := hosted.New(hosted.Config{MCP: mcp, MaxBodyBytes: 1 << 10, BodyTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	url, _, _ := serving(t, h, hosted.ServeConfig{})
	resp, err := http.Post(url+hosted.PathMCP, "application/json", strings.NewReader(listTools))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != "finished" {
		t.Errorf("status %d, body %q", resp.StatusCode, body)
	}
}
