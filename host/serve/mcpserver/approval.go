package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/contract/redact"
	"github.com/toolscript/toolscript/host/platform/termtext"
)

// Asking a person through the client. A rule whose action is ask pauses
// an effect and asks (effects.Asker); how depends on what the client of
// the call can do:
//
//   - a client on 2025-11-25 or earlier that declared elicitation at
//     initialize is sent elicitation/create on the call's connection,
//     during the call, and the execution waits in place (askInCall);
//   - a client on 2026-07-28 whose request declares elicitation gets an
//     input_required result with the question and a sealed requestState;
//     its retry with the answer resumes the execution (pause.go);
//   - any other client can ask no one: the execution stops with kind
//     approval, naming the effect and the rule (a dry run and a plan stay
//     the way through).
//
// The question passes the server's redactor before it leaves.

// approvalID is the key of the one input request an approval asks.
const approvalID = "approval"

// approvalSchema is what the elicitation asks for: nothing but the
// answer's action (accept: approve; decline; cancel: stop the script),
// and whether to approve every later effect the same rule asks about.
var approvalSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"all": map[string]any{
			"type":        "boolean",
			"title":       "Approve all like this",
			"description": "Approve every later effect of this execution that the same rule asks about.",
			"default":     false,
		},
	},
}

// questionParams is the elicitation of q, its text redacted. The effect
// is shown on one line, escaped by termtext's rule (a person may read it
// on a terminal): no path, header or body a script chose can start a
// paragraph of its own, act on a terminal or reorder what is read.
func questionParams(q effects.Question, r *redact.Redactor) mcp.ElicitationParams {
	effect := termtext.Line(r.String(effects.Describe(q.Effect)))
	text := fmt.Sprintf("A script wants to make this change; the rule %q asks a person first.\n\n%s\n\nAccept to let it happen, decline to refuse it (the script gets an error and goes on), cancel to stop the script.",
		q.Rule, effect)
	return mcp.ElicitationParams{Message: r.String(text), RequestedSchema: approvalSchema}
}

// answerOf maps an elicitation result to an effects.Answer.
func answerOf(res *mcp.ElicitationResult) (effects.Answer, error) {
	if res == nil {
		return effects.Cancel, errors.New("the client gave no answer")
	}
	switch res.Action {
	case mcp.ElicitationResponseActionAccept:
		if m, ok := res.Content.(map[string]any); ok && m["all"] == true {
			return effects.ApproveAll, nil
		}
		return effects.Approve, nil
	case mcp.ElicitationResponseActionDecline:
		return effects.Decline, nil
	case mcp.ElicitationResponseActionCancel:
		return effects.Cancel, nil
	}
	return effects.Cancel, fmt.Errorf("the client answered the approval with action %q, not accept, decline or cancel", echo(string(res.Action)))
}

// howToAsk is how a call's client can be asked.
type howToAsk int

const (
	askNobody howToAsk = iota
	askInCall
	askByRetry
)

// howToAskOf says how the client of the call whose context is ctx can be
// asked.
func howToAskOf(ctx context.Context) howToAsk {
	if server.IsModernRequest(ctx) {
		info := server.RequestProtocolInfoFromContext(ctx)
		if info != nil && info.ClientCapabilities != nil && info.ClientCapabilities.Elicitation != nil {
			return askByRetry
		}
		return askNobody
	}
	if c := callFrom(ctx); c != nil && c.peer.capabilities().Elicitation != nil {
		return askInCall
	}
	return askNobody
}

// NoOneToAskError is an Ask of a client that can ask no person.
type NoOneToAskError struct{ Reason string }

func (e *NoOneToAskError) Error() string {
	return "no person can be asked through this client (" + e.Reason + "): run the script with dry_run, and apply its effects as a plan"
}

// inCallAsker asks the client of a call by elicitation/create, during the
// call.
type inCallAsker struct {
	s   *Server
	ctx context.Context
	c   *call
}

func (a *inCallAsker) Ask(q effects.Question) (effects.Answer, error) {
	// The wait holds what the execution holds of the host memory budgets
	// every user's calls share, as a paused execution's does.
	release, err := a.s.pausedRuns.holdHost(ownerOf(a.ctx), hostBytesOf(executionFrom(a.ctx).script.SDK))
	if err != nil {
		return effects.Cancel, fmt.Errorf("no person is asked: %w", err)
	}
	defer release()
	ctx, cancel := context.WithTimeout(a.ctx, a.s.cfg.approvalTimeout())
	defer cancel()
	raw, err := a.s.request(ctx, a.c, string(mcp.MethodElicitationCreate), questionParams(q, a.s.cfg.Redactor))
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && a.ctx.Err() == nil {
			return effects.Cancel, fmt.Errorf("no answer within %s", a.s.cfg.approvalTimeout())
		}
		return effects.Cancel, fmt.Errorf("asking the client: %w", err)
	}
	var res mcp.ElicitationResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return effects.Cancel, fmt.Errorf("the client's answer to the approval cannot be read: %w", err)
	}
	return answerOf(&res)
}

// nobody is the Asker of a client that can ask no one.
type nobody struct{ reason string }

func (n nobody) Ask(effects.Question) (effects.Answer, error) {
	return effects.Cancel, &NoOneToAskError{Reason: n.reason}
}

// askerFor returns the Asker of the call whose context is ctx, and how it
// asks. A paused execution's (askByRetry) is made by the pause.
func (s *Server) askerFor(ctx context.Context) (effects.Asker, howToAsk) {
	switch how := howToAskOf(ctx); how {
	case askInCall:
		return &inCallAsker{s: s, ctx: ctx, c: callFrom(ctx)}, how
	case askByRetry:
		return nil, how
	}
	if server.IsModernRequest(ctx) {
		return nobody{"its request does not declare the elicitation capability"}, askNobody
	}
	if callFrom(ctx) == nil || callFrom(ctx).peer == nil {
		return nobody{"the request has no session that declared the elicitation capability"}, askNobody
	}
	return nobody{"it did not declare the elicitation capability at initialize"}, askNobody
}

// declaresInput reports whether the request of a client on 2026-07-28
// declares that it can answer an upstream server's sampling, elicitation
// or roots request.
func declaresInput(ctx context.Context) bool {
	info := server.RequestProtocolInfoFromContext(ctx)
	if info == nil || info.ClientCapabilities == nil {
		return false
	}
	c := info.ClientCapabilities
	return c.Sampling != nil || c.Elicitation != nil || c.Roots != nil
}
