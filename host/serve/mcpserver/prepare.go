package mcpserver

import (
	"context"
	"encoding/json"
	"path/filepath"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/host/runtime/result"
	"github.com/toolscript/toolscript/host/serve/accesslog"
	"github.com/toolscript/toolscript/host/serve/auth"
	"github.com/toolscript/toolscript/host/serve/metrics"
)

// prepare makes the script of the call: its source, its limits (timeout_ms
// within MaxTimeout), the user's io directory and the effects layer of
// dry_run or plan; then Config.Prepare completes it (an sdk session with
// the call's _meta.auth, say). Prepare's error is a tool error.
func (s *Server) prepare(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		x := executionFrom(ctx)
		limits := s.cfg.Limits
		if x.args.timeout > 0 {
			limits.Timeout = x.args.timeout
		}
		limits.Timeout = min(limits.Timeout, s.cfg.MaxTimeout)
		user, _ := auth.UserFrom(ctx)
		if x.resume != nil && x.resume.inPlace != nil {
			// The execution goes on as its first call prepared it.
			x.call = Call{User: user, Client: clientOf(ctx), Script: &x.resume.inPlace.x.script}
			x.script = x.resume.inPlace.x.script
			return next(ctx, req)
		}
		fx := x.args.effects()
		defer func() {
			// A resumed execution's recording that no execution took on
			// ends with the call (it ran here, or never ran).
			if w := x.recording; w != nil {
				w.Close()
				s.releaseRecording(w)
			}
		}()
		if x.resume != nil {
			var err error
			if fx, err = s.resumeByReplay(x, s.ioFor(user)); err != nil {
				x.res = &result.Result{Error: &result.Error{Kind: result.Replay, Message: err.Error()}}
				accesslog.FromContext(ctx).SetOutcome(metrics.OutcomeError, string(result.Replay))
				return toolResult(x.res), nil
			}
		}
		x.call = Call{User: user, MetaAuth: metaAuth(req), Client: clientOf(ctx), Claims: auth.ClaimsFrom(ctx), Script: &luau.Script{Source: []byte(x.args.script), Limits: limits,
			IO: s.ioFor(user), Effects: fx, User: user.Subject}}
		if s.cfg.Prepare != nil {
			if err := s.cfg.Prepare(ctx, &x.call); err != nil {
				accesslog.FromContext(ctx).SetOutcome(outcomeInvalid, "")
				return invalid("Invalid request: " + err.Error()), nil
			}
		}
		x.script = *x.call.Script
		return next(ctx, req)
	}
}

// ioFor returns the io settings of user's executions: the configured ones,
// in the user's own directory under PerUserIO.
func (s *Server) ioFor(user auth.User) *luau.IO {
	if s.cfg.IO == nil || !s.cfg.PerUserIO {
		return s.cfg.IO
	}
	io := *s.cfg.IO
	io.Dir = filepath.Join(io.Dir, user.DirName())
	return &io
}

// metaAuth returns the _meta.auth of a call (as mcp-go decoded it), nil if
// absent.
func metaAuth(req mcp.CallToolRequest) json.RawMessage {
	if req.Params.Meta == nil {
		return nil
	}
	v, ok := req.Params.Meta.AdditionalFields["auth"]
	if !ok {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}
