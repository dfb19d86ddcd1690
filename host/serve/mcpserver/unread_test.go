//go:build unix

package mcpserver_test

import (
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolscript/toolscript/host/contract/limit"
	"github.com/toolscript/toolscript/host/serve/mcpserver"
	"github.com/toolscript/toolscript/host/serve/metrics"
	"github.com/toolscript/toolscript/internal/testrpc"
	"github.com/toolscript/toolscript/internal/testwait"
)

// largeResult is a script whose result is 1 MiB: its response is more
// than 2 MiB (the result's text, and the same as structured content).
const largeResult = `return string.rep("x", 1048576)`

// inlineAll answers every result inline, however large: these tests are
// about the responses' bytes.
var inlineAll = mcpserver.LargeResults{MaxInline: 1 << 30}

// unread sends a tools/call of script as sub on a connection of its own
// that takes in almost nothing (a receive buffer of a few KiB) and never
// reads; the connection is closed when the test ends, or by close.
func (h *hostedServer) unread(t *testing.T, sub, script string) (close func()) {
	t.Helper()
	d := net.Dialer{Timeout: 30 * time.Second, Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		if cerr := c.Control(func(fd uintptr) {
			err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		}); cerr != nil {
			return cerr
		}
		return err
	}}
	addr := strings.TrimPrefix(strings.TrimSuffix(h.url, "/mcp"), "http://")
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	body := testrpc.ToolCall("big", script)
	head := "POST /mcp HTTP/1.1\r\nHost: " + addr + "\r\nAuthorization: Bearer " + h.token(t, sub) +
		"\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2025-06-18\r\n" +
		fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body))
	if _, err := io.WriteString(c, head+body); err != nil {
		t.Fatal(err)
	}
	return func() { c.Close() }
}

// TestHTTPUnreadResponses: clients that call scripts with large results
// and never read the responses hold no more of the host than its budget:
// each response counts against it until written, a user's within
// max_unwritten_bytes_per_user (past it their results are dropped and
// counted); a valid user is served meanwhile, large results included;
// the bytes come back as the connections close.
func TestHTTPUnreadResponses(t *testing.T) {
	budget, err := limit.NewBytes("max_host_bytes_total", 16<<20)
	if err != nil {
		t.Fatal(err)
	}
	h := startHosted(t, hostedOptions{stateless: true, budget: budget, largeResults: inlineAll, maxUnwritten: 5 << 20})
	const hostile, callsEach, heldEach = 3, 4, 2 // two 2 MiB responses fit 5 MiB
	closers := make([]func(), 0, hostile*callsEach)
	for i := range hostile {
		for range callsEach {
			closers = append(closers, h.unread(t, fmt.Sprint("mallory", i), largeResult))
		}
	}
	refused := func() int {
		return int(counter(t, h.metrics, "toolscript_limit_refusals_total", "limit", metrics.LimitUnwrittenBytes))
	}
	// Each hostile user's first two responses are held, unwritten; the
	// others were dropped (their short answers written).
	testwait.Until(t, "the hostile users' results held or dropped", func() bool {
		return refused() == hostile*(callsEach-heldEach) && budget.Held() >= hostile*heldEach*2<<20
	})
	if held := budget.Held(); held > budget.Size() {
		t.Fatalf("%d bytes held for %d unwritten responses of 2 MiB, in a budget of %d", held, hostile*heldEach, budget.Size())
	}

	// A valid user is served, a large result included.
	c := h.connect(t, "alice")
	for i := range 5 {
		if got := run(t, c, fmt.Sprintf("return %d", i), nil); got.Error != nil || string(got.Result) != fmt.Sprint(i) {
			t.Fatalf("call %d: %+v", i, got)
		}
	}
	if got := run(t, c, largeResult, nil); got.Error != nil || len(got.Result) != 1<<20+2 {
		t.Fatalf("a large result: %d bytes, error %+v", len(got.Result), got.Error)
	}

	// The bytes come back as the hostile connections close.
	for _, close := range closers {
		close()
	}
	testwait.Until(t, "the budget given back", func() bool { return budget.Held() == 0 })
}

// TestHTTPUnreadResponseTimesOut: a response the client does not read
// within the write timeout fails, and gives its bytes back, though the
// client keeps its connection open.
func TestHTTPUnreadResponseTimesOut(t *testing.T) {
	budget, err := limit.NewBytes("max_host_bytes_total", 16<<20)
	if err != nil {
		t.Fatal(err)
	}
	h := startHosted(t, hostedOptions{stateless: true, budget: budget, largeResults: inlineAll, writeTimeout: 3 * time.Second})
	h.unread(t, "mallory", largeResult)
	testwait.Until(t, "the response held", func() bool { return budget.Held() > 0 })
	testwait.Until(t, "the response given up", func() bool { return budget.Held() == 0 })
}

// TestHTTPWriteTimeoutSparesLongScripts: the write timeout bounds writes,
// not scripts: a script that runs longer than it before its response is
// answered, and so is one whose event stream goes on for longer than it,
// an event at a time.
func TestHTTPWriteTimeoutSparesLongScripts(t *testing.T) {
	budget, err := limit.NewBytes("max_host_bytes_total", 16<<20)
	if err != nil {
		t.Fatal(err)
	}
	const timeout = 300 * time.Millisecond
	h := startHosted(t, hostedOptions{stateless: true, budget: budget, largeResults: inlineAll, writeTimeout: timeout})
	c := h.connect(t, "alice")
	// Each runs for four write timeouts of its own clock, however slow the
	// machine.
	spin := fmt.Sprintf(`local t = os.clock() while os.clock() - t < %g do end`, (4 * timeout).Seconds())
	if got := run(t, c, spin+` return "quiet"`, nil); got.Error != nil || string(got.Result) != `"quiet"` {
		t.Errorf("a quiet script: %+v", got)
	}
	streamed := fmt.Sprintf(`for i = 1, 40 do local t = os.clock() while os.clock() - t < %g do end progress(i, 40) end return "streamed"`,
		(4 * timeout / 40).Seconds())
	if got := run(t, c, streamed, &mcp.Meta{ProgressToken: "p"}); got.Error != nil || string(got.Result) != `"streamed"` {
		t.Errorf("a script with progress: %+v", got)
	}
}
