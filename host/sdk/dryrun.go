package sdk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/contract/sdkcall"
)

// The sdk's side of the effects layer (host/contract/effects): every call is
// classified when its function is made (safe: GET, HEAD, OPTIONS and
// read-only MCP tools), and an unsafe one (a safe one too, when a rule
// names effect.safe) asks the session's effects layer before it is sent:
// its rules first (a denied call is never sent), then its mode. In a dry
// run it is held: the effect (method, URL, the headers the script's
// parameters set and the exact body, without credentials or frozen
// values) is logged and the script gets a made-up response.

// WithEffects makes s's unsafe calls pass through run. Call it before
// the first call.
func (s *Session) WithEffects(run *effects.Run) *Session {
	s.fx = run
	return s
}

// classify is whether f's calls are safe (effects.OfFunction).
func classify(f *catalog.Function) effects.Safety {
	return effects.OfFunction(f)
}

// override applies the configured classification of api's functions
// (the API's own, or its MCP server's from ToolSafety) and checks its
// names: one the API does not have is an error naming the closest ones,
// except for an MCP server whose tools are not all known yet.
func (c *Config) override(api *catalog.API, safety Safety) error {
	what, key := "api "+api.Name, "[apis."+api.Name+"]"
	kind, names, when := "an operation", "operations by operationId or sdk function name", "the spec is loaded"
	if api.Kind == catalog.MCP {
		safety = c.ToolSafety[api.Name]
		what, key = "mcp server "+api.Name, "[mcp_servers."+api.Name+"]"
		kind, names, when = "a tool", "tools by name", "the server lists its tools"
	}
	unknown, err := api.Override(safety.Safe, safety.Unsafe)
	if err != nil {
		return fmt.Errorf("%s: %s safe and unsafe: %w", what, key, err)
	}
	if len(unknown) == 0 || (api.Kind == catalog.MCP && (c.StartUpstreamsInBackground || api.State != "")) {
		return nil
	}
	known := api.NamesOf()
	var problems []string
	for _, n := range unknown {
		list := "unsafe"
		if slices.Contains(safety.Safe, n) {
			list = "safe"
		}
		msg := fmt.Sprintf("%s %s: %q is not %s of %s", key, list, n, kind, api.Name)
		if close := catalog.CloseMatches(n, known, 5); len(close) > 0 {
			msg += fmt.Sprintf(" (close: %s)", quoteAll(close))
		}
		problems = append(problems, msg)
	}
	return fmt.Errorf("%s: %s; safe and unsafe name %s, checked when %s", what, strings.Join(problems, "; "), names, when)
}

// quoteAll quotes each name, comma-separated.
func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

// held decides a call: it returns the response that stands for it when
// the effects layer holds it (a dry run), denies it (a rule, or a person:
// the script gets an error it may catch, and nothing is sent) or stops it
// (a plan run's call the plan does not hold, a person who could not be
// asked: it is never sent), nil when it is to be made. A safe call is
// decided only when a rule names effect.safe; a real run without rules
// decides nothing.
func (s *Session) held(f *function, k functionKind, args json.RawMessage) *sdkcall.Response {
	safe := f.safety != effects.Unsafe
	switch {
	case !s.fx.HasRules() && (safe || s.fx.Mode() == effects.Real):
		return nil // nothing to decide: the fast path of a real run
	case s.fx.HasRules() && safe && !s.fx.DecidesSafe():
		return nil
	}
	// The rules see the call's function, and its request only when some
	// rule looks into it; the effect is described once, when it is logged
	// or asked about (or when its facts need the request anyway).
	var described *effects.Effect
	out := s.fx.Pass(effects.Pending{
		Safe: safe,
		Facts: func() effects.Facts {
			facts := callFacts(f)
			if s.fx.NeedsRequest() {
				e := k.effect(s, f, args, &facts)
				described = &e
			}
			return facts
		},
		Effect: func() effects.Effect {
			if described != nil {
				return *described
			}
			return k.effect(s, f, args, nil)
		},
	})
	switch out.Decision {
	case effects.Proceed:
		return nil
	case effects.Deny:
		return &sdkcall.Response{Fail: sdkcall.Argument, Message: f.name + ": " + out.Message}
	case effects.Stop:
		// The runtime stops the script on it (effects.Run.Err).
		return &sdkcall.Response{Fail: sdkcall.Argument, Message: f.name + ": " + s.fx.Err().Message}
	}
	return k.substitute(f)
}

