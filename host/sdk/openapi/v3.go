package openapi

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/pb33f/go-yaml"
	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
	"github.com/pb33f/libopenapi/datamodel/low"
	lowv3 "github.com/pb33f/libopenapi/datamodel/low/v3"
	"github.com/pb33f/libopenapi/utils"

	"github.com/toolscript/toolscript/host/contract/catalog"
)

// methods are the HTTP methods of a path item, in the order functions are
// listed (and clashes numbered).
var methods = []string{"GET", "PUT", "POST", "DELETE", "OPTIONS", "HEAD", "PATCH", "TRACE"}

func (b *builder) v3(doc *v3.Document) {
	if doc.Info != nil {
		b.api.Title, b.api.Version, b.api.Description = doc.Info.Title, doc.Info.Version, doc.Info.Description
	}
	for _, s := range doc.Servers {
		srv := catalog.Server{URL: s.URL, Description: s.Description}
		for name, v := range s.Variables.FromOldest() {
			if srv.Variables == nil {
				srv.Variables = map[string]catalog.ServerVariable{}
			}
			srv.Variables[name] = catalog.ServerVariable{Default: v.Default, Enum: v.Enum, Description: v.Description}
		}
		b.api.Servers = append(b.api.Servers, srv)
	}
	if doc.Components != nil {
		for name, s := range doc.Components.SecuritySchemes.FromOldest() {
			if b.api.SecuritySchemes == nil {
				b.api.SecuritySchemes = map[string]catalog.SecurityScheme{}
			}
			b.api.SecuritySchemes[name] = catalog.SecurityScheme{
				Type: s.Type, Scheme: strings.ToLower(s.Scheme), Name: s.Name, In: s.In, Description: s.Description,
			}
		}
		// Named schemas first, in spec order, so that they keep their own
		// names even when an inline copy is met first.
		for name, p := range doc.Components.Schemas.FromOldest() {
			b.namedSchema("#/components/schemas/", name, p)
		}
	}
	global, globalNone := security(doc.Security)
	if doc.Paths == nil {
		return
	}
	for path, item := range doc.Paths.PathItems.FromOldest() {
		ops := map[string]*v3.Operation{
			"GET": item.Get, "PUT": item.Put, "POST": item.Post, "DELETE": item.Delete,
			"OPTIONS": item.Options, "HEAD": item.Head, "PATCH": item.Patch, "TRACE": item.Trace,
		}
		for _, m := range methods {
			op := ops[m]
			if op == nil {
				continue
			}
			f := b.operation3(m, path, item, op)
			if f == nil {
				continue
			}
			if srv := firstServer(op.Servers, item.Servers); srv != "" && len(b.api.Servers) > 0 && srv != strings.TrimSuffix(b.api.Servers[0].URL, "/") {
				b.warn("%s %s: the spec gives it its own server %s; calls go to the API's base URL (set base_url, or a second API with that server)", m, path, srv)
			}
			if op.Security != nil {
				f.Security, f.NoAuth = security(op.Security)
			} else {
				f.Security, f.NoAuth = global, globalNone
			}
			b.api.Functions = append(b.api.Functions, f)
		}
	}
}

// writtenParams3 counts the parameters the spec writes for an operation
// (its own and its path item's): the library drops a whole list when one
// entry cannot be resolved.
func writtenParams3(item *v3.PathItem, method string) int {
	pi := item.GoLow()
	if pi == nil {
		return 0
	}
	ref := map[string]low.NodeReference[*lowv3.Operation]{
		"GET": pi.Get, "PUT": pi.Put, "POST": pi.Post, "DELETE": pi.Delete,
		"OPTIONS": pi.Options, "HEAD": pi.Head, "PATCH": pi.Patch, "TRACE": pi.Trace,
	}[method]
	n := 0
	for _, node := range []*yaml.Node{ref.ValueNode, pi.RootNode} {
		if node == nil {
			continue
		}
		if _, v := utils.FindKeyNodeTop("parameters", node.Content); v != nil && v.Kind == yaml.SequenceNode {
			n += len(v.Content)
		}
	}
	return n
}

// firstServer is the URL of the first server an operation or its path
// item names itself, or "".
func firstServer(lists ...[]*v3.Server) string {
	for _, l := range lists {
		if len(l) > 0 && l[0] != nil {
			return strings.TrimSuffix(l[0].URL, "/")
		}
	}
	return ""
}

