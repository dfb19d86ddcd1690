package mcpserver

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// untilStopped ends the call's context with Stop (the hosted mode's
// shutdown), and answers a call cancelled before it got here without
// running it.
func (s *Server) untilStopped(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ctx, stop := context.WithCancel(ctx)
		defer stop()
		defer context.AfterFunc(s.stopped, stop)()
		if ctx.Err() != nil {
			return cancelled(), nil
		}
		return next(ctx, req)
	}
}