// effect is an operation's effect: its request built again, with each
// frozen parameter's value replaced by its name in braces and no
// credential; the headers its parameters set and its body's type
// (effectHeaders), and the body's exact bytes as the effects layer holds
// them. Every text in it passes the session's redactor. facts, when not
// nil, gets the call's facts: its parameters by name and body as checked
// (frozen ones as "{name}"), the URL's path and the effect's texts.
func (operation) effect(s *Session, f *function, args json.RawMessage, facts *effects.Facts) effects.Effect {
	e := effects.Effect{Op: effects.OpCall, Function: f.name, Method: f.fn.Method, Headers: map[string]string{}}
	if facts != nil {
		defer func() { facts.URL, facts.Headers = e.URL, e.Headers }()
	}
	params, body, err := f.arguments(args)
	if err != nil {
		return e
	}
	values, err := f.checkParams(params)
	if err != nil {
		return e
	}
	if body, err = f.checkBody(body); err != nil {
		return e
	}
	for _, p := range f.fn.Frozen {
		if values == nil {
			values = map[string]any{}
		}
		values[p.Name] = "{" + p.Name + "}"
	}
	if facts != nil {
		facts.Params, _ = factValue(values).(map[string]any)
		facts.Body = factValue(body)
	}
	req, err := f.build(values, body)
	if err != nil {
		return e
	}
	// A placeholder escaped in the URL is shown as it is written. That
	// keeps the URL one-to-one with the bytes sent: "%" is escaped too,
	// so only the text "{name}" escapes to "%7Bname%7D". Headers are not
	// escaped, and are held as sent.
	url := req.URL.String()
	for _, p := range f.fn.Frozen {
		url = strings.ReplaceAll(url, "%7B"+p.Name+"%7D", "{"+p.Name+"}")
	}
	e.URL = s.redact.String(url)
	if facts != nil {
		facts.Path = s.redact.String(req.URL.Path)
	}
	e.Headers = effectHeaders(req.Header, s.redact.String)
	if req.Body != nil {
		data, _ := io.ReadAll(req.Body)
		e.SetBody([]byte(s.redact.String(string(data))))
	}
	return e
}

// callFacts are what a rule sees of any call of f: its kind, API,
// function, operation (operationId, or the MCP tool's name) and method.
func callFacts(f *function) effects.Facts {
	operation := f.fn.OperationID
	if f.fn.Kind == catalog.MCP {
		operation = f.fn.Tool
	}
	return effects.Facts{Kind: string(effects.OpCall), API: f.api.api.Name, Function: f.name, Operation: operation, Method: f.fn.Method}
}

// factValue is a checked argument as a rule sees it: numbers (json.Number)
// as int or double, tables as maps and lists.
func factValue(v any) any {
	switch v := v.(type) {
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return n
		}
		f, _ := v.Float64()
		return f
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = factValue(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = factValue(x)
		}
		return out
	}
	return v
}

// effectHeaders are the headers of a request built without its
// credential that an effect holds, each value passed through text: every
// header but those the host sends on every request (setHeaders: its
// User-Agent and Accept-Encoding, and its Accept unless a parameter set
// another). Several values of one header are joined by "\n", which no
// header value holds.
func effectHeaders(h http.Header, text func(string) string) map[string]string {
	out := make(map[string]string, len(h))
	for k, v := range h {
		switch {
		case k == "User-Agent" && slices.Equal(v, userAgent),
			k == "Accept-Encoding" && slices.Equal(v, acceptEncoding),
			k == "Accept" && slices.Equal(v, acceptJSON):
			continue
		}
		out[k] = text(strings.Join(v, "\n"))
	}
	return out
}

// substitute is an operation's made-up response: the documented success
// status, and its body (synthesised once per function).
func (operation) substitute(f *function) *sdkcall.Response {
	f.dryOnce.Do(func() { f.dry = dryResponse(f.api.api, f.fn, f.exampleFits) })
	out := &sdkcall.Response{Status: f.dry.status, DryRun: true}
	if f.dry.body != nil {
		out.JSON = f.dry.body
		out.Headers = map[string]string{"content-type": f.dry.contentType}
	}
	return out
}

