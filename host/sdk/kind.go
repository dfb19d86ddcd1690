package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/contract/sdkcall"
)

// A functionKind is how the functions of one catalog kind are called.
// Session.call takes every call through the same steps: the kind checks
// it (its arguments decoded, checked and any problem worded by sdkargs:
// an argument error, made before anything counts), the call counts
// against max_calls and takes a slot of max_parallel, then the kind makes
// it.
type functionKind interface {
	// check checks a call of f with the script's arguments before it
	// counts. An OpenAPI operation's request is built here, and returned.
	check(s *Session, f *function, args json.RawMessage) (*http.Request, error)
	// make makes the call that check let through (req is what it
	// returned) and returns its response, redacted.
	make(ctx context.Context, s *Session, f *function, req *http.Request, args json.RawMessage, dataOnly bool) *sdkcall.Response
	// effect describes an unsafe call of f for the effects layer, without
	// credentials or frozen values (dryrun.go); when facts is not nil it
	// fills it too, with what the rules see of the call (policy.go).
	effect(s *Session, f *function, args json.RawMessage, facts *effects.Facts) effects.Effect
	// substitute is the response of a call the effects layer held.
	substitute(f *function) *sdkcall.Response
}

// kind is f's functionKind.
func (f *function) kind() functionKind {
	if f.fn.Kind == catalog.MCP {
		return tool{}
	}
	return operation{}
}

// operation is an OpenAPI operation's kind: its arguments are checked and
// its request built before the call counts (Session.request), then the
// request is sent (Session.send).
type operation struct{}

func (operation) check(s *Session, f *function, args json.RawMessage) (*http.Request, error) {
	return s.request(f, args)
}

func (operation) make(ctx context.Context, s *Session, f *function, req *http.Request, _ json.RawMessage, dataOnly bool) *sdkcall.Response {
	return s.send(ctx, f, req, dataOnly)
}

// tool is an MCP tool's kind: the ToolCaller checks the arguments against
// the tool's current inputSchema when the call is made (the tool may have
// changed since the script started), and its result is held against the
// host memory budgets.
type tool struct{}

var errNoTools = errors.New("MCP tools are not available here")

func (tool) check(s *Session, _ *function, _ json.RawMessage) (*http.Request, error) {
	if s.c.cfg.Tools == nil {
		return nil, errNoTools
	}
	return nil, nil
}

func (tool) make(ctx context.Context, s *Session, f *function, _ *http.Request, args json.RawMessage, _ bool) *sdkcall.Response {
	out := s.c.cfg.Tools.CallTool(ctx, f.api.api, f.fn, f.name, args)
	s.redact.Tool(out, f.name)
	return s.hold(ctx, f, out)
}
