package mcpserver

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolscript/toolscript/host/sdk/sdkdocs"
)

// awaitSDK is the sdk's docs a discovery tool or an sdk:// resource
// answers from: once no upstream MCP server is starting any more
// (Config.AwaitSDK), or its wait is over.
func (s *Server) awaitSDK(ctx context.Context) *sdkdocs.Docs {
	if s.cfg.AwaitSDK != nil {
		s.cfg.AwaitSDK(ctx)
	}
	return s.sdkDocs.Load()
}

// pendingResult is a listing as a tool result; one of the whole sdk (all)
// ends with which upstream MCP servers it lacks because they are still
// starting or down.
func pendingResult(d *sdkdocs.Docs, all bool, p sdkdocs.Page, err error) (*mcp.CallToolResult, error) {
	if err == nil && all {
		if note := d.PendingNote(); note != "" {
			p.Text += "\n" + note
		}
	}
	return pageResult(p, err)
}
