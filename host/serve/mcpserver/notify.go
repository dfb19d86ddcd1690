package mcpserver

import (
	"context"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// progressSettle is the least time between a progress notification and the
// response to its call.
const progressSettle = 5 * time.Millisecond

// withProgress turns the script's progress() calls (and its upstreams'
// progress) into notifications/progress on the call's connection, when
// the client sent a progress token.
func (s *Server) withProgress(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		c := callFrom(ctx)
		if c == nil || req.Params.Meta == nil || req.Params.Meta.ProgressToken == nil {
			return next(ctx, req)
		}
		x := executionFrom(ctx)
		token := req.Params.Meta.ProgressToken
		failed := false // only the first failure of a call is logged
		x.progress = newProgressReporter(s.cfg.ProgressInterval, func(u progressUpdate) {
			if ctx.Err() != nil { // a cancelled call's token is forgotten by the client
				return
			}
			if err := c.notify(string(mcp.MethodNotificationProgress), u.params(token)); err != nil && !failed {
				failed = true
				s.log.Printf("progress notification: %v", err)
			}
		})
		x.script.OnProgress = x.progress.report
		res, err := next(ctx, req)
		// The last notification is written before finish returns, and so
		// before the response: the client forgets the token with the
		// response. Still, a notification and the response that follows it
		// at once can reach a client in one read, and the TypeScript SDK
		// then handles the response first and reports the notification as
		// one for an unknown token (modelcontextprotocol/typescript-sdk#2580).
		// A short pause after the last notification keeps them apart.
		last := x.progress.finish()
		if wait := progressSettle - time.Since(last); wait > 0 && ctx.Err() == nil {
			time.Sleep(wait)
		}
		return res, err
	}
}
