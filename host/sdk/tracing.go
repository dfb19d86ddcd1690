package sdk

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"go.opentelemetry.io/otel/trace"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/contract/sdkcall"
	"github.com/toolscript/toolscript/host/contract/telemetry"
)

// A call's span (Config.Tracer): one per call that is sent, a child of
// the execution's span, started when the call has its slot. An OpenAPI
// operation's follows the HTTP client conventions: "{method}
// {path template}", http.request.method, url.template, url.full without
// its query or user information, server.address and server.port,
// http.response.status_code; an MCP tool's follows the MCP conventions:
// "tools/call {tool}", mcp.method.name, gen_ai.tool.name and the
// server's name. Both name the sdk function. No body, no header and no
// credential is an attribute; every value passes the session's redactor
// (the configuration's secrets and the request's credentials). A call
// the effects layer held (a dry run's, a replay's) is sent nowhere and
// has no span.

// startCall starts the span of a call of f (req is an OpenAPI
// operation's request, nil for a tool).
func (s *Session) startCall(ctx context.Context, f *function, req *http.Request) (context.Context, telemetry.Span) {
	tr := s.c.cfg.Tracer
	if tr == nil {
		return ctx, telemetry.Span{}
	}
	tr = tr.WithRedactor(s.redact)
	if f.fn.Kind == catalog.MCP {
		ctx, span := tr.Start(ctx, "tools/call "+tr.Value(f.fn.Tool), trace.SpanKindClient)
		if span.Recording() {
			span.String(telemetry.KeyMCPMethod, "tools/call")
			span.String(telemetry.KeyOperationName, "execute_tool")
			span.String(telemetry.KeyToolName, f.fn.Tool)
			span.String(telemetry.KeyUpstream, f.api.api.Name)
			span.String(telemetry.KeyFunction, f.name)
		}
		return ctx, span
	}
	ctx, span := tr.Start(ctx, req.Method+" "+tr.Value(f.fn.Path), trace.SpanKindClient)
	if span.Recording() {
		span.String(telemetry.KeyHTTPMethod, req.Method)
		span.String(telemetry.KeyURLTemplate, f.fn.Path)
		span.String(telemetry.KeyURLFull, urlWithoutSecrets(req.URL))
		span.String(telemetry.KeyServerAddress, req.URL.Hostname())
		if port, err := strconv.Atoi(req.URL.Port()); err == nil {
			span.Int(telemetry.KeyServerPort, port)
		}
		span.String(telemetry.KeyFunction, f.name)
	}
	return ctx, span
}

// endCall ends a call's span with its outcome: the HTTP status, and for
// a failure its kind (the status of an HTTP error, as the HTTP
// conventions' error.type) and message.
func endCall(span telemetry.Span, out *sdkcall.Response) {
	if !span.Recording() {
		return
	}
	if out.Status > 0 {
		span.Int(telemetry.KeyHTTPStatus, out.Status)
	}
	switch {
	case out.Status >= 400:
		span.Fail(strconv.Itoa(out.Status), out.Message)
	case out.Fail == sdkcall.Upstream && out.Content != nil:
		span.Fail("tool_error", out.Message)
	case out.Fail != sdkcall.OK:
		span.Fail(failureName(out.Fail), out.Message)
	}
	span.End()
}

// failureName is a failure's word in a span's error.type.
func failureName(f sdkcall.Failure) string {
	switch f {
	case sdkcall.Argument:
		return "argument"
	case sdkcall.Limit:
		return "limit"
	}
	return "upstream"
}

// urlWithoutSecrets is u as url.full: without its user information and
// its query (whose values may be credentials or a person's data; the
// path's values pass the redactor).
func urlWithoutSecrets(u *url.URL) string {
	clean := *u
	clean.User = nil
	clean.RawQuery = ""
	clean.ForceQuery = false
	clean.Fragment, clean.RawFragment = "", ""
	return clean.String()
}
