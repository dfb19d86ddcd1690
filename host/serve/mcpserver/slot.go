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
		release, res, err := s.acquireSlot(ctx)
		if release == nil {
			return res, err
		}
		defer release()
		return next(ctx, req)
	}
}

// acquireSlot waits for one of the user's slots, for execute_script and
// check_script alike. Without one, release is nil and the call answers
// res and err: a refusal counted and logged (a JSON-RPC error), or a
// cancellation.
func (s *Server) acquireSlot(ctx context.Context) (release func(), res *mcp.CallToolResult, err error) {
	user, _ := auth.UserFrom(ctx)
	release, err = s.slots.Acquire(ctx, user)
	if err == nil {
		return release, nil, nil
	}
	var busy *limit.BusyError
	if !errors.As(err, &busy) {
		return nil, cancelled(), nil
	}
	if busy.PerUser {
		s.cfg.Metrics.Refused(metrics.LimitUserSlots)
	} else {
		s.cfg.Metrics.Refused(metrics.LimitOverallSlots)
	}
	accesslog.FromContext(ctx).SetOutcome(outcomeBusy, "")
	return nil, nil, err
}
