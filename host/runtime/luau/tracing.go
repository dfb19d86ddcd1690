package luau

import (
	"context"

	"go.opentelemetry.io/otel/trace"

	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/contract/telemetry"
	"github.com/toolscript/toolscript/host/runtime/result"
)

// An execution's spans (Config.Tracer): the execution's own, a child of
// the span of Execute's context (an MCP tools/call, or none under
// `toolscript run`), with its kind, its user (Script.User) and how it
// ended, never the script's text; under it one per wait for a person's
// approval (the time the script's clock stands still) and the sdk calls'
// (host/sdk) and io effects' spans.

// startExecution starts the execution's span.
func (r *Runtime) startExecution(ctx context.Context, script Script) (context.Context, telemetry.Span) {
	ctx, span := r.tracer.Start(ctx, telemetry.SpanExecution, trace.SpanKindInternal)
	if span.Recording() {
		span.String(telemetry.KeyExecutionKind, executionKind(script.Effects))
		if script.User != "" {
			span.String(telemetry.KeyUser, script.User)
		}
	}
	return ctx, span
}

// endExecution ends the execution's span with its outcome.
func endExecution(span telemetry.Span, res *result.Result) {
	if !span.Recording() {
		return
	}
	if res.Failed() {
		span.String(telemetry.KeyOutcome, "error")
		span.Fail(string(res.Error.Kind), res.Error.Message)
	} else {
		span.String(telemetry.KeyOutcome, "ok")
	}
	span.End()
}

// executionKind names the execution's kind as its span says it.
func executionKind(fx *effects.Run) string {
	switch {
	case fx.Mode() == effects.DryRun:
		return "dry_run"
	case fx.Mode() == effects.Plan:
		return "plan"
	case fx.Mode() == effects.Replay:
		return "replay"
	case fx.Recording():
		return "record"
	}
	return "run"
}

// tracedPause is pause (the deadline's, which stops the script's clock
// while a person is asked) with a span of the wait, under ctx's.
func (r *Runtime) tracedPause(ctx context.Context, pause func() (resume func())) func() (resume func()) {
	if r.tracer == nil {
		return pause
	}
	return func() func() {
		_, span := r.tracer.Start(ctx, telemetry.SpanApproval, trace.SpanKindInternal)
		resume := pause()
		return func() {
			resume()
			span.End()
		}
	}
}
