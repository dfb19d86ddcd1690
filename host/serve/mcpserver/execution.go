package mcpserver

import (
	"context"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/contract/effects/trace"
	"github.com/toolscript/toolscript/host/contract/sdkcall"
	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/host/runtime/result"
	"github.com/toolscript/toolscript/host/serve/requeststate"
)

// execute_script's handler is the script's run (runScript) inside layers,
// each a server.ToolHandlerMiddleware in a file of its own, outermost
// first:
//
//   - traced (tracing.go): the call's span, a child of the client's;
//   - checkArguments (arguments.go): the arguments as mcp-go decoded them,
//     checked; the script's size;
//   - untilStopped (stopping.go): the call ends with Stop, and a call
//     cancelled before it gets here does not start;
//   - withSlot (slot.go): a slot of the user's, waited for;
//   - resuming (resume.go): a retry's requestState, opened: the paused
//     execution it resumes;
//   - typeChecked (check.go): the script checked first when the call
//     asks for it (check: true);
//   - prepare (prepare.go): the user's io directory, the limits,
//     Config.Prepare;
//   - withProgress (notify.go): progress notifications, when asked for;
//   - observe (observe.go): the metrics and the access log's outcome.
//
// They wrap execute_script alone (the docs tools have none of these
// concerns), so they are composed here rather than given to mcp-go's
// WithToolHandlerMiddleware, which wraps every tool.
func (s *Server) executeScriptHandler() server.ToolHandlerFunc {
	layers := []server.ToolHandlerMiddleware{
		s.traced, s.checkArguments, s.untilStopped, s.withSlot, s.resuming, s.typeChecked, s.prepare, s.withProgress, s.observe,
	}
	h := s.runScript
	for _, layer := range slices.Backward(layers) {
		h = layer(h)
	}
	return h
}

// execution is one execute_script call on its way through the layers:
// each fills in what it owns.
type execution struct {
	args arguments
	// call is what Config.Prepare saw; script is what runs (call.Script,
	// with its progress reporting).
	call     Call
	script   luau.Script
	progress *progressReporter // nil when the client asked for none
	res      *result.Result    // once the script ran
	// paused is set when the call's answer is input_required: its
	// execution waits for a person (pause.go).
	paused bool
	// resume is what a retry resumes (resume.go), nil for a first call.
	resume *resumption
	// binding is what the state of a pause is bound to.
	binding requeststate.Binding
	// recording is the memory recording of an execution resumed by
	// replay (resumeByReplay), until an execution that may pause again
	// takes it (start); prepare gives it back when the call ends.
	recording *trace.Writer
	// warnings go in the result's warnings (an unchecked script's).
	warnings []string
}

type executionKey struct{}

// executionFrom returns the execution of a layer's context.
func executionFrom(ctx context.Context) *execution {
	return ctx.Value(executionKey{}).(*execution)
}

// The access log outcomes of calls that run no script: invalid arguments
// or _meta, and no slot free within the wait.
const (
	outcomeInvalid = "invalid"
	outcomeBusy    = "busy"
)

// runScript is the innermost handler: it runs the script.
func (s *Server) runScript(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	x := executionFrom(ctx)
	if r := x.resume.held(); r != nil {
		x.binding = bindingOf(ctx, x, req) // a later pause's
		if r.waiting != nil {
			r.waiting.answer <- x.resume.input
		} else {
			r.answers <- x.resume.answer
		}
		return s.await(ctx, x, r)
	}
	if server.IsModernRequest(ctx) && x.script.SDK != nil && declaresInput(ctx) && x.script.Effects.Mode() == effects.Real {
		// An upstream MCP server may ask the client for input: the
		// execution may pause for it (relayInput).
		x.binding = bindingOf(ctx, x, req)
		ask := false
		if fx := x.script.Effects; fx.HasRules() {
			asker, how := s.askerFor(ctx)
			if ask = how == askByRetry; !ask {
				fx.WithAsker(asker)
			}
		}
		return s.await(ctx, x, s.start(ctx, x, ask))
	}
	if fx := x.script.Effects; fx.HasRules() {
		asker, how := s.askerFor(ctx)
		if how == askByRetry && fx.Mode() == effects.Real {
			// A real run pauses (a plan run's asks go to nobody: its
			// plan is what a person approved).
			x.binding = bindingOf(ctx, x, req)
			return s.await(ctx, x, s.start(ctx, x, true))
		}
		if how == askByRetry {
			asker = nobody{"a plan run asks no one: its plan is what a person approved"}
		}
		fx.WithAsker(asker)
	}
	x.res = s.cfg.Runtime.Execute(sdkcall.WithClient(ctx, s.gateway(ctx, x.progress)), x.script)
	if s.cfg.IO == nil {
		explainDisabledIO(x.res, x.script.Source)
	}
	// The response counts against the host's budgets until it is written,
	// reserved while the call still holds its slot (holdResponse).
	return s.holdResponse(ctx, x.call.User, x.res), nil
}
