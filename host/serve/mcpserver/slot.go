package mcpserver

import (
	"context"
	"errors"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolscript/toolscript/host/contract/limit"
	"github.com/toolscript/toolscript/host/serve/accesslog"
	"github.com/toolscript/toolscript/host/serve/auth"
	"github.com/toolscript/toolscript/host/serve/metrics"
)

// withSlot holds one of the user's execution slots while the call goes on,
// waiting for one (Config.QueueWait). No slot within the wait is a
// JSON-RPC error: the call was not run, and may be retried. A call
// cancelled while it waits is answered as cancelled.
func (s *Server) withSlot(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		user, _ := auth.UserFrom(ctx)
		release, err := s.slots.Acquire(ctx, user)
		if err != nil {
			var busy *limit.BusyError
			if !errors.As(err, &busy) {
				return cancelled(), nil
			}
			if busy.PerUser {
				s.cfg.Metrics.Refused(metrics.LimitUserSlots)
			} else {
				s.cfg.Metrics.Refused(metrics.LimitOverallSlots)
			}
			accesslog.FromContext(ctx).SetOutcome(outcomeBusy, "")
			return nil, err
		}
		defer release()
		return next(ctx, req)
	}
}
