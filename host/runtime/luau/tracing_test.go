package luau_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/contract/policy"
	"github.com/toolscript/toolscript/host/contract/redact"
	"github.com/toolscript/toolscript/host/contract/sdkcall"
	"github.com/toolscript/toolscript/host/contract/telemetry"
	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/internal/testruntime"
)

// approver approves every question at once.
type approver struct{}

func (approver) Ask(effects.Question) (effects.Answer, error) { return effects.Approve, nil }

// tracedRuntime is a runtime whose scripts see manifest's sdk (nil: none)
// and whose spans end in the recorder it returns; both are closed when
// the test ends.
func tracedRuntime(t *testing.T, manifest *sdkcall.Manifest) (*luau.Runtime, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	return testruntime.New(t, luau.Config{SDK: manifest, Tracer: telemetry.New(tp, redact.New(), "test")}), rec
}

// TestTracingExecutionSpans: an execution's span (its kind, its user, how
// it ended, never the script's text), under it one span per io call that
// changes the io directory (a write, an edit, a rename, a remove; a read
// or a stat has none) and one
// per wait for a person's approval.
func TestTracingExecutionSpans(t *testing.T) {
	rt, rec := tracedRuntime(t, sdkManifest)
	src := `local f = io.open("a.txt", "w") f:write("x") f:close()
io.open("a.txt", "r"):close()
io.edit("a.txt", "x", "y")
os.rename("a.txt", "b.txt")
io.stat("b.txt")
os.remove("b.txt")
return sdk.list_pets({})`
	fx := effects.New(effects.DryRun).WithAsker(approver{})
	res := rt.Execute(context.Background(), luau.Script{Source: []byte(src), SDK: askingCaller{fx}, Effects: fx, User: "alice",
		IO: &luau.IO{Dir: t.TempDir()}})
	if res.Failed() {
		t.Fatalf("execution failed: %+v", res.Error)
	}
	var exec sdktrace.ReadOnlySpan
	var children []string
	for _, s := range rec.Ended() {
		if s.Name() == telemetry.SpanExecution {
			exec = s
		}
	}
	if exec == nil {
		t.Fatalf("no execution span among %d", len(rec.Ended()))
	}
	attrs := map[string]string{}
	for _, kv := range exec.Attributes() {
		attrs[string(kv.Key)] = kv.Value.String()
	}
	for k, want := range map[string]string{"toolscript.execution.kind": "dry_run", "enduser.id": "alice", "toolscript.outcome": "ok"} {
		if attrs[k] != want {
			t.Errorf("execution span %s = %q, want %q (%v)", k, attrs[k], want, attrs)
		}
	}
	for _, s := range rec.Ended() {
		if s.Parent().SpanID() != exec.SpanContext().SpanID() {
			continue
		}
		name := s.Name()
		for _, kv := range s.Attributes() {
			switch kv.Key {
			case telemetry.KeyEffect, telemetry.KeyFunction, telemetry.KeyRule, telemetry.KeyOutcome:
				name += " " + kv.Value.String()
			}
		}
		children = append(children, name)
	}
	want := []string{"toolscript.io write ok", "toolscript.io edit ok", "toolscript.io rename ok", "toolscript.io remove ok", "toolscript.approval call sdk.pets.list_pets r approve"}
	if len(children) != len(want) {
		t.Fatalf("children %v, want %v", children, want)
	}
	for i := range want {
		if children[i] != want[i] {
			t.Errorf("children %v, want %v", children, want)
		}
	}
}

// TestTracingIOSpansBounded: a script that writes in a loop makes at most
// 256 io spans.
func TestTracingIOSpansBounded(t *testing.T) {
	rt, rec := tracedRuntime(t, nil)
	res := rt.Execute(context.Background(), luau.Script{Source: []byte(`for i = 1, 1000 do io.open("a.txt", "w"):close() end`),
		IO: &luau.IO{Dir: t.TempDir()}})
	if res.Failed() {
		t.Fatalf("execution failed: %+v", res.Error)
	}
	n := 0
	for _, s := range rec.Ended() {
		if s.Name() == telemetry.SpanIO {
			n++
		}
	}
	if n != 256 {
		t.Errorf("%d io spans, want 256", n)
	}
}

// TestTracingDecisionEvents: every effect the [[policy]] rules decided is
// an event of the execution's span: its action, its path, the decision
// and the rule.
func TestTracingDecisionEvents(t *testing.T) {
	set, err := policy.Compile([]policy.Rule{
		{Name: "keep", When: `effect.kind == "remove" && effect.path == "keep.txt"`, Action: "deny"},
	}, effects.ActionAllow)
	if err != nil {
		t.Fatal(err)
	}
	rt, rec := tracedRuntime(t, nil)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := effects.New(effects.Real).WithRules(set.For(policy.Who{Sub: "ann"}), nil)
	res := rt.Execute(context.Background(), luau.Script{IO: &luau.IO{Dir: dir}, Effects: run,
		Source: []byte(`local f = io.open("out.txt", "w") f:write("x") f:close() pcall(os.remove, "keep.txt")`)})
	if res.Failed() {
		t.Fatalf("execution failed: %+v", res.Error)
	}
	var events []string
	for _, s := range rec.Ended() {
		if s.Name() != telemetry.SpanExecution {
			continue
		}
		for _, e := range s.Events() {
			event := e.Name
			for _, kv := range e.Attributes {
				event += " " + kv.Value.String()
			}
			events = append(events, event)
		}
	}
	want := []string{"toolscript.decision write out.txt allowed ", "toolscript.decision remove keep.txt denied keep"}
	if strings.Join(events, "\n") != strings.Join(want, "\n") {
		t.Errorf("the execution span's events:\n%s\nwant\n%s", strings.Join(events, "\n"), strings.Join(want, "\n"))
	}
}
