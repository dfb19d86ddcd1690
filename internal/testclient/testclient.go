// Package testclient owns how tests connect an mcp-go client to a server
// under test: started, initialized as the client "toolscript-tests", and
// closed when the test ends; and how they call a tool and read its
// structured content.
package testclient

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolscript/toolscript/internal/testwait"
)

// Start starts c, closes it when the test ends, and initializes it asking
// for protocol version (empty: the client's own choice).
func Start(t testing.TB, c *client.Client, version string) (*mcp.InitializeResult, error) {
	t.Helper()
	t.Cleanup(func() { c.Close() })
	ctx := testwait.Context(t)
	if err := c.Start(ctx); err != nil {
		return nil, fmt.Errorf("starting the client: %w", err)
	}
	init, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: version,
		ClientInfo:      mcp.Implementation{Name: "toolscript-tests", Version: "1"},
	}})
	if err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	return init, nil
}

// HTTP returns a client of the streamable HTTP endpoint at url, started
// and initialized at mcp-go's latest protocol version, sending token as
// its bearer token (none when empty).
func HTTP(t testing.TB, url, token string, opts ...transport.StreamableHTTPCOption) (*client.Client, error) {
	t.Helper()
	if token != "" {
		opts = append(opts, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	}
	c, err := client.NewStreamableHttpClient(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("client of %s: %w", url, err)
	}
	if _, err := Start(t, c, mcp.LATEST_PROTOCOL_VERSION); err != nil {
		return nil, err
	}
	return c, nil
}

// Call calls the tool params names; a call the protocol fails (not a tool
// error, which is the result's) ends the test.
func Call(t testing.TB, c *client.Client, params mcp.CallToolParams) *mcp.CallToolResult {
	t.Helper()
	res, err := c.CallTool(testwait.Context(t), mcp.CallToolRequest{Params: params})
	if err != nil {
		t.Fatalf("tools/call %s: %v", params.Name, err)
	}
	return res
}

// Structured is res's structured content decoded into a T; content that
// does not decode into one ends the test.
func Structured[T any](t testing.TB, res *mcp.CallToolResult) T {
	t.Helper()
	var out T
	b, err := json.Marshal(res.StructuredContent)
	if err == nil {
		err = json.Unmarshal(b, &out)
	}
	if err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	return out
}
