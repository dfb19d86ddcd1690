package mcpserver

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolscript/toolscript/host/serve/accesslog"
	"github.com/toolscript/toolscript/host/serve/metrics"
)

// observe counts the execution in the metrics (when set) and writes its
// outcome to the access log: ok, or error with the error's kind, and the
// count of each decision the rules made of its effects.
func (s *Server) observe(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		x := executionFrom(ctx)
		done := s.cfg.Metrics.Start()
		out, err := next(ctx, req)
		if x.paused {
			done(nil)
			accesslog.FromContext(ctx).SetOutcome(metrics.OutcomePaused, "")
			return out, err
		}
		done(x.res)
		record := accesslog.FromContext(ctx)
		for _, e := range x.res.Effects {
			record.AddDecision(e.Decision)
		}
		if x.res.Failed() {
			accesslog.FromContext(ctx).SetOutcome(metrics.OutcomeError, string(x.res.Error.Kind))
		} else {
			accesslog.FromContext(ctx).SetOutcome(metrics.OutcomeOK, "")
		}
		return out, err
	}
}
