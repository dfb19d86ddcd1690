//go:build unix

package tests

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolscript/toolscript/internal/testhostile"
	"github.com/toolscript/toolscript/internal/testwait"
)

// startServeWithFiles is startServe in a new directory, the server
// allowed to open at most files files (ulimit -n).
func startServeWithFiles(t *testing.T, files int, args ...string) *hostedProcess {
	t.Helper()
	return startServeCmd(t, exec.Command("sh", append([]string{"-c", `ulimit -n ` + strconv.Itoa(files) + ` && exec "$0" "$@"`,
		binary, "serve", "--http", "127.0.0.1:0"}, args...)...), t.TempDir())
}

// TestHostedHostileConnections: a server that may open 1,024 files, and
// 3,000 hostile connections from one address held open at once, half of
// them sending nothing, half announcing a 100 kB body, sending one byte
// and no token. The server never runs out of descriptors: the
// unauthenticated ones get 401 at once, a connection over the client's
// cap takes the place of the client's oldest silent one, which is closed
// (or, when none waits, gets 503), and the silent ones left are closed
// when the header timeout passes; meanwhile a probe and a valid user
// running a script from another address are served.
func TestHostedHostileConnections(t *testing.T) {
	const serverFiles = 1024
	n := 3000
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	if rl.Max < serverFiles {
		t.Skipf("the hard limit on open files is %d, under %d", rl.Max, serverFiles)
	}
	if files := int(min(rl.Cur, 1<<20)); n+512 > files { // this process holds the client ends
		n = files - 512
	}
	if n < 1500 {
		t.Skipf("this process may open too few files (%d) to outnumber the server's %d", rl.Cur, serverFiles)
	}

	iss, args := issuerArgs(t)
	p := startServeWithFiles(t, serverFiles, args...)
	addr := strings.TrimPrefix(p.base, "http://")
	c := connectHTTP(t, p.url, iss.Token(t, "RS256", "alice"))

	slowBody := strings.ReplaceAll("POST /mcp HTTP/1.1\nHost: "+addr+"\nContent-Type: application/json\n"+
		"Content-Length: 100000\n\n", "\n", "\r\n") + "{"
	d := net.Dialer{Timeout: time.Minute, LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
	hostile := make([]net.Conn, 0, n)
	defer func() {
		for _, hc := range hostile {
			hc.Close()
		}
	}()
	for i := range n {
		hc, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("after %d connections: %v", len(hostile), err)
		}
		hostile = append(hostile, hc)
		if i%2 == 1 {
			// A write to a connection the server already shed may fail.
			_, _ = io.WriteString(hc, slowBody)
		}
	}

	// With all of them open on this side, the others are served.
	if status, body := get(t, p.base+"/healthz"); status != 200 {
		t.Errorf("/healthz: %d %s", status, body)
	}
	_, out := callScript(t, testwait.Context(t), c, map[string]any{"script": `return 1`})
	if string(out.Result) != "1" || out.Error != nil {
		t.Errorf("a valid user's script: result %s, error %+v", out.Result, out.Error)
	}
	status, scrape := get(t, p.base+"/metrics")
	if status != 200 {
		t.Fatalf("/metrics: %d", status)
	}
	fds := metric(t, scrape, "process_open_fds")
	if fds >= serverFiles {
		t.Errorf("the server has %v files open, its limit %d", fds, serverFiles)
	}
	caps := p.stderr.wait(t, "connections capped", p.exited)
	t.Logf("server: %v files open while the hostile connections are; caps %v in all, %v per client",
		fds, caps["max_connections"], caps["max_connections_per_client"])

	// Each hostile connection is answered or closed by the server.
	deadline := time.Now().Add(time.Minute)
	outcomes, open := testhostile.Outcomes(hostile, deadline, hostileOutcome)
	t.Logf("%d hostile connections: %v", n, outcomes)
	if len(open) > 0 {
		t.Errorf("%d hostile connections left open, such as: %s", len(open), open[0])
	}
	if outcomes["401"] == 0 || outcomes["closed"] == 0 {
		t.Errorf("outcomes %v: want some 401 and some closed", outcomes)
	}
	if strings.Contains(p.stderr.String(), "too many open files") {
		t.Error("the server ran out of descriptors")
	}
}

