package sdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/sdk/sdkargs"
)

// An OpenAPI operation's request is made in steps, each with its own
// errors, in this order: the arguments (how many, which is the params
// table and which the body), the parameters (names, values, required
// ones, then the configuration's frozen values), the body, the URL and
// headers the parameters go into, and last the credential.

// request checks the arguments and builds the request, before anything is
// sent.
func (s *Session) request(f *function, raw json.RawMessage) (*http.Request, error) {
	params, body, err := f.arguments(raw)
	if err != nil {
		return nil, err
	}
	f.prepare()
	values, err := f.checkParams(params)
	if err != nil {
		return nil, err
	}
	if body, err = f.checkBody(body); err != nil {
		return nil, err
	}
	req, err := f.build(f.withFrozen(values), body)
	if err != nil {
		return nil, err
	}
	if err := s.authorize(f, req); err != nil {
		return nil, err
	}
	return req, nil
}

// arguments decodes a call's argument list into its params table and its
// body (nil when not given), as many as the function takes.
func (f *function) arguments(raw json.RawMessage) (params, body any, err error) {
	args, err := sdkargs.List(raw, true)
	if err != nil {
		return nil, nil, err
	}
	hasParams, hasBody := len(f.fn.Params) > 0, f.fn.Body != nil
	want := 0
	switch {
	case hasParams && hasBody:
		want = 2
	case hasParams || hasBody:
		want = 1
	}
	if len(args) > want {
		return nil, nil, fmt.Errorf("takes %s; got %d arguments", signatureWords(hasParams, hasBody), len(args))
	}
	if hasParams && len(args) > 0 {
		params = args[0]
	}
	if hasBody && len(args) == want && want > 0 {
		body = args[want-1]
	}
	return params, body, nil
}

// checkParams checks the params table (nil when not given) against the
// function's parameters: its type, each name, each value (normalized to
// what the encoders take first) and the required ones. It returns the
// values by name.
func (f *function) checkParams(params any) (map[string]any, error) {
	var values map[string]any
	if params != nil {
		if list, ok := params.([]any); ok && len(list) == 0 {
			params = map[string]any{} // an empty table is [] in JSON
		}
		m, ok := params.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("params must be a table of parameter names to values, got %s", sdkargs.TypeName(params))
		}
		values = m
		if err := f.checkValues(m); err != nil {
			return nil, err
		}
	}
	for _, p := range f.fn.Params {
		if _, ok := values[p.Name]; !ok && p.Required {
			return nil, fmt.Errorf("missing required parameter '%s'", p.Name)
		}
	}
	return values, nil
}

// checkValues normalizes the values of m in place and checks them: every
// name a parameter's, every value fitting its schema.
func (f *function) checkValues(m map[string]any) error {
	api, fn := f.api, f.fn
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
				return unknownParam(api.api, fn, name)
			}
		}
	}
	if len(m) > 0 && !acceptsAll(f.quick, m) {
		return f.params.check(m, paramsPlace)
	}
	return nil
}

// checkBody checks the body (nil when not given) and returns it normalized
// to what the encoders take.
func (f *function) checkBody(body any) (any, error) {
	fn := f.fn
	if fn.Body == nil {
		return body, nil
	}
	if body == nil {
		if fn.Body.Required {
			return nil, errors.New("missing the request body")
		}
		return nil, nil
	}
	body = normalize(f.api.api, bodySchema(fn), body, 0)
	if err := f.body.check(body, bodyPlace); err != nil {
		return nil, err
	}
	return body, nil
}

// withFrozen adds the frozen parameters' values (the configuration's) to
// values.
func (f *function) withFrozen(values map[string]any) map[string]any {
	for _, p := range f.fn.Frozen {
		if values == nil {
			values = make(map[string]any, len(f.fn.Frozen))
		}
		values[p.Name] = f.api.frozen[p.Name]
	}
	return values
}

// requestParts are where a request's parameters go: the path (its
// template filled in), the query, headers and cookies.
type requestParts struct {
	path    string
	query   strings.Builder
	header  http.Header
	cookies []string
}

// build makes the request of checked parameter values and body: its URL,
// its body and its headers, without the credential.
func (f *function) build(values map[string]any, body any) (*http.Request, error) {
	api, fn := f.api, f.fn
	if api.baseURL == "" {
		return nil, fmt.Errorf("API %s has no base URL: its spec names no usable server; set base_url in [apis.%s]", api.api.Name, api.api.Name)
	}
	parts := requestParts{path: fn.Path}
	for _, list := range [2][]*catalog.Param{fn.Params, fn.Frozen} {
		for _, p := range list {
			if v, ok := values[p.Name]; ok {
				if err := f.place(&parts, p, v); err != nil {
					return nil, fmt.Errorf("parameter '%s': %w", p.Name, err)
				}
			}
		}
	}
	var data []byte
	contentType := ""
	if body != nil {
		var err error
		if data, contentType, err = encodeBody(api.api, fn.Body, body); err != nil {
			return nil, fmt.Errorf("body: %w", err)
		}
	}
	req, err := api.newRequest(fn.Method, parts.path, parts.query.String(), data)
	if err != nil {
		return nil, fmt.Errorf("cannot build the request: %w", err)
	}
	parts.setHeaders(req, contentType)
	return req, nil
}

// place puts parameter p's value v where p goes.
func (f *function) place(parts *requestParts, p *catalog.Param, v any) error {
	switch p.In {
	case "path":
		text, err := pathValue(p, v)
		if err != nil {
			return err
		}
		parts.path = strings.Replace(parts.path, f.placeholders[p.Name], text, 1)
	case "query":
		return queryValue(&parts.query, p, v)
	case "header":
		if http.CanonicalHeaderKey(p.Name) == "Accept-Encoding" {
			return errAcceptEncoding
		}
		text, err := headerValue(p, v)
		if err != nil {
			return err
		}
		if parts.header == nil {
			parts.header = http.Header{}
		}
		parts.header.Set(p.Name, text)
	case "cookie":
		text, err := cookieValue(p, v)
		if err != nil {
			return err
		}
		parts.cookies = append(parts.cookies, text)
	}
	return nil
}

// setHeaders puts the parameters' headers and cookies on req, then the
// body's type and the headers the host sets itself.
func (parts *requestParts) setHeaders(req *http.Request, contentType string) {
	for k, v := range parts.header {
		req.Header[k] = v
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if len(parts.cookies) > 0 {
		req.Header.Set("Cookie", strings.Join(parts.cookies, "; "))
	}
	if _, ok := req.Header["Accept"]; !ok {
		req.Header["Accept"] = acceptJSON
	}
	req.Header["User-Agent"] = userAgent
	req.Header["Accept-Encoding"] = acceptEncoding
}

// authorize puts the session's credential for f's API on req, unless the
// operation takes none.
func (s *Session) authorize(f *function, req *http.Request) error {
	cred := s.creds[f.api.api.Name]
	if cred == nil || f.fn.NoAuth {
		return nil
	}
	p, err := s.plan(f, cred)
	if err != nil {
		return err
	}
	p.apply(req)
	return nil
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
