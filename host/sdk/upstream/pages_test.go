//go:build unix

package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolscript/toolscript/internal/syncbuf"
)

// pagingServer is a streamable HTTP MCP server (JSON responses) whose
// tools/list answers every page with a fresh cursor: page n lists
// perPage tools, each described by desc, until pages pages were served.
// It counts the pages it served.
func pagingServer(t *testing.T, pages, perPage int, desc string) (url string, served *atomic.Int64) {
	served = &atomic.Int64{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &msg); err != nil || msg.ID == nil {
			w.WriteHeader(http.StatusAccepted) // a notification
			return
		}
		var result any
		switch msg.Method {
		case "initialize":
			result = map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo": map[string]any{"name": "pager", "version": "1"}}
		case "tools/list":
			n := served.Add(1)
			tools := make([]map[string]any, perPage)
			for i := range tools {
				tools[i] = map[string]any{"name": fmt.Sprintf("t%d_%d", n, i), "description": desc,
					"inputSchema": map[string]any{"type": "object"}}
			}
			page := map[string]any{"tools": tools}
			if n < int64(pages) {
				page["nextCursor"] = fmt.Sprintf("c%d", n)
			}
			result = page
		default:
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": msg.ID,
				"error": map[string]any{"code": -32601, "message": "method not found"}})
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": result})
	}))
	t.Cleanup(srv.Close)
	return srv.URL, served
}

// TestToolListPages: a server that pages its tool list without end (a
// fresh cursor on every page) cannot make the host gather more than
// MaxTools tools, nor more bytes than one message may hold: the listing
// stops at the first page past either bound, with an error saying why,
// however many pages the server would serve.
func TestToolListPages(t *testing.T) {
	const maxResponse = 64 << 10
	for _, tc := range []struct {
		name           string
		perPage        int
		desc           string
		want           string
		mostPagesAsked int64
	}{
		{"tools", 100, "x", fmt.Sprintf("more than the %d tools a server may offer", MaxTools), MaxTools/100 + 1},
		{"empty pages", 0, "x", "more than", MaxTools + 1},
		{"bytes", 1, strings.Repeat("d", 60<<10), fmt.Sprintf("more than %d bytes", maxMessageBytes(maxResponse)),
			maxMessageBytes(maxResponse)/(60<<10) + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Three times the pages the bound allows: without it, the host
			// would gather them all.
			url, served := pagingServer(t, int(3*tc.mostPagesAsked), tc.perPage, tc.desc)
			ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
			defer cancel()
			set, err := Start(ctx, []Config{{Name: "pager", URL: url}}, Options{Stderr: &syncbuf.Buffer{}, MaxResponseBytes: maxResponse})
			if err == nil {
				set.Close()
				t.Fatalf("a tool list of %d pages started", 3*tc.mostPagesAsked)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("the error %q does not say %q", err, tc.want)
			}
			if n := served.Load(); n > tc.mostPagesAsked {
				t.Errorf("the host asked for %d pages, more than %d", n, tc.mostPagesAsked)
			}
		})
	}
}