// effect is a tool call's effect: its arguments as the body, compared by
// their value (what the tool gets: effects.Effect.SetArguments).
func (tool) effect(s *Session, f *function, args json.RawMessage, facts *effects.Facts) effects.Effect {
	e := effects.Effect{Op: effects.OpCall, Function: f.name}
	var list []json.RawMessage
	if json.Unmarshal(args, &list) == nil && len(list) <= 1 {
		args = json.RawMessage(`{}`) // no arguments, or an empty table: the tool gets {}
		if len(list) == 1 && string(bytes.TrimSpace(list[0])) != "[]" {
			args = list[0]
		}
	}
	e.SetArguments([]byte(s.redact.String(string(args))))
	if facts != nil {
		var decoded any
		if json.Unmarshal(args, &decoded) == nil {
			facts.Args, _ = decoded.(map[string]any)
		}
	}
	return e
}

// substitute is a tool's made-up result: { dry_run = true }.
func (tool) substitute(*function) *sdkcall.Response {
	return &sdkcall.Response{JSON: json.RawMessage(`{"dry_run":true}`), DryRun: true}
}

// dryOutcome is the made-up response of an operation.
type dryOutcome struct {
	status      int
	contentType string
	body        json.RawMessage
}

// dryFields are a function's dry-run state, made on its first held call.
type dryFields struct {
	dryOnce sync.Once
	dry     dryOutcome
}

// successResponse is fn's documented success response: the lowest 2xx
// status (a range such as 2XX counts as its lowest), nil when none.
func successResponse(fn *catalog.Function) (*catalog.Response, int) {
	var best *catalog.Response
	bestStatus := 0
	for _, r := range fn.Responses {
		status := 0
		switch {
		case len(r.Status) == 3 && r.Status[0] == '2' && strings.HasSuffix(r.Status, "XX"):
			status = 200
		case len(r.Status) == 3 && r.Status[0] == '2':
			status, _ = strconv.Atoi(r.Status)
		}
		if status != 0 && (best == nil || status < bestStatus) {
			best, bestStatus = r, status
		}
	}
	return best, bestStatus
}

// jsonMedia is the first JSON media type of r.
func jsonMedia(r *catalog.Response) *catalog.MediaType {
	for _, m := range r.Content {
		t := strings.ToLower(m.Type)
		if i := strings.IndexByte(t, ';'); i >= 0 {
			t = t[:i]
		}
		if t == "application/json" || strings.HasSuffix(t, "+json") {
			return m
		}
	}
	return nil
}

// dryResponse makes fn's response up: the success status (200 when none
// is documented) and, for a JSON body, the media type's example when fits
// accepts it, else the minimal value of its schema; no body otherwise.
func dryResponse(api *catalog.API, fn *catalog.Function, fits func(*catalog.MediaType) bool) dryOutcome {
	r, status := successResponse(fn)
	if r == nil {
		return dryOutcome{status: http.StatusOK}
	}
	out := dryOutcome{status: status}
	m := jsonMedia(r)
	if m == nil || (m.Schema == nil && len(m.Example) == 0) {
		return out
	}
	out.contentType = m.Type
	if len(m.Example) > 0 && fits(m) {
		var buf bytes.Buffer
		if json.Compact(&buf, m.Example) == nil {
			out.body = buf.Bytes()
			return out
		}
	}
	out.body = synthesise(api, m.Schema)
	return out
}

// exampleFits reports whether m's example is valid against its schema.
func (f *function) exampleFits(m *catalog.MediaType) bool {
	if m.Schema == nil {
		return true
	}
	c := newChecker(f.api.api, m.Schema)
	if c == nil {
		return false
	}
	v, err := decodeForCheck(m.Example)
	if err != nil {
		return false
	}
	return c.check(v, bodyPlace) == nil
}

// decodeForCheck decodes JSON as the validator takes it.
func decodeForCheck(data json.RawMessage) (any, error) {
	return jsonschema.UnmarshalJSON(bytes.NewReader(data))
}
