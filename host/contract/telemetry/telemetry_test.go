package telemetry_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolscript/toolscript/host/contract/redact"
	"github.com/toolscript/toolscript/host/contract/telemetry"
)

const secret = "s3cr3t-token-value"

// newTracer is a Tracer over the SDK's provider that keeps its ended
// spans in memory.
func newTracer(t *testing.T) (*telemetry.Tracer, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	return telemetry.New(tp, redact.New(redact.NewSecret(secret)), "test"), rec
}

func TestTelemetryValueIsRedactedEscapedAndCapped(t *testing.T) {
	tr, _ := newTracer(t)
	for _, c := range []struct {
		name, in string
		check    func(string) bool
	}{
		{"secret", "Bearer " + secret, func(v string) bool { return !strings.Contains(v, secret) && strings.Contains(v, redact.Redacted) }},
		{"secret in another case", "x " + strings.ToUpper(secret), func(v string) bool { return !strings.Contains(strings.ToLower(v), secret) }},
		{"terminal escape", "a\x1b]52;c;aGk=\x07b\nc", func(v string) bool { return !strings.ContainsAny(v, "\x1b\x07\n") }},
		{"bad UTF-8", "a\xff\xfeb", func(v string) bool { return utf8.ValidString(v) }},
		{"huge", strings.Repeat("é", 10000), func(v string) bool {
			return len(v) <= telemetry.MaxValueBytes && utf8.ValidString(v) && strings.HasSuffix(v, "...")
		}},
		{"short", "plain", func(v string) bool { return v == "plain" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := tr.Value(c.in); !c.check(got) {
				t.Errorf("Value(%.40q) = %.80q", c.in, got)
			}
		})
	}
}

func TestTelemetryOffCostsNoAllocation(t *testing.T) {
	var off *telemetry.Tracer
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		c, span := off.Start(ctx, telemetry.SpanExecution, trace.SpanKindInternal)
		if span.Recording() {
			t.Fatal("recording with tracing off")
		}
		span.String(telemetry.KeyOutcome, "ok")
		span.Fail("runtime", "boom")
		span.End()
		_ = off.FromMeta(c, map[string]any{telemetry.Traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})
	})
	if allocs != 0 {
		t.Errorf("tracing off allocates %v times per span", allocs)
	}
}

const parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

func TestTelemetryFromMetaIgnoresHostileValues(t *testing.T) {
	tr, rec := newTracer(t)
	for _, c := range []struct {
		name   string
		meta   map[string]any
		parent bool
	}{
		{"well formed", map[string]any{"traceparent": parent, "tracestate": "k=v"}, true},
		{"tracestate too long is dropped, parent kept", map[string]any{"traceparent": parent, "tracestate": strings.Repeat("k=v,", 1000)}, true},
		{"not a string", map[string]any{"traceparent": 42}, false},
		{"object", map[string]any{"traceparent": map[string]any{"x": parent}}, false},
		{"huge", map[string]any{"traceparent": parent + strings.Repeat("-00", 1<<16)}, false},
		{"malformed", map[string]any{"traceparent": "00-zz-yy-01"}, false},
		{"zero trace id", map[string]any{"traceparent": "00-00000000000000000000000000000000-b7ad6b7169203331-01"}, false},
		{"nil", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := tr.FromMeta(context.Background(), c.meta)
			_, span := tr.Start(ctx, telemetry.SpanExecuteScript, trace.SpanKindServer)
			span.End()
			spans := rec.Ended()
			got := spans[len(spans)-1]
			if has := got.Parent().IsValid(); has != c.parent {
				t.Fatalf("parent %v, want %v", got.Parent(), c.parent)
			}
			if c.parent && got.Parent().TraceID().String() != "0af7651916cd43dd8448eb211c80319c" {
				t.Errorf("trace %s, want the client's", got.Parent().TraceID())
			}
		})
	}
}

func TestTelemetryMetaWinsOverHeader(t *testing.T) {
	tr, _ := newTracer(t)
	h := http.Header{}
	h.Set("traceparent", "00-11111111111111111111111111111111-2222222222222222-01")
	ctx := tr.FromHeader(context.Background(), h)
	ctx = tr.FromMeta(ctx, map[string]any{"traceparent": parent})
	if got := trace.SpanContextFromContext(ctx).TraceID().String(); got != "0af7651916cd43dd8448eb211c80319c" {
		t.Errorf("trace %s, want _meta's", got)
	}
	// A malformed _meta leaves the header's.
	ctx = tr.FromMeta(tr.FromHeader(context.Background(), h), map[string]any{"traceparent": "junk"})
	if got := trace.SpanContextFromContext(ctx).TraceID().String(); got != "11111111111111111111111111111111" {
		t.Errorf("trace %s, want the header's", got)
	}
}

func TestTelemetryToHeaderNeverOverwrites(t *testing.T) {
	tr, _ := newTracer(t)
	ctx, span := tr.Start(context.Background(), "x", trace.SpanKindClient)
	defer span.End()
	for _, c := range []struct {
		name   string
		header http.Header
		want   func(string) bool
	}{
		{"empty", http.Header{}, func(v string) bool { return strings.HasPrefix(v, "00-") && len(v) == 55 }},
		{"frozen", http.Header{"Traceparent": {"frozen"}}, func(v string) bool { return v == "frozen" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			telemetry.ToHeader(ctx, c.header)
			if got := c.header.Get("traceparent"); !c.want(got) {
				t.Errorf("traceparent %q", got)
			}
		})
	}
	meta := telemetry.ToMeta(ctx, nil)
	if v, _ := meta["traceparent"].(string); !strings.Contains(v, trace.SpanContextFromContext(ctx).SpanID().String()) {
		t.Errorf("_meta %v does not carry the span", meta)
	}
	if meta := telemetry.ToMeta(context.Background(), nil); meta != nil {
		t.Errorf("no span, yet _meta %v", meta)
	}
}

func FuzzTelemetryFromMeta(f *testing.F) {
	f.Add(parent, "k=v")
	f.Add("00-zz", "")
	f.Add(strings.Repeat("f", 300), strings.Repeat(",", 600))
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tr := telemetry.New(tp, nil, "fuzz")
	f.Fuzz(func(t *testing.T, p, s string) {
		ctx := tr.FromMeta(context.Background(), map[string]any{"traceparent": p, "tracestate": s})
		sc := trace.SpanContextFromContext(ctx)
		if sc.IsValid() && len(p) > 256 {
			t.Errorf("a traceparent of %d bytes was read", len(p))
		}
	})
}
