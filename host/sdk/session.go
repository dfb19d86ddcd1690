package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolscript/toolscript/host/catalog"
	"github.com/toolscript/toolscript/host/limit"
	"github.com/toolscript/toolscript/host/sdkcall"
)

// Session makes the sdk calls of one execution: a sdkcall.Caller. Its
// budgets (max_calls, max_parallel) are the execution's; its credentials
// are the configured ones, then those of the request (_meta.auth).
type Session struct {
	c *Client
	// creds are by API name: configured first, then the request's.
	creds   map[string]*Credential
	redact  *redactor
	calls   atomic.Int64
	slots   chan struct{}
	maxCall int64
	watch   callWatch // the calls' own timeouts
	// budget is max_host_bytes: the response bytes the host holds for this
	// execution at once (the Client's budget is for all of them).
	budget *limit.Bytes

	plansMu sync.Mutex
	plans   map[*function]authPlan // how each function's requests carry creds
}

var _ sdkcall.DataCaller = (*Session)(nil)

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
	var secrets []string
	for name, st := range c.apis {
		cred := st.cfg.Auth
		if cred == nil {
			cred = requestAuth[name]
		}
		if cred != nil {
			s.creds[name] = cred
			secrets = append(secrets, cred.secrets()...)
		}
	}
	for _, cred := range requestAuth { // never echo any of them, used or not
		secrets = append(secrets, cred.secrets()...)
	}
	for _, u := range c.cfg.Upstreams { // the MCP servers' tokens
		secrets = append(secrets, u.Secrets...)
	}
	s.redact = newRedactor(secrets)
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
	if int(id) >= len(s.c.funcs) || s.c.funcs[id] == nil {
		return &sdkcall.Response{Fail: sdkcall.Argument, Message: fmt.Sprintf(
			"sdk: function %d is no longer available (an MCP server's tools changed since this script started)", id)}
	}
	f := s.c.funcs[id]
	var req *http.Request
	switch f.fn.Kind {
	case catalog.OpenAPI:
		var err error
		if req, err = s.request(f, args); err != nil {
			return &sdkcall.Response{Fail: sdkcall.Argument, Message: s.redact.string(f.name + ": " + err.Error())}
		}
	case catalog.MCP:
		if s.c.cfg.Tools == nil {
			return &sdkcall.Response{Fail: sdkcall.Argument, Message: f.name + ": MCP tools are not available here"}
		}
	}
	if n := s.calls.Add(1); n > s.maxCall {
		return &sdkcall.Response{Fail: sdkcall.Limit, Message: fmt.Sprintf(
			"%s: more than %d sdk calls in one execution (max_calls: [sdk] max_calls or --max-calls)", f.name, s.maxCall)}
	}
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
	if req == nil {
		out := s.c.cfg.Tools.CallTool(ctx, f.api.api, f.fn, f.name, args)
		s.redact.tool(out, f.name)
		return s.hold(ctx, f, out)
	}
	return s.send(ctx, f, req, dataOnly)
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