// security converts requirements: the alternatives, and whether the list
// is explicitly empty (no authentication).
func security(reqs []*base.SecurityRequirement) ([][]string, bool) {
	if reqs != nil && len(reqs) == 0 {
		return nil, true
	}
	var out [][]string
	for _, r := range reqs {
		if r == nil {
			continue
		}
		names := keys(r.Requirements)
		if len(names) == 0 {
			continue // {} makes authentication optional: send it when there is some
		}
		out = append(out, names)
	}
	return out, false
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func (b *builder) operation3(method, path string, item *v3.PathItem, op *v3.Operation) *catalog.Function {
	where := method + " " + path
	f := newFunction(method, path, op.OperationId, op.Summary, op.Description, op.Tags, op.Deprecated != nil && *op.Deprecated)
	// Path-level parameters, overridden by operation-level ones of the
	// same name and location.
	byKey := map[string]int{}
	add := func(p *v3.Parameter) {
		if p == nil || p.Name == "" {
			b.warn("%s: a parameter without a name is ignored", where)
			return
		}
		cp := b.param3(where, p)
		if cp == nil {
			return
		}
		key := cp.In + "\x00" + cp.Name
		if i, ok := byKey[key]; ok {
			f.Params[i] = cp
			return
		}
		byKey[key] = len(f.Params)
		f.Params = append(f.Params, cp)
	}
	for _, p := range item.Parameters {
		add(p)
	}
	for _, p := range op.Parameters {
		add(p)
	}
	if written := writtenParams3(item, method); written > len(item.Parameters)+len(op.Parameters) {
		b.warn("%s: %d of its parameters could not be read (an unresolved $ref?); they cannot be passed",
			where, written-len(item.Parameters)-len(op.Parameters))
	}
	if !b.checkParams(where, f) {
		return nil
	}
	if rb := op.RequestBody; rb != nil {
		body := &catalog.Body{Required: rb.Required != nil && *rb.Required, Description: rb.Description}
		for mt, m := range rb.Content.FromOldest() {
			body.Content = append(body.Content, &catalog.MediaType{Type: mt, Schema: b.schemas.proxy(m.Schema, 0)})
		}
		if len(body.Content) > 0 {
			f.Body = body
		}
	}
	if op.Responses != nil {
		for code, r := range op.Responses.Codes.FromOldest() {
			f.Responses = append(f.Responses, b.response3(code, r))
		}
		if op.Responses.Default != nil {
			f.Responses = append(f.Responses, b.response3("default", op.Responses.Default))
		}
	}
	return f
}

func (b *builder) response3(code string, r *v3.Response) *catalog.Response {
	out := &catalog.Response{Status: strings.ToUpper(code), Description: strings.TrimSpace(r.Description)}
	if code == "default" {
		out.Status = "default"
	}
	for mt, m := range r.Content.FromOldest() {
		media := &catalog.MediaType{Type: mt, Schema: b.schemas.proxy(m.Schema, 0)}
		if strings.HasPrefix(out.Status, "2") {
			media.Example = example3(m)
		}
		out.Content = append(out.Content, media)
	}
	return out
}

// example3 is a success response's example as JSON: its example, else the
// first of its examples with a value; nil when none, or when larger than
// catalog.MaxExampleBytes.
func example3(m *v3.MediaType) json.RawMessage {
	node := m.Example
	if node == nil && m.Examples != nil {
		for _, ex := range m.Examples.FromOldest() {
			if ex != nil && ex.Value != nil {
				node = ex.Value
				break
			}
		}
	}
	if node == nil {
		return nil
	}
	data := nodeJSON(node)
	if len(data) > catalog.MaxExampleBytes {
		return nil
	}
	return data
}

func (b *builder) param3(where string, p *v3.Parameter) *catalog.Param {
	in := strings.ToLower(p.In)
	out := &catalog.Param{
		Name:          p.Name,
		In:            in,
		Required:      (p.Required != nil && *p.Required) || in == "path",
		Description:   strings.TrimSpace(p.Description),
		Deprecated:    p.Deprecated,
		Style:         p.Style,
		AllowReserved: p.AllowReserved,
	}
	switch in {
	case "path", "header":
		if out.Style == "" {
			out.Style = "simple"
		}
	case "query", "cookie":
		if out.Style == "" {
			out.Style = "form"
		}
	case "querystring":
		b.warn("%s: parameter %s in querystring is not supported; it is ignored", where, p.Name)
		return nil
	default:
		b.warn("%s: parameter %s has an unknown location %q; it is ignored", where, p.Name, p.In)
		return nil
	}
	out.Explode = out.Style == "form"
	if p.Explode != nil {
		out.Explode = *p.Explode
	}
	if p.Schema != nil {
		out.Schema = b.schemas.proxy(p.Schema, 0)
	} else {
		for mt, m := range p.Content.FromOldest() {
			out.ContentType = mt
			out.Schema = b.schemas.proxy(m.Schema, 0)
			break
		}
	}
	return out
}

// checkParams drops what makes an operation uncallable: a path template
// variable without a parameter. Parameters whose names clash across
// locations keep the first.
func (b *builder) checkParams(where string, f *catalog.Function) bool {
	seen := map[string]string{}
	kept := f.Params[:0]
	for _, p := range f.Params {
		if in, dup := seen[p.Name]; dup {
			b.warn("%s: parameter %s is in both %s and %s; only the %s one can be passed", where, p.Name, in, p.In, in)
			continue
		}
		seen[p.Name] = p.In
		if p.In == "path" && !strings.Contains(f.Path, "{"+p.Name+"}") {
			b.warn("%s: path parameter %s is not in the path; it is ignored", where, p.Name)
			continue
		}
		kept = append(kept, p)
	}
	f.Params = kept
	var missing []string
	for _, v := range templateVars(f.Path) {
		if in, ok := seen[v]; !ok || in != "path" {
			missing = append(missing, v)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		b.warn("%s: skipped: the path's {%s} has no path parameter", where, strings.Join(missing, "}, {"))
		return false
	}
	return true
}

// templateVars lists the {names} of a path template.
func templateVars(path string) []string {
	var out []string
	for {
		i := strings.IndexByte(path, '{')
		if i < 0 {
			return out
		}
		j := strings.IndexByte(path[i:], '}')
		if j < 0 {
			return out
		}
		out = append(out, path[i+1:i+j])
		path = path[i+j+1:]
	}
}
