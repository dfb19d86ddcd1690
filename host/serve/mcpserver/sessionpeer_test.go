package mcpserver_test

import (
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
)

// TestHTTPSessionKeepsLittleOfInitialize: what a session keeps of what its
// client declared at initialize is bounded, whatever the client sent: a
// user opening sessions with initialize requests as large as a request may
// be (experimental capabilities, a long name, many icons) cannot make the
// server hold their bytes, decoded, for as long as the sessions live.
func TestHTTPSessionKeepsLittleOfInitialize(t *testing.T) {
	const sessions = 8
	filler := func(n int, item string) string {
		return strings.TrimSuffix(strings.Repeat(item+",", n), ",")
	}
	const n = 300_000
	tests := []struct {
		name         string
		capabilities string
		clientInfo   string
	}{
		{"experimental capabilities", `{"experimental":{"x":[` + filler(n, "0") + `]}}`, `{"name":"c","version":"1"}`},
		{"extensions", `{"extensions":{"x":[` + filler(n, "{}") + `]}}`, `{"name":"c","version":"1"}`},
		{"a long name", `{}`, `{"name":"` + strings.Repeat("n", 4*n) + `","version":"` + strings.Repeat("v", 4*n) + `"}`},
		{"many icons", `{}`, `{"name":"c","version":"1","icons":[` + filler(n/4, `{"src":"a","sizes":["1"]}`) + `]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startHosted(t, hostedOptions{maxScript: 256 << 10})
			body := `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":` +
				tt.capabilities + `,"clientInfo":` + tt.clientInfo + `}}`
			before := heapInUse()
			for range sessions {
				resp := h.post(t, "alice", "", body)
				_, _ = io.Copy(io.Discard, resp.Body)
				if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
					t.Fatalf("initialize of %d bytes: status %d, session %q", len(body), resp.StatusCode, resp.Header.Get("Mcp-Session-Id"))
				}
			}
			// The sessions are open: what they hold is what stays.
			if grown := int64(heapInUse()) - int64(before); grown > int64(len(body)) {
				t.Errorf("%d sessions opened with initialize requests of %d bytes hold %d bytes of heap, more than one request's",
					sessions, len(body), grown)
			}
		})
	}
}

// heapInUse returns the bytes of live heap objects after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
