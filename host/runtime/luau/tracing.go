package luau

import (
	"context"
	"strings"

	"github.com/tetratelabs/wazero/api"

	"go.opentelemetry.io/otel/trace"

	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/contract/telemetry"
	"github.com/toolscript/toolscript/host/runtime/result"
)

// An execution's spans (Config.Tracer): the execution's own, a child of
// the span of Execute's context (an MCP tools/call, or none under
// `toolscript run`), with its kind, its user (Script.User) and how it
// ended, never the script's text; under it one per wait for a person's
// approval (the time the script's clock stands still: the effect, the
// rule and the answer), one per io effect
// (below), and the sdk calls' (host/sdk).
//
// An io effect's span is one io call that changes the io directory: an
// io.open for writing or appending (the writes through its handle are its
// batch: the effects layer decides the file's change when it is opened)
// or an os.remove. It names the action and the path and says how the call
// ended, and covers the effects layer's decision (a dry run's overlay, the
// rules, a person's approval). Reads and listings have none, and an
// execution makes at most maxIOSpans.

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

// endExecution ends the execution's span with its outcome, and an event
// for each effect the rules decided (its action, its function or path,
// the decision and the rule).
func endExecution(span telemetry.Span, res *result.Result) {
	if !span.Recording() {
		return
	}
	for _, e := range res.Effects {
		if e.Decision == "" {
			continue
		}
		subject := telemetry.KeyPath.String(e.Path)
		if e.Function != "" {
			subject = telemetry.KeyFunction.String(e.Function)
		}
		span.Event(telemetry.EventDecision, telemetry.KeyEffect.String(string(e.Op)), subject,
			telemetry.KeyDecision.String(e.Decision), telemetry.KeyRule.String(e.Rule))
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

// traceAsks gives fx a span of each wait for a person's answer, under
// ctx's: the effect asked about (its action, and its function or path),
// the rule that asked, and the answer.
func (r *Runtime) traceAsks(ctx context.Context, fx *effects.Run) {
	if r.tracer == nil {
		return
	}
	fx.OnAsk(func(q effects.Question) func(effects.Answer, error) {
		_, span := r.tracer.Start(ctx, telemetry.SpanApproval, trace.SpanKindInternal)
		if !span.Recording() {
			return nil
		}
		span.String(telemetry.KeyEffect, string(q.Effect.Op))
		if q.Effect.Function != "" {
			span.String(telemetry.KeyFunction, q.Effect.Function)
		} else if q.Effect.Path != "" {
			span.String(telemetry.KeyPath, q.Effect.Path)
		}
		span.String(telemetry.KeyRule, q.Rule)
		return func(answer effects.Answer, err error) {
			if err != nil {
				span.String(telemetry.KeyOutcome, "error")
				span.Fail("approval", err.Error())
			} else {
				span.String(telemetry.KeyOutcome, answer.String())
			}
			span.End()
		}
	})
}

// maxIOSpans bounds the io effects' spans of one execution: a script that
// writes in a loop makes no more (its sdk calls are bounded by max_calls,
// its approval waits by a person).
const maxIOSpans = 256

// startIO starts an io effect's span unless the execution has made
// maxIOSpans of them.
func (e *execution) startIO(ctx context.Context) (context.Context, telemetry.Span) {
	if e.ioSpans >= maxIOSpans {
		return ctx, telemetry.Span{}
	}
	e.ioSpans++
	return e.tracer.Start(ctx, telemetry.SpanIO, trace.SpanKindInternal)
}

// maxModeBytes bounds the io.open mode a span reads to learn whether the
// open writes (the longest mode is "a+b").
const maxModeBytes = 8

// tracedOpen is io_open with an io effect's span when the open writes.
func tracedOpen(open func(ctx context.Context, mod api.Module, pathPtr, pathLen, modePtr, modeLen uint32) int32) func(context.Context, api.Module, uint32, uint32, uint32, uint32) int32 {
	return func(ctx context.Context, mod api.Module, pathPtr, pathLen, modePtr, modeLen uint32) int32 {
		exec := instanceFrom(ctx).exec
		if exec.tracer == nil || modeLen > maxModeBytes {
			return open(ctx, mod, pathPtr, pathLen, modePtr, modeLen)
		}
		mode := guestString(mod, modePtr, modeLen)
		action := "write"
		switch {
		case strings.HasPrefix(mode, "a"):
			action = "append"
		case !strings.HasPrefix(mode, "w") && !strings.Contains(mode, "+"):
			return open(ctx, mod, pathPtr, pathLen, modePtr, modeLen)
		}
		ctx, span := exec.startIO(ctx)
		ioSpanStart(span, mod, action, pathPtr, pathLen)
		n := open(ctx, mod, pathPtr, pathLen, modePtr, modeLen)
		ioSpanEnd(span, exec, n < 0)
		return n
	}
}

// tracedRemove is io_remove with an io effect's span.
func tracedRemove(remove func(ctx context.Context, mod api.Module, ptr, n uint32) int32) func(context.Context, api.Module, uint32, uint32) int32 {
	return func(ctx context.Context, mod api.Module, ptr, n uint32) int32 {
		if instanceFrom(ctx).exec.tracer == nil {
			return remove(ctx, mod, ptr, n)
		}
		return traceIO(ctx, mod, "remove", ptr, n, func(ctx context.Context) int32 { return remove(ctx, mod, ptr, n) })
	}
}

// tracedEdit is io_edit with an io effect's span.
func tracedEdit(edit func(ctx context.Context, mod api.Module, pathPtr, pathLen, oldPtr, oldLen, newPtr, newLen, all uint32) int32) func(context.Context, api.Module, uint32, uint32, uint32, uint32, uint32, uint32, uint32) int32 {
	return func(ctx context.Context, mod api.Module, pathPtr, pathLen, oldPtr, oldLen, newPtr, newLen, all uint32) int32 {
		if instanceFrom(ctx).exec.tracer == nil {
			return edit(ctx, mod, pathPtr, pathLen, oldPtr, oldLen, newPtr, newLen, all)
		}
		return traceIO(ctx, mod, "edit", pathPtr, pathLen, func(ctx context.Context) int32 {
			return edit(ctx, mod, pathPtr, pathLen, oldPtr, oldLen, newPtr, newLen, all)
		})
	}
}

// tracedRename is io_rename (os.rename) with an io effect's span, which
// names the path renamed.
func tracedRename(rename func(ctx context.Context, mod api.Module, fromPtr, fromLen, toPtr, toLen uint32) int32) func(context.Context, api.Module, uint32, uint32, uint32, uint32) int32 {
	return func(ctx context.Context, mod api.Module, fromPtr, fromLen, toPtr, toLen uint32) int32 {
		if instanceFrom(ctx).exec.tracer == nil {
			return rename(ctx, mod, fromPtr, fromLen, toPtr, toLen)
		}
		return traceIO(ctx, mod, "rename", fromPtr, fromLen, func(ctx context.Context) int32 {
			return rename(ctx, mod, fromPtr, fromLen, toPtr, toLen)
		})
	}
}

// traceIO makes call, an io host call that changes the io directory,
// under an io effect's span naming action and the path at pathPtr.
func traceIO(ctx context.Context, mod api.Module, action string, pathPtr, pathLen uint32, call func(context.Context) int32) int32 {
	exec := instanceFrom(ctx).exec
	ctx, span := exec.startIO(ctx)
	ioSpanStart(span, mod, action, pathPtr, pathLen)
	status := call(ctx)
	ioSpanEnd(span, exec, status < 0)
	return status
}

// ioSpanStart names an io effect's action and path (a path longer than a
// path can be is left out).
func ioSpanStart(span telemetry.Span, mod api.Module, action string, pathPtr, pathLen uint32) {
	if !span.Recording() {
		return
	}
	span.String(telemetry.KeyEffect, action)
	if path, err := guestPath("io", mod, pathPtr, pathLen); err == nil {
		span.String(telemetry.KeyPath, path)
	}
}

// ioSpanEnd ends an io effect's span: failed, with the message the call
// left pending.
func ioSpanEnd(span telemetry.Span, exec *execution, failed bool) {
	if !span.Recording() {
		return
	}
	if failed {
		span.String(telemetry.KeyOutcome, "error")
		span.Fail("io", string(exec.pending))
	} else {
		span.String(telemetry.KeyOutcome, "ok")
	}
	span.End()
}
