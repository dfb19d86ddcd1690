// Package testrpc speaks raw JSON-RPC to an MCP server over streamable
// HTTP in tests: the request bodies, and the messages of a response (a
// JSON body or a stream of events) as they come.
package testrpc

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// ToolCall is a tools/call request of execute_script running script, with
// id as both its id and its progress token.
func ToolCall(id, script string) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
		"params": map[string]any{"name": "execute_script", "arguments": map[string]any{"script": script},
			"_meta": map[string]any{"progressToken": id}}})
	return string(b)
}

// Messages returns the JSON-RPC messages of a response as they come: its
// JSON body, or its events. The channel closes at the end of the body.
func Messages(resp *http.Response) <-chan map[string]any {
	out := make(chan map[string]any, 100)
	go func() {
		defer close(out)
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			var m map[string]any
			if json.NewDecoder(resp.Body).Decode(&m) == nil {
				out <- m
			}
			return
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var m map[string]any
				if json.Unmarshal([]byte(data), &m) == nil {
					out <- m
				}
			}
		}
	}()
	return out
}

// Next returns the next message, failing the test at the end of the
// response or after a minute without one (a watchdog, not a target).
func Next(t testing.TB, msgs <-chan map[string]any) map[string]any {
	t.Helper()
	select {
	case m, ok := <-msgs:
		if !ok {
			t.Fatal("the response ended")
		}
		return m
	case <-time.After(time.Minute):
		t.Fatal("no message for a minute")
	}
	return nil
}
