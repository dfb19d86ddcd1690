package telemetry

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// The W3C trace context's fields, as a request's _meta (MCP, SEP-414) and
// HTTP headers name them.
const (
	Traceparent = "traceparent"
	Tracestate  = "tracestate"
)

// The longest traceparent and tracestate read: a version 00 traceparent
// is 55 characters (later versions may add fields), and W3C asks that a
// tracestate of up to 512 be kept. Longer values are ignored whole.
const (
	maxTraceparentBytes = 256
	maxTracestateBytes  = 512
)

// traceContext is the one propagator: W3C trace context, without
// baggage (baggage is a client's data toolscript neither reads nor
// passes on).
var traceContext propagation.TraceContext

// FromMeta returns ctx with the client's span read from a request's
// _meta (traceparent and tracestate) as the parent of the spans started
// from it; ctx as it is when t is nil or the _meta holds no such span. A
// value that is not a string, is too long or is malformed is ignored,
// never an error.
func (t *Tracer) FromMeta(ctx context.Context, meta map[string]any) context.Context {
	if t == nil || meta == nil {
		return ctx
	}
	parent, _ := meta[Traceparent].(string)
	state, _ := meta[Tracestate].(string)
	return remote(ctx, parent, state)
}

// FromHeader is FromMeta for an HTTP request's headers (the hosted
// mode): a request's _meta read later (FromMeta) wins.
func (t *Tracer) FromHeader(ctx context.Context, h http.Header) context.Context {
	if t == nil || h == nil {
		return ctx
	}
	return remote(ctx, h.Get(Traceparent), h.Get(Tracestate))
}

// remote returns ctx with the remote span of a traceparent and tracestate
// when they are well formed, else ctx.
func remote(ctx context.Context, parent, state string) context.Context {
	if parent == "" || len(parent) > maxTraceparentBytes {
		return ctx
	}
	carrier := propagation.MapCarrier{Traceparent: parent}
	if state != "" && len(state) <= maxTracestateBytes {
		carrier[Tracestate] = state
	}
	out := traceContext.Extract(ctx, carrier)
	if !trace.SpanContextFromContext(out).IsValid() {
		return ctx
	}
	return out
}

// ToMeta puts the trace context of ctx's span into a request's _meta
// (an upstream MCP server's tools/call) and returns it, made when nil; meta
// as it is when ctx has no span (tracing is off, or no span was started).
func ToMeta(ctx context.Context, meta map[string]any) map[string]any {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return meta
	}
	carrier := propagation.MapCarrier{}
	traceContext.Inject(ctx, carrier)
	if meta == nil {
		meta = make(map[string]any, len(carrier))
	}
	for k, v := range carrier {
		meta[k] = v
	}
	return meta
}

// ToHeader sets the traceparent and tracestate of ctx's span on h (an
// OpenAPI request to an API whose propagate_trace is on), except a header
// h holds already: one the operator froze, or a credential's, is never
// overwritten. Nothing when ctx has no span.
func ToHeader(ctx context.Context, h http.Header) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	carrier := propagation.MapCarrier{}
	traceContext.Inject(ctx, carrier)
	for k, v := range carrier {
		if _, set := h[http.CanonicalHeaderKey(k)]; !set {
			h.Set(k, v)
		}
	}
}
