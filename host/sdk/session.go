package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/contract/limit"
	"github.com/toolscript/toolscript/host/contract/redact"
	"github.com/toolscript/toolscript/host/contract/sdkcall"
	"github.com/toolscript/toolscript/host/contract/telemetry"
)

// Session makes the sdk calls of one execution: a sdkcall.Caller. Its
// budgets (max_calls, max_parallel) are the execution's; its credentials
// are the configured ones, then those of the request (_meta.auth).
type Session struct {
	c *Client
	// creds are by API name: configured first, then the request's.
	creds map[string]*Credential
	// requested are the APIs whose credential the request brought: it
	// fills only the API's own credential slot (requestPlan).
	requested map[string]bool
	redact    *redact.Redactor
	calls     atomic.Int64
	slots     chan struct{}
	maxCall   int64
	watch     callWatch // the calls' own timeouts
	// budget is max_host_bytes: the response bytes the host holds for this
	// execution at once (the Client's budget is for all of them).
	budget *limit.Bytes

	// fx is the execution's effects layer (nil: a real run).
	fx *effects.Run

	plansMu sync.Mutex
	plans   map[*function]authPlan // how each function's requests carry creds
}

var (
	_ sdkcall.DataCaller = (*Session)(nil)
	_ sdkcall.Holder     = (*Session)(nil)
)

// HostBytesHeld is how many bytes of the host memory budgets the
// execution's calls hold now: responses read that the script has not
// taken yet.
func (s *Session) HostBytesHeld() int64 { return s.budget.Held() }

// Session starts the calls of one execution. requestAuth holds the
// credentials a request brought (_meta.auth under serve, ParseMetaAuth);
// they apply to APIs the flags and the configuration give none for.
func (c *Client) Session(requestAuth map[string]*Credential) *Session {
	s := &Session{
		c:       c,
		creds:   map[string]*Credential{},
		slots:   make(chan struct{}, c.cfg.MaxParallel),
		maxCall: int64(c.cfg.MaxCalls),
	}
	s.budget, _ = limit.NewBytes(execBudgetName, c.cfg.MaxHostBytes) // positive: withDefaults
	var secrets []redact.Secret                                      // the request's: the configured ones are the Client's redactor's
	for name, st := range c.apis {
		cred := st.cfg.Auth
		if cred == nil && requestAuth[name] != nil {
			cred = requestAuth[name]
			if s.requested == nil {
				s.requested = map[string]bool{}
			}
			s.requested[name] = true
		}
		if cred != nil {
			s.creds[name] = cred
		}
	}
	for _, cred := range requestAuth { // never echo any of them, used or not
		secrets = append(secrets, redact.Secrets(cred.secrets()...)...)
	}
	s.redact = c.cfg.Redactor.With(secrets...)
	return s
}

// Calls is how many upstream calls the session has made (or tried).
func (s *Session) Calls() int { return int(s.calls.Load()) }

// Call performs one call of function id with the script's arguments (the
// JSON array [params, body] by json.encode rules).
func (s *Session) Call(ctx context.Context, id uint32, args json.RawMessage) *sdkcall.Response {
	return s.call(ctx, id, args, false)
}

// CallData is Call for a script that takes only the data: a successful
// response comes without its headers, which are then neither converted
// nor redacted (sdkcall.DataCaller).
func (s *Session) CallData(ctx context.Context, id uint32, args json.RawMessage) *sdkcall.Response {
	return s.call(ctx, id, args, true)
}

func (s *Session) call(ctx context.Context, id uint32, args json.RawMessage, dataOnly bool) *sdkcall.Response {
	out, send := s.Begin(id, args, dataOnly)
	if out != nil {
		return out
	}
	return send(ctx)
}

// Begin checks a call of function id, counts it against max_calls and
// passes it through the session's effects layer, when the script makes
// it (sdkcall.Beginner); what is left is sending it, which waits for one
// of the session's slots.
func (s *Session) Begin(id uint32, args json.RawMessage, dataOnly bool) (*sdkcall.Response, sdkcall.Send) {
	if int(id) >= len(s.c.funcs) || s.c.funcs[id] == nil {
		return &sdkcall.Response{Fail: sdkcall.Argument, Message: fmt.Sprintf(
			"sdk: function %d is no longer available (an MCP server's tools changed since this script started)", id)}, nil
	}
	f := s.c.funcs[id]
	k := f.kind()
	req, err := k.check(s, f, args)
	if err != nil {
		return &sdkcall.Response{Fail: sdkcall.Argument, Message: s.redact.String(f.name + ": " + err.Error())}, nil
	}
	if n := s.calls.Add(1); n > s.maxCall {
		return &sdkcall.Response{Fail: sdkcall.Limit, Message: fmt.Sprintf(
			"%s: more than %d sdk calls in one execution (max_calls: [sdk] max_calls or --max-calls)", f.name, s.maxCall)}, nil
	}
	if s.fx.Traced() {
		return s.traced(f, k, args, s.sender(f, k, req, args, dataOnly))
	}
	if out := s.held(f, k, args); out != nil {
		return out, nil
	}
	return nil, s.sender(f, k, req, args, dataOnly)
}

// sender is the function that sends a call Begin decided on: it waits for
// one of the session's slots.
func (s *Session) sender(f *function, k functionKind, req *http.Request, args json.RawMessage, dataOnly bool) sdkcall.Send {
	return func(ctx context.Context) *sdkcall.Response {
		select {
		case s.slots <- struct{}{}: // the common case, without waiting
		default:
			select {
			case s.slots <- struct{}{}:
			case <-ctx.Done():
				return s.cancelled(f, ctx)
			}
		}
		defer func() { <-s.slots }()
		ctx, span := s.startCall(ctx, f, req)
		out := k.make(ctx, s, f, req, args, dataOnly)
		endCall(span, out)
		return out
	}
}

