package mcpserver

import (
	"context"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolscript/toolscript/host/contract/telemetry"
	"github.com/toolscript/toolscript/host/serve/auth"
)

// traced is the outermost layer of execute_script: the call's span
// (Config.Tracer), as the MCP semantic conventions have a tools/call's
// ("tools/call execute_script", kind server): mcp.method.name,
// gen_ai.tool.name, jsonrpc.request.id, mcp.protocol.version, the hosted
// user, and how the call ended (ok, error with its kind, paused,
// invalid). Its parent is the client's span: the traceparent and
// tracestate of the request's _meta, else (the hosted mode) of the HTTP
// request's headers (withTraceHeaders); a value that is not one is
// ignored. It hands the call on as an execution (execution.go).
func (s *Server) traced(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		x := &execution{}
		ctx = context.WithValue(ctx, executionKey{}, x)
		tr := s.cfg.Tracer
		if tr == nil {
			return next(ctx, req)
		}
		if meta := req.Params.Meta; meta != nil {
			ctx = tr.FromMeta(ctx, meta.AdditionalFields)
		}
		ctx, span := tr.Start(ctx, telemetry.SpanExecuteScript, trace.SpanKindServer)
		if span.Recording() {
			startCallSpan(ctx, span)
		}
		out, err := next(ctx, req)
		if span.Recording() {
			endCallSpan(span, x, out, err)
		}
		return out, err
	}
}

// startCallSpan sets the attributes a call's span has from its start.
func startCallSpan(ctx context.Context, span telemetry.Span) {
	span.String(telemetry.KeyMCPMethod, string(mcp.MethodToolsCall))
	span.String(telemetry.KeyToolName, ToolName)
	span.String(telemetry.KeyOperationName, "execute_tool")
	if c := callFrom(ctx); c != nil && len(c.id) > 0 {
		span.String(telemetry.KeyJSONRPCID, strings.Trim(string(c.id), `"`))
	}
	if v := server.RequestProtocolVersion(ctx); v != "" {
		span.String(telemetry.KeyMCPProtocol, v)
	}
	if user, ok := auth.UserFrom(ctx); ok && user.Subject != "" {
		span.String(telemetry.KeyUser, user.Subject)
	}
}

// endCallSpan ends a call's span with its outcome.
func endCallSpan(span telemetry.Span, x *execution, out *mcp.CallToolResult, err error) {
	defer span.End()
	switch {
	case err != nil:
		span.String(telemetry.KeyOutcome, "error")
		span.Fail("jsonrpc", err.Error())
	case x.paused:
		span.String(telemetry.KeyOutcome, "paused")
	case x.res != nil && x.res.Failed():
		span.String(telemetry.KeyOutcome, "error")
		span.Fail(string(x.res.Error.Kind), x.res.Error.Message)
	case x.res == nil && out != nil && out.IsError:
		span.String(telemetry.KeyOutcome, outcomeInvalid)
		span.Fail(outcomeInvalid, "")
	default:
		span.String(telemetry.KeyOutcome, "ok")
	}
}
