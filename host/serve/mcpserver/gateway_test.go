package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// floodServer is a Server with a tool, flood, that makes n roots/list
// requests through the gateway of its call, as an upstream asking the
// client again and again would, and returns how many were answered and
// the first refusal.
func floodServer(t *testing.T, n int) *Server {
	t.Helper()
	s := newServer(t, Config{})
	s.mcp.AddTool(mcp.NewTool("flood"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		g := s.gateway(ctx, nil)
		answered, refusal := 0, ""
		for range n {
			if _, err := g.Request(ctx, string(mcp.MethodListRoots), json.RawMessage("{}")); err != nil {
				if refusal == "" {
					refusal = err.Error()
				}
				continue
			}
			answered++
		}
		return mcp.NewToolResultText(fmt.Sprintf("%d answered; %s", answered, refusal)), nil
	})
	return s
}

// TestGatewayBounds: a client is asked what it declared only, and at most
// maxRelayed times for one call; what is refused says why.
func TestGatewayBounds(t *testing.T) {
	for _, tc := range []struct {
		name, capabilities, meta string
		want                     string
	}{
		{"roots declared", `{"roots":{}}`, "", fmt.Sprintf("%d answered; toolscript relays at most %d requests", maxRelayed, maxRelayed)},
		{"nothing declared", `{}`, "", "0 answered; the client of this call does not support roots (it did not declare the roots capability)"},
		{"protocol 2026-07-28", `{"roots":{}}`, `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{}},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"}}`, "0 answered; the client of this call is not asked for roots here: under MCP 2026-07-28"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inW, lines, end := servePipes(floodServer(t, 3*maxRelayed))
			io.WriteString(inW, initializeLines(tc.capabilities))
			io.WriteString(inW, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"flood"`+tc.meta+`}}`+"\n")
			asked := 0
			for lines.Scan() {
				var m map[string]any
				if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
					t.Fatal(err)
				}
				if m["method"] == "roots/list" {
					asked++
					id, _ := json.Marshal(m["id"])
					io.WriteString(inW, `{"jsonrpc":"2.0","id":`+string(id)+`,"result":{"roots":[]}}`+"\n")
					continue
				}
				if m["id"] != 2.0 {
					continue
				}
				text, _ := json.Marshal(m["result"])
				if !strings.Contains(string(text), tc.want) {
					t.Errorf("result %s (%s), want %q", text, lines.Bytes(), tc.want)
				}
				break
			}
			if want := map[bool]int{true: maxRelayed}[tc.name == "roots declared"]; asked != want {
				t.Errorf("the client was asked %d times, want %d", asked, want)
			}
			end()
		})
	}
}

// TestGatewayBoundAtOnce: while maxRelayedAtOnce requests of one call
// await the client's answer, the next is refused at once.
func TestGatewayBoundAtOnce(t *testing.T) {
	s := newServer(t, Config{})
	pending := make(chan struct{}) // closed once the client holds maxRelayedAtOnce requests
	tried := make(chan struct{})   // closed once the call made one more
	s.mcp.AddTool(mcp.NewTool("hold"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		g := s.gateway(ctx, nil)
		answered := make(chan error, maxRelayedAtOnce)
		for range maxRelayedAtOnce {
			go func() {
				_, err := g.Request(ctx, string(mcp.MethodListRoots), json.RawMessage("{}"))
				answered <- err
			}()
		}
		<-pending
		_, extra := g.Request(ctx, string(mcp.MethodListRoots), json.RawMessage("{}"))
		close(tried)
		for range maxRelayedAtOnce {
			if err := <-answered; err != nil {
				return mcp.NewToolResultError(err.Error()), nil
			}
		}
		return mcp.NewToolResultText(fmt.Sprintf("extra: %v", extra)), nil
	})
	inW, lines, end := servePipes(s)
	io.WriteString(inW, initializeLines(`{"roots":{}}`))
	io.WriteString(inW, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hold"}}`+"\n")
	var held []string
	for lines.Scan() {
		var m map[string]any
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		if m["method"] == "roots/list" {
			id, _ := json.Marshal(m["id"])
			held = append(held, string(id))
			switch {
			case len(held) == maxRelayedAtOnce:
				close(pending)
				// The held requests are answered once the call tried one
				// more; one more that went out (a broken bound) is
				// answered at once, so that the test fails, not hangs.
				go func(ids []string) {
					<-tried
					for _, id := range ids {
						io.WriteString(inW, `{"jsonrpc":"2.0","id":`+id+`,"result":{"roots":[]}}`+"\n")
					}
				}(held)
			case len(held) > maxRelayedAtOnce:
				io.WriteString(inW, `{"jsonrpc":"2.0","id":`+string(id)+`,"result":{"roots":[]}}`+"\n")
			}
			continue
		}
		if m["id"] != 2.0 {
			continue
		}
		text, _ := json.Marshal(m["result"])
		if want := fmt.Sprintf("extra: toolscript relays at most %d requests of upstream servers to the client of one execute_script call at once", maxRelayedAtOnce); !strings.Contains(string(text), want) {
			t.Errorf("result %s, want %q", text, want)
		}
		break
	}
	if len(held) != maxRelayedAtOnce {
		t.Errorf("the client was asked %d times, want %d", len(held), maxRelayedAtOnce)
	}
	end()
}