// hostileOutcome reads what the server does with hc by deadline: its
// status, or "closed" when it closes the connection without an answer;
// an error when it does neither.
func hostileOutcome(hc net.Conn, deadline time.Time) (string, error) {
	_ = hc.SetReadDeadline(deadline)
	br := bufio.NewReader(hc)
	resp, err := http.ReadResponse(br, nil)
	var netErr net.Error
	switch {
	case errors.As(err, &netErr) && netErr.Timeout():
		return "", err
	case err != nil:
		return "closed", nil // EOF or reset
	}
	if _, err := io.Copy(io.Discard, resp.Body); errors.As(err, &netErr) && netErr.Timeout() {
		return "", err
	}
	if !resp.Close {
		return "", fmt.Errorf("a %d without Connection: close", resp.StatusCode)
	}
	if _, err := br.ReadByte(); errors.As(err, &netErr) && netErr.Timeout() {
		return "", fmt.Errorf("a %d, and the connection left open", resp.StatusCode)
	}
	return strconv.Itoa(resp.StatusCode), nil
}

// metric returns the value of the series named (with its labels) in a
// Prometheus text scrape.
func metric(t *testing.T, scrape, series string) float64 {
	t.Helper()
	for _, line := range strings.Split(scrape, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	t.Fatalf("no %s in the metrics", series)
	return 0
}

// TestHostedSilentAddresses: a server that may open 1,024 files, and
// sixteen loopback addresses keeping all its places taken with silent
// connections, each opening another as soon as the server closes one of
// theirs: a valid user's 43 calls, each on a new connection, all succeed.
func TestHostedSilentAddresses(t *testing.T) {
	const serverFiles, addresses, perAddress, calls = 1024, 16, 64, 43
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	if rl.Max < serverFiles || rl.Cur < addresses*perAddress+512 {
		t.Skipf("open files: %d, hard limit %d: too few for this test", rl.Cur, rl.Max)
	}
	iss, args := issuerArgs(t)
	p := startServeWithFiles(t, serverFiles, append([]string{"--stateless"}, args...)...)
	addr := strings.TrimPrefix(p.base, "http://")
	caps := p.stderr.wait(t, "connections capped", p.exited)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer func() {
		close(stop)
		wg.Wait()
	}()
	closed := make(chan struct{}, addresses*perAddress)
	for i := range addresses {
		d := net.Dialer{Timeout: time.Minute, LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(i+2))}}
		for range perAddress {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					c, err := d.Dial("tcp", addr)
					if err != nil {
						continue
					}
					done := make(chan struct{})
					go func() {
						select {
						case <-stop:
						case <-done:
						}
						c.Close()
					}()
					_, _ = io.Copy(io.Discard, c) // until the server closes it
					close(done)
					select {
					case closed <- struct{}{}:
					default:
					}
				}
			})
		}
	}
	// The server is full once it closes silent connections faster than
	// the header timeout would.
	full := int(caps["max_connections"].(float64))
	for range full {
		select {
		case <-closed:
		case <-time.After(time.Minute):
			t.Fatal("the silent connections did not fill the server")
		}
	}

	token := iss.Token(t, "RS256", "alice")
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: time.Minute}
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_script","arguments":{"script":"return 1 + 1"}}}`
	failed := 0
	for i := range calls {
		resp := rpc(t, client, p.url, token, call)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"structuredContent":{"result":2`) {
			t.Errorf("call %d: status %d, %.300s", i, resp.StatusCode, body)
			failed++
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d calls of a valid user failed", failed, calls)
	}
}
