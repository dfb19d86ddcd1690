// Package telemetry owns what toolscript's OpenTelemetry traces share:
// the span names, the one place a span is started from a context
// (Tracer.Start), the rule every attribute value passes (redacted by the
// configuration's one redactor, escaped, capped: Span.String), and the
// W3C trace context read from and written to a request (propagation.go).
//
// A nil *Tracer is tracing off: Start returns the context unchanged and a
// Span whose methods do nothing, with no allocation. host/app builds the
// one Tracer of a process from the OTEL_* environment and hands it to each
// package's Config; nothing here is global.
package telemetry

import (
	"context"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolscript/toolscript/host/contract/redact"
	"github.com/toolscript/toolscript/host/platform/termtext"
)

// The names of toolscript's spans. An MCP tools/call is named as the MCP
// semantic conventions name it ("{mcp.method.name} {gen_ai.tool.name}");
// an OpenAPI call as HTTP clients' spans are ("{http.request.method}
// {url.template}", made by HTTPSpanName) and an upstream MCP tool's call
// as the tools/call it makes (ToolCallSpanName).
const (
	SpanExecuteScript = "tools/call execute_script"
	SpanExecution     = "toolscript.execute"
	SpanApproval      = "toolscript.approval"
	SpanIO            = "toolscript.io"
	// EventDecision is the event of the execution's span for each effect
	// the [[policy]] rules decided.
	EventDecision = "toolscript.decision"
)

// Attribute keys of toolscript's own (the others are the semantic
// conventions').
const (
	// KeyExecutionKind is the execution's kind: run, dry_run, plan,
	// record or replay.
	KeyExecutionKind = attribute.Key("toolscript.execution.kind")
	// KeyOutcome is how the span's work ended: ok, error, paused,
	// denied, approved...
	KeyOutcome = attribute.Key("toolscript.outcome")
	// KeyUser is the hosted user's subject (enduser.id).
	KeyUser = attribute.Key("enduser.id")
	// KeyFunction is the sdk function called (sdk.API.name).
	KeyFunction = attribute.Key("toolscript.sdk.function")
	// KeyUpstream is the upstream MCP server's name.
	KeyUpstream = attribute.Key("toolscript.mcp.server")
	// KeyEffect is the effect an approval or io span is about (its
	// action: read, write, remove, call...).
	KeyEffect = attribute.Key("toolscript.effect")
	// KeyPath is the io path of an io span.
	KeyPath = attribute.Key("toolscript.io.path")
	// KeyRule is the [[policy]] rule that asked a person (an approval
	// span) or decided an effect (a decision event).
	KeyRule = attribute.Key("toolscript.policy.rule")
	// KeyDecision is what the rules decided of an effect (a decision
	// event: allowed, denied, approved, declined).
	KeyDecision = attribute.Key("toolscript.policy.decision")
)

// The semantic conventions' keys toolscript sets, from one release.
var (
	KeyMCPMethod       = semconv.McpMethodNameKey
	KeyMCPProtocol     = semconv.McpProtocolVersionKey
	KeyMCPSession      = semconv.McpSessionIDKey
	KeyToolName        = semconv.GenAIToolNameKey
	KeyOperationName   = semconv.GenAIOperationNameKey
	KeyJSONRPCID       = semconv.JSONRPCRequestIDKey
	KeyErrorType       = semconv.ErrorTypeKey
	KeyHTTPMethod      = semconv.HTTPRequestMethodKey
	KeyHTTPStatus      = semconv.HTTPResponseStatusCodeKey
	KeyURLFull         = semconv.URLFullKey
	KeyURLTemplate     = semconv.URLTemplateKey
	KeyServerAddress   = semconv.ServerAddressKey
	KeyServerPort      = semconv.ServerPortKey
	KeyNetworkProtocol = semconv.NetworkProtocolNameKey
)

// MaxValueBytes caps every string attribute value (and a span's status
// message): longer ones are cut at a character, "..." after them. The
// provider's SpanLimits (host/app) cap them again and cap the count.
const MaxValueBytes = 1024

