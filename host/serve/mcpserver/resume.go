package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/contract/effects/trace"
	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/host/runtime/sandboxio"
	"github.com/toolscript/toolscript/host/serve/accesslog"
	"github.com/toolscript/toolscript/host/serve/requeststate"
)

// A retry of a paused call (MCP 2026-07-28) carries the person's answer
// (inputResponses) and the requestState of its input_required result.
// resuming opens the state, bound to the call's user, client, script and
// arguments, refusing it with a clear error when anything differs, it is
// expired, forged, or was resumed already; then the execution goes on:
// in place when this process still holds it, else by replaying the
// prefix the state carries (prepare makes the Run: effects.NewResume).

// resumption is what a retry resumes.
type resumption struct {
	state  *requeststate.State
	answer effects.Answer
	// input is the client's answer to an upstream server's request the
	// execution waits on (inPlace.waiting), as the client sent it.
	input json.RawMessage
	// inPlace is the execution this process still holds, nil when it is
	// resumed by replay.
	inPlace *running
}

// resuming is the layer that opens a retry's requestState.
func (s *Server) resuming(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		token := req.Params.RequestState
		if token == "" {
			return next(ctx, req)
		}
		x := executionFrom(ctx)
		record := accesslog.FromContext(ctx)
		st, err := s.states.Verify(token, bindingOf(ctx, x, req), time.Now())
		if err != nil {
			return invalidState(record, err), nil
		}
		x.resume = &resumption{state: st}
		if st.InPlaceOnly != "" && !s.pausedRuns.holds(st.Execution, ownerOf(ctx)) {
			// resumeByReplay refuses it, nothing run; unspent, the state
			// still resumes where the execution waits.
			return next(ctx, req)
		}
		if err := s.states.Spend(st, time.Now()); err != nil {
			return invalidState(record, err), nil
		}
		x.resume.inPlace = s.pausedRuns.take(st.Execution, ownerOf(ctx))
		if x.resume.inPlace != nil {
			// Spent, and going on where it waits: no retry reads its
			// spilled prefix again.
			s.removeSpill(st)
		}
		if in := x.resume.inPlace; in != nil && in.waiting != nil {
			// An upstream server's request, answered.
			response, ok := req.Params.InputResponses[in.waiting.id]
			if !ok {
				in.cancel()
				record.SetOutcome(outcomeInvalid, "")
				return invalid(fmt.Sprintf("Invalid inputResponses: no answer to %q, the upstream server's %s; the execution stopped", in.waiting.id, in.waiting.request.Method)), nil
			}
			x.resume.input, _ = response.MarshalJSON()
			return next(ctx, req)
		}
		answer, err := answerOf(server.ElicitationResponse(req.Params.InputResponses, approvalID))
		if err != nil {
			s.removeSpill(st)
			if in := x.resume.inPlace; in != nil {
				in.cancel()
			}
			record.SetOutcome(outcomeInvalid, "")
			return invalid("Invalid inputResponses: the answer to " + approvalID + ": " + err.Error()), nil
		}
		x.resume.answer = answer
		return next(ctx, req)
	}
}

// removeSpill removes a spent state's spilled prefix from [effects]
// state_dir, logging a failure: the directory's bounds and expiry prune
// what is left.
func (s *Server) removeSpill(st *requeststate.State) {
	if err := st.RemoveSpill(); err != nil {
		s.log.Printf("%v", err)
	}
}

// invalidState is the answer to a retry whose requestState is refused
// for err: nothing ran.
func invalidState(record *accesslog.Record, err error) *mcp.CallToolResult {
	record.SetOutcome(outcomeInvalid, "")
	return invalid("Invalid requestState: " + err.Error() + ": nothing ran; call execute_script again without it")
}

// bindingOf is what a state of the call whose context is ctx must be
// bound to.
func bindingOf(ctx context.Context, x *execution, req mcp.CallToolRequest) requeststate.Binding {
	script := sha256.Sum256([]byte(x.args.script))
	return requeststate.Binding{
		User:            ownerOf(ctx),
		Client:          clientOf(ctx).Name,
		ScriptSHA256:    hex.EncodeToString(script[:]),
		ArgumentsSHA256: argumentsDigest(req),
	}
}

// argumentsDigest is the sha256 of a call's arguments in one form (the
// keys of objects sorted), so that a client that sends them again in
// another order or spacing binds the same.
func argumentsDigest(req mcp.CallToolRequest) string {
	var v any = req.Params.Arguments
	if len(req.Params.RawArguments) > 0 {
		v = nil
		_ = json.Unmarshal(req.Params.RawArguments, &v)
	}
	b, _ := json.Marshal(v)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// resumeByReplay returns the effects of x resumed from its state's
// prefix in the io directory io: nothing has run when it fails (the
// state resumes only in place, the files the prefix touched changed, the
// prefix cannot be read).
func (s *Server) resumeByReplay(x *execution, io *luau.IO) (*effects.Run, error) {
	st := x.resume.state
	if st.InPlaceOnly != "" {
		return nil, fmt.Errorf("the paused execution cannot resume here: it resumes only in the process that paused it (%s), which no longer holds it; nothing ran", st.InPlaceOnly)
	}
	// The state is spent: whether the replay goes on or not, no retry
	// reads its spilled prefix again (PrefixReader holds it in memory).
	defer s.removeSpill(st)
	if io != nil && len(st.Files) > 0 {
		if err := sandboxio.Unchanged(io.Dir, st.Files); err != nil {
			return nil, fmt.Errorf("the paused execution cannot resume: %w; nothing ran", err)
		}
	}
	pr, err := st.PrefixReader()
	if err != nil {
		return nil, fmt.Errorf("the paused execution cannot resume: %w; nothing ran", err)
	}
	defer pr.Close()
	rd, _, err := trace.NewReader(pr, 0)
	if err != nil {
		return nil, fmt.Errorf("the paused execution's prefix cannot be read: %w; nothing ran", err)
	}
	sum := sha256.Sum256([]byte(x.args.script))
	recording := s.recordToMemory(st.Binding.User, trace.Header{Toolscript: s.cfg.Version, ScriptSHA256: hex.EncodeToString(sum[:])})
	fx, err := effects.NewResume(rd, st.Question, x.resume.answer, recording)
	if err != nil {
		recording.Close()
		s.releaseRecording(recording)
		return nil, fmt.Errorf("the paused execution cannot resume: %w; nothing ran", err)
	}
	x.recording = recording
	return fx, nil
}

// held is the execution a retry goes on with in place, nil for a first
// call or a retry that resumes by replay.
func (r *resumption) held() *running {
	if r == nil {
		return nil
	}
	return r.inPlace
}
