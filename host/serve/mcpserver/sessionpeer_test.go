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
	long := strings.Repeat("x", 1_000_000)
	tests := []struct {
		name         string
		capabilities string
		clientInfo   string
	}{
		{"experimental capabilities", `{"experimental":{"x":[` + filler(30_000, "{}") + `]}}`, `{"name":"c","version":"1"}`},
		{"an experimental string", `{"experimental":{"x":"` + long + `"}}`, `{"name":"c","version":"1"}`},
		{"extensions", `{"extensions":{"x":"` + long + `"}}`, `{"name":"c","version":"1"}`},
		{"a long name", `{}`, `{"name":"` + long + `","version":"` + long + `"}`},
		{"icons", `{}`, `{"name":"c","version":"1","icons":[{"src":"` + long + `"}],"title":"` + long + `"}`},
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
			// At most one request's bytes, and some slack for the heap's noise.
			if grown, limit := int64(heapInUse())-int64(before), int64(len(body)+1<<20); grown > limit {
				t.Errorf("%d sessions opened with initialize requests of %d bytes hold %d bytes of heap, more than %d",
					sessions, len(body), grown, limit)
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