// hold counts a tool's result against the host memory budgets until the
// script has it (the result is in memory already: the bytes are counted,
// or the result dropped, before more results can pile up).
func (s *Session) hold(ctx context.Context, f *function, out *sdkcall.Response) *sdkcall.Response {
	n := int64(len(out.Message) + len(out.JSON) + len(out.Text) + len(out.Content))
	h, err := limit.Reserve(ctx, n, s.budget, s.c.budget)
	if err != nil {
		return s.overBudget(f, "result", false, err)
	}
	out.Release = h.Release
	return out
}

// overBudget is the failure of a call whose response (or result) the host
// memory budgets could not hold; atLeast when its size is not known, only
// that it needs at least the bytes it asked for.
func (s *Session) overBudget(f *function, what string, atLeast bool, err error) *sdkcall.Response {
	var be *limit.BytesError
	if !errors.As(err, &be) {
		return &sdkcall.Response{Fail: sdkcall.Limit, Message: fmt.Sprintf("%s: %v", f.name, err)}
	}
	whose := "one execution's"
	if be.Name == totalBudgetName {
		whose = "all executions'"
	}
	needs := "needs"
	if atLeast {
		needs = "needs at least"
	}
	if be.Waited == nil {
		return &sdkcall.Response{Fail: sdkcall.Limit, Message: fmt.Sprintf(
			"%s: the %s %s %d bytes of host memory, more than %s (%d bytes, what %s sdk calls may hold at once; [limits] %s)",
			f.name, what, needs, be.Need, be.Name, be.Size, whose, be.Name)}
	}
	return &sdkcall.Response{Fail: sdkcall.Limit, Message: fmt.Sprintf(
		"%s: the %s waited for %d bytes of host memory until the call ended: %s (%d bytes, what %s sdk calls may hold at once; [limits] %s) stayed in use",
		f.name, what, be.Need, be.Name, be.Size, whose, be.Name)}
}

// plan is how cred goes on f's requests (plan), decided at f's first call
// in the session.
func (s *Session) plan(f *function, cred *Credential) (authPlan, error) {
	s.plansMu.Lock()
	defer s.plansMu.Unlock()
	if p, ok := s.plans[f]; ok {
		return p, nil
	}
	var p authPlan
	var err error
	if api := f.api.api.Name; s.requested[api] {
		if p, err = requestPlan(cred, f); err != nil {
			return authPlan{}, fmt.Errorf("_meta.auth.%s: %w", api, err)
		}
	} else if p, err = plan(cred, f.schemes); err != nil {
		return authPlan{}, fmt.Errorf("auth: %w", err)
	}
	if s.plans == nil {
		s.plans = map[*function]authPlan{}
	}
	s.plans[f] = p
	return p, nil
}

// send makes the request within the call's timeout and converts the
// response.
func (s *Session) send(ctx context.Context, f *function, req *http.Request, dataOnly bool) *sdkcall.Response {
	timeout := f.api.cfg.Timeout
	callCtx := ctx
	// The call's own timeout, unless the execution ends sooner anyway.
	now := time.Now()
	if deadline, ok := ctx.Deadline(); !ok || deadline.Sub(now) > timeout {
		var call *watchedCall
		callCtx, call = s.watch.start(ctx, now.Add(timeout))
		defer s.watch.end(call)
	}
	req = req.WithContext(callCtx)
	if f.api.cfg.PropagateTrace {
		// After the effects layer saw the request: a trace context,
		// new on every run, is no part of the effect a plan or a
		// replay compares.
		telemetry.ToHeader(ctx, req.Header)
	}
	resp, err := s.c.http.Do(req)
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return s.cancelled(f, ctx)
		case callCtx.Err() != nil:
			return &sdkcall.Response{Fail: sdkcall.Upstream, Message: fmt.Sprintf("%s: no response within %s (timeout of [apis.%s])", f.name, timeout, f.api.api.Name)}
		}
		if headersTooLarge(err) {
			return &sdkcall.Response{Fail: sdkcall.Limit, Message: fmt.Sprintf(
				"%s: the response's headers are larger than %d bytes (headers count toward max_response_bytes, and at most %d bytes of them are read; [sdk] max_response_bytes)",
				f.name, min(s.c.cfg.MaxResponseBytes, MaxHeaderBytes), MaxHeaderBytes)}
		}
		return &sdkcall.Response{Fail: sdkcall.Upstream, Message: s.redact.String(f.name + ": request failed: " + transportError(err))}
	}
	defer resp.Body.Close()
	out := s.response(callCtx, f, resp, dataOnly)
	if out.Fail == sdkcall.Upstream && out.Status == 0 {
		switch {
		case ctx.Err() != nil:
			return s.cancelled(f, ctx)
		case callCtx.Err() != nil:
			return &sdkcall.Response{Fail: sdkcall.Upstream, Message: fmt.Sprintf("%s: no complete response within %s (timeout of [apis.%s])", f.name, timeout, f.api.api.Name)}
		}
	}
	return out
}

// cancelled is the outcome of a call whose execution ended first.
func (s *Session) cancelled(f *function, ctx context.Context) *sdkcall.Response {
	why := "cancelled"
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		why = "the execution's time ran out"
	}
	return &sdkcall.Response{Fail: sdkcall.Upstream, Message: f.name + ": " + why}
}

// transportError describes a transport failure without the URL (which
// could carry a credential in its query).
func transportError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}