// request checks the arguments and builds the request, before anything is
// sent.
func (s *Session) request(f *function, raw json.RawMessage) (*http.Request, error) {
	fn, api := f.fn, f.api
	args, err := decodeArgs(raw)
	if err != nil {
		return nil, err
	}
	hasParams, hasBody := len(fn.Params) > 0, fn.Body != nil
	var params, body any
	want := 0
	switch {
	case hasParams && hasBody:
		want = 2
	case hasParams || hasBody:
		want = 1
	}
	if len(args) > want {
		return nil, fmt.Errorf("takes %s; got %d arguments", signatureWords(hasParams, hasBody), len(args))
	}
	if hasParams && len(args) > 0 {
		params = args[0]
	}
	if hasBody && len(args) == want && want > 0 {
		body = args[want-1]
	}

	f.prepare()

	var values map[string]any
	if hasParams && params != nil {
		if list, ok := params.([]any); ok && len(list) == 0 {
			params = map[string]any{} // an empty table is [] in JSON
		}
		m, ok := params.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("params must be a table of parameter names to values, got %s", jsonType(params))
		}
		values = m
		known := 0
		for i, p := range fn.Params {
			v, ok := m[p.Name]
			if ok {
				known++
			}
			if !ok || p.Schema == nil {
				continue
			}
			switch x := v.(type) {
			case []any, map[string]any:
				m[p.Name] = normalize(api.api, p.Schema, v, 0)
			case json.Number:
				if f.asText[i] {
					m[p.Name] = x.String()
				}
			}
		}
		if known < len(m) { // a name that is no parameter
			for name := range m {
				if paramNamed(fn.Params, name) == nil {
					return nil, unknownParam(api.api, fn, name)
				}
			}
		}
		if len(m) > 0 && !acceptsAll(f.quick, m) {
			if err := f.params.check(m, ""); err != nil {
				return nil, err
			}
		}
	}
	for _, p := range fn.Params {
		if _, ok := values[p.Name]; !ok && p.Required {
			return nil, fmt.Errorf("missing required parameter '%s'", p.Name)
		}
	}
	if hasBody {
		if body == nil && fn.Body.Required {
			return nil, errors.New("missing the request body")
		}
		if body != nil {
			body = normalize(api.api, bodySchema(fn), body, 0)
			if err := f.body.check(body, "body"); err != nil {
				return nil, err
			}
		}
	}
	// Frozen parameters: the configuration's values.
	for _, p := range fn.Frozen {
		if values == nil {
			values = make(map[string]any, len(fn.Frozen))
		}
		values[p.Name] = api.frozen[p.Name]
	}

	if api.baseURL == "" {
		return nil, fmt.Errorf("API %s has no base URL: its spec names no usable server; set base_url in [apis.%s]", api.api.Name, api.api.Name)
	}
	path := fn.Path
	var query strings.Builder
	var header http.Header
	var cookies []string
	for _, list := range [2][]*catalog.Param{fn.Params, fn.Frozen} {
		for _, p := range list {
			v, ok := values[p.Name]
			if !ok {
				continue
			}
			var err error
			switch p.In {
			case "path":
				var text string
				if text, err = pathValue(p, v); err == nil {
					path = strings.Replace(path, f.placeholders[p.Name], text, 1)
				}
			case "query":
				err = queryValue(&query, p, v)
			case "header":
				var text string
				if http.CanonicalHeaderKey(p.Name) == "Accept-Encoding" {
					err = errAcceptEncoding
				} else if text, err = headerValue(p, v); err == nil {
					if header == nil {
						header = http.Header{}
					}
					header.Set(p.Name, text)
				}
			case "cookie":
				var text string
				if text, err = cookieValue(p, v); err == nil {
					cookies = append(cookies, text)
				}
			}
			if err != nil {
				return nil, fmt.Errorf("parameter '%s': %w", p.Name, err)
			}
		}
	}
	var data []byte
	contentType := ""
	if body != nil {
		if data, contentType, err = encodeBody(api.api, fn.Body, body); err != nil {
			return nil, fmt.Errorf("body: %w", err)
		}
	}
	req, err := api.newRequest(fn.Method, path, query.String(), data)
	if err != nil {
		return nil, fmt.Errorf("cannot build the request: %w", err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if len(cookies) > 0 {
		req.Header.Set("Cookie", strings.Join(cookies, "; "))
	}
	if _, ok := req.Header["Accept"]; !ok {
		req.Header["Accept"] = acceptJSON
	}
	req.Header["User-Agent"] = userAgent
	req.Header["Accept-Encoding"] = acceptEncoding
	if cred := s.creds[api.api.Name]; cred != nil && !fn.NoAuth {
		p, err := s.plan(f, cred)
		if err != nil {
			return nil, fmt.Errorf("auth: %w", err)
		}
		p.apply(req)
	}
	return req, nil
}

// plan is how cred goes on f's requests (plan), decided at f's first call
// in the session.
func (s *Session) plan(f *function, cred *Credential) (authPlan, error) {
	s.plansMu.Lock()
	defer s.plansMu.Unlock()
	if p, ok := s.plans[f]; ok {
		return p, nil
	}
	p, err := plan(cred, f.schemes)
	if err != nil {
		return authPlan{}, err
	}
	if s.plans == nil {
		s.plans = map[*function]authPlan{}
	}
	s.plans[f] = p
	return p, nil
}

// asText reports whether a number given for a parameter of schema s
// passes as its text: s wants a string and no number. Parameters travel as
// text anyway, and ids are often numbers in scripts.
func asText(api *catalog.API, s *catalog.Schema) bool {
	r := api.Resolve(s)
	return r != nil && len(r.Type) > 0 && r.Has("string") && !r.Has("number") && !r.Has("integer")
}

// errAcceptEncoding refuses a value for an Accept-Encoding parameter.
var errAcceptEncoding = errors.New("the host sets Accept-Encoding itself (it asks for " + acceptEncoding[0] + " and decodes the response)")

// Fixed header values, shared by every request.
var (
	acceptJSON = []string{"application/json, */*;q=0.8"}
	userAgent  = []string{"toolscript-sdk"}
)

func signatureWords(hasParams, hasBody bool) string {
	switch {
	case hasParams && hasBody:
		return "(params, body)"
	case hasParams:
		return "(params)"
	case hasBody:
		return "(body)"
	}
	return "no arguments"
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "nil"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case []any:
		return "a list"
	}
	return "a table"
}

func paramNamed(ps []*catalog.Param, name string) *catalog.Param {
	for _, p := range ps {
		if p.Name == name {
			return p
		}
	}
	return nil
}

func unknownParam(api *catalog.API, fn *catalog.Function, name string) error {
	names := make([]string, len(fn.Params))
	for i, p := range fn.Params {
		names[i] = p.Name
	}
	if body := api.Resolve(bodySchema(fn)); body != nil && propertySchema(api, body, name) != nil && body.AdditionalProperties == nil {
		return fmt.Errorf("unknown parameter '%s': it is a field of the body, the second argument (params, body)", name)
	}
	if best := catalog.Closest(name, names); best != "" {
		return fmt.Errorf("unknown parameter '%s' (did you mean '%s'?)", name, best)
	}
	return fmt.Errorf("unknown parameter '%s' (parameters: %s)", name, strings.Join(names, ", "))
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
		return &sdkcall.Response{Fail: sdkcall.Upstream, Message: s.redact.string(f.name + ": request failed: " + transportError(err))}
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
