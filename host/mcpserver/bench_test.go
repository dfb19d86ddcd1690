package mcpserver

import (
	"context"
	"encoding/json"
	"io"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// BenchmarkMessageOverhead measures what the core adds to one tools/call
// round trip around mcp-go: decoding the line, the request table, and
// writing the response (here a ready one, to io.Discard).
func BenchmarkMessageOverhead(b *testing.B) {
	s, _, _ := testStdio(b)
	w := &lineWriter{w: io.Discard}
	line := []byte(`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"execute_script","arguments":{"script":"return 1"}}}`)
	resp := mcp.NewJSONRPCResultResponse(mcp.NewRequestId(12), mcp.NewToolResultText(`{"result":1,"logs":[],"files_touched":[]}`))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		raw := append(json.RawMessage(nil), line...)
		var msg envelope
		if err := json.Unmarshal(raw, &msg); err != nil {
			b.Fatal(err)
		}
		c := s.receive(incoming{ctx: ctx, msg: &msg, raw: raw, conn: w})
		s.respond(c, resp)
		c.cancel()
	}
}