// Tracer starts toolscript's spans; nil is tracing off.
type Tracer struct {
	tracer trace.Tracer
	redact *redact.Redactor
}

// InstrumentationName names toolscript's tracer (the scope of its spans).
const InstrumentationName = "github.com/toolscript/toolscript"

// New returns the Tracer of provider whose attribute values redactor
// redacts; nil (tracing off) when provider is nil.
func New(provider trace.TracerProvider, redactor *redact.Redactor, version string) *Tracer {
	if provider == nil {
		return nil
	}
	return &Tracer{
		tracer: provider.Tracer(InstrumentationName, trace.WithInstrumentationVersion(version), trace.WithSchemaURL(semconv.SchemaURL)),
		redact: redactor,
	}
}

// WithRedactor returns a Tracer of t's spans whose values r redacts too
// (an execution's redactor, which knows its request's credentials); nil
// when t is nil.
func (t *Tracer) WithRedactor(r *redact.Redactor) *Tracer {
	if t == nil || r == nil || r == t.redact {
		return t
	}
	return &Tracer{tracer: t.tracer, redact: r}
}

// Span is one started span: its methods do nothing when tracing is off
// or the span is not sampled.
type Span struct {
	span trace.Span
	t    *Tracer
}

// Start starts the span name of kind as a child of the span of ctx (a
// remote parent read from a request, or one of toolscript's), and
// returns the context that carries it. With t nil, ctx is returned as it
// is.
func (t *Tracer) Start(ctx context.Context, name string, kind trace.SpanKind) (context.Context, Span) {
	if t == nil {
		return ctx, Span{}
	}
	ctx, span := t.tracer.Start(ctx, name, trace.WithSpanKind(kind))
	if !span.IsRecording() {
		return ctx, Span{}
	}
	return ctx, Span{span: span, t: t}
}

// Recording reports whether the span records: attributes worth computing
// are computed only then.
func (s Span) Recording() bool { return s.span != nil }

// String sets the attribute key to value, redacted, escaped and capped.
func (s Span) String(key attribute.Key, value string) {
	if s.span == nil {
		return
	}
	s.span.SetAttributes(key.String(s.t.Value(value)))
}

// Int sets the attribute key to n.
func (s Span) Int(key attribute.Key, n int) {
	if s.span == nil {
		return
	}
	s.span.SetAttributes(key.Int(n))
}

// Event adds the event name to the span with attrs, each string value
// redacted, escaped and capped as String's. The SDK's span limits bound
// how many events a span keeps.
func (s Span) Event(name string, attrs ...attribute.KeyValue) {
	if s.span == nil {
		return
	}
	for i, a := range attrs {
		if a.Value.Type() == attribute.STRING {
			attrs[i] = a.Key.String(s.t.Value(a.Value.AsString()))
		}
	}
	s.span.AddEvent(name, trace.WithAttributes(attrs...))
}

// Fail marks the span failed: error.type is kind (a word of toolscript's:
// an error kind, a status), and its status carries message, redacted,
// escaped and capped.
func (s Span) Fail(kind, message string) {
	if s.span == nil {
		return
	}
	s.span.SetAttributes(KeyErrorType.String(s.t.Value(kind)))
	s.span.SetStatus(codes.Error, s.t.Value(message))
}

// End ends the span.
func (s Span) End() {
	if s.span != nil {
		s.span.End()
	}
}

// Value is text as an attribute value: the configuration's secrets
// redacted, characters that could act on a terminal escaped (a trace is
// read in one), invalid UTF-8 escaped, and at most MaxValueBytes long.
func (t *Tracer) Value(text string) string {
	if t != nil {
		text = t.redact.String(text)
	}
	return cut(termtext.Line(text), MaxValueBytes)
}

// cut is s in at most n bytes, cut at a character with "..." after it
// when longer.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	end := n - len("...")
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	var b strings.Builder
	b.Grow(end + 3)
	b.WriteString(s[:end])
	b.WriteString("...")
	return b.String()
}
