package mcpserver

import (
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolscript/toolscript/host/contract/redact"
	"github.com/toolscript/toolscript/host/contract/telemetry"
	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/internal/testruntime"
)

// TestTracingCallSpans: each execute_script call has its span, a child
// of the client's traceparent in _meta when that is one, a new trace
// when it is missing, not a string, huge or malformed (never an error),
// with its JSON-RPC id and its outcome; the execution's span is its
// child; a secret in the script's error does not reach the span.
func TestTracingCallSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(t.Context())
	tr := telemetry.New(tp, redact.New(redact.NewSecret("hunter2-secret")), "test")
	s, w, out := testStdio(t, Config{Runtime: testruntime.New(t, luau.Config{PoolSize: 1, Tracer: tr}), Tracer: tr})
	const parent = `"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"`
	for _, c := range []struct {
		name, meta, args   string
		parented           bool
		outcome, errorType string
	}{
		{"the client's span", `{"traceparent":` + parent + `}`, `{"script":"return 1"}`, true, "ok", ""},
		{"no _meta", ``, `{"script":"return 1"}`, false, "ok", ""},
		{"a number", `{"traceparent":42}`, `{"script":"return 1"}`, false, "ok", ""},
		{"an object", `{"traceparent":{"a":` + parent + `}}`, `{"script":"return 1"}`, false, "ok", ""},
		{"huge", `{"traceparent":"` + strings.Repeat("0", 1<<20) + `"}`, `{"script":"return 1"}`, false, "ok", ""},
		{"malformed", `{"traceparent":"00-xyz-01"}`, `{"script":"return 1"}`, false, "ok", ""},
		{"a failing script", `{"traceparent":` + parent + `}`, `{"script":"error('hunter2-secret')"}`, true, "error", "runtime"},
		{"invalid arguments", ``, `{"script":1}`, false, "invalid", "invalid"},
	} {
		t.Run(c.name, func(t *testing.T) {
			params := `"name":"execute_script","arguments":` + c.args
			if c.meta != "" {
				params += `,"_meta":` + c.meta
			}
			before := len(rec.Ended())
			s.run(handle(s, w, `{"jsonrpc":"2.0","id":"req-7","method":"tools/call","params":{`+params+`}}`))
			if lines := answers(t, out); len(lines) != 1 || lines[0]["result"] == nil {
				t.Fatalf("answers %v, want one result", lines)
			}
			var call, exec sdktrace.ReadOnlySpan
			for _, sp := range rec.Ended()[before:] {
				switch sp.Name() {
				case telemetry.SpanExecuteScript:
					call = sp
				case telemetry.SpanExecution:
					exec = sp
				}
			}
			if call == nil {
				t.Fatal("no call span")
			}
			if got := call.Parent().IsValid() && call.Parent().TraceID().String() == "0af7651916cd43dd8448eb211c80319c"; got != c.parented || call.SpanKind() != trace.SpanKindServer {
				t.Errorf("parent %v (kind %s), want the client's: %v", call.Parent(), call.SpanKind(), c.parented)
			}
			attrs := map[string]string{}
			for _, kv := range call.Attributes() {
				attrs[string(kv.Key)] = kv.Value.String()
			}
			if attrs["jsonrpc.request.id"] != "req-7" || attrs["toolscript.outcome"] != c.outcome || attrs["error.type"] != c.errorType {
				t.Errorf("attributes %v, want id req-7, outcome %s, error.type %q", attrs, c.outcome, c.errorType)
			}
			if c.outcome != "invalid" && (exec == nil || exec.Parent().SpanID() != call.SpanContext().SpanID()) {
				t.Errorf("execution span %v is not the call's child", exec)
			}
			if exec != nil && strings.Contains(exec.Status().Description, "hunter2") {
				t.Errorf("the execution's status %q holds the secret", exec.Status().Description)
			}
		})
	}
}
