package sdk

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/contract/effects/effectstest"
	"github.com/toolscript/toolscript/host/contract/redact"
	"github.com/toolscript/toolscript/host/contract/telemetry"
)

// TestTracingPropagateTrace: an OpenAPI call's span is the child of the
// span of its context; the API is sent its traceparent only with
// PropagateTrace, never over a header the credential sets; the effect of
// the call (what a plan binds) has no trace header, so a plan made
// without tracing holds the call made with it.
func TestTracingPropagateTrace(t *testing.T) {
	a := newTestAPI(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	tracer := telemetry.New(tp, redact.New(), "test")
	for _, c := range []struct {
		name      string
		propagate bool
		cred      *Credential
		want      string // "span": the call's span's traceparent
	}{
		{"off", false, nil, ""},
		{"on", true, nil, "span"},
		{"the credential's header wins", true, &Credential{Type: AuthAPIKey, Value: "cred-value", Name: "traceparent", In: "header"}, redact.Redacted}, // the echo of a credential is redacted
	} {
		t.Run(c.name, func(t *testing.T) {
			cl := newClient(t, a, Config{Tracer: tracer}, APIConfig{PropagateTrace: c.propagate, Auth: c.cred})
			ctx, parent := tp.Tracer("test").Start(context.Background(), "parent")
			defer parent.End()
			resp := cl.Session(nil).Call(ctx, fnID(t, cl, "echo"), json.RawMessage(`[{"value":"v","q":"secret-query"}]`))
			got := echoed(t, resp).Headers["traceparent"]
			spans := rec.Ended()
			span := spans[len(spans)-1]
			if span.Parent().SpanID() != parent.SpanContext().SpanID() || span.SpanKind() != trace.SpanKindClient {
				t.Fatalf("span %s: parent %s kind %s", span.Name(), span.Parent().SpanID(), span.SpanKind())
			}
			want := c.want
			if want == "span" {
				want = "00-" + span.SpanContext().TraceID().String() + "-" + span.SpanContext().SpanID().String() + "-01"
			}
			if got != want {
				t.Errorf("the API saw traceparent %q, want %q", got, want)
			}
			for _, kv := range span.Attributes() {
				if strings.Contains(kv.Value.String(), "secret-query") {
					t.Errorf("attribute %s = %q holds the query", kv.Key, kv.Value.String())
				}
			}
		})
	}
	// A plan made by a dry run without tracing holds the real call made
	// with it: the trace header is no part of the effect.
	plain := newClient(t, a, Config{}, APIConfig{PropagateTrace: true})
	dry := effects.New(effects.DryRun)
	call(t, plain.Session(nil).WithEffects(dry), "create_pet", `[{"name":"Rex","status":"sold"}]`)
	log, _ := dry.Effects()
	if h := log[0].Headers; h["traceparent"] != "" || h["Traceparent"] != "" {
		t.Errorf("the effect's headers %v hold the trace", h)
	}
	plan := effectstest.Plan(t, log)
	traced := newClient(t, a, Config{Tracer: tracer}, APIConfig{PropagateTrace: true})
	run := effects.NewPlan(plan)
	ctx, parent := tp.Tracer("test").Start(context.Background(), "parent")
	defer parent.End()
	if r := traced.Session(nil).WithEffects(run).Call(ctx, fnID(t, traced, "create_pet"), json.RawMessage(`[{"name":"Rex","status":"sold"}]`)); r.Fail != 0 || run.Err() != nil {
		t.Errorf("the plan run stopped: %+v %v", r, run.Err())
	}
}
