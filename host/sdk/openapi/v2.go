package openapi

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/pb33f/go-yaml"
	v2 "github.com/pb33f/libopenapi/datamodel/high/v2"
	"github.com/pb33f/libopenapi/datamodel/low"
	lowv2 "github.com/pb33f/libopenapi/datamodel/low/v2"
	"github.com/pb33f/libopenapi/utils"

	"github.com/toolscript/toolscript/host/contract/catalog"
)

// v2 converts a Swagger 2.0 document as OpenAPI 3 would describe it:
// host, basePath and schemes become the base URL; body and formData
// parameters the request body; collectionFormat a style.
func (b *builder) v2(doc *v2.Swagger) {
	if doc.Info != nil {
		b.api.Title, b.api.Version, b.api.Description = doc.Info.Title, doc.Info.Version, doc.Info.Description
	}
	// The server as OpenAPI 3 would write it, still relative to where the
	// spec is read from when it names no host or scheme: the base URL is
	// resolved on every load (baseURL), never stored in the cache.
	server := "/" + strings.Trim(doc.BasePath, "/")
	if doc.Host != "" {
		scheme := ""
		if len(doc.Schemes) > 0 {
			scheme = doc.Schemes[0] + ":"
			if slices.Contains(doc.Schemes, "https") {
				scheme = "https:"
			}
		}
		server = scheme + "//" + doc.Host + server
	}
	b.api.Servers = []catalog.Server{{URL: server}}
	if doc.SecurityDefinitions != nil {
		for name, s := range doc.SecurityDefinitions.Definitions.FromOldest() {
			if b.api.SecuritySchemes == nil {
				b.api.SecuritySchemes = map[string]catalog.SecurityScheme{}
			}
			cs := catalog.SecurityScheme{Type: s.Type, Name: s.Name, In: s.In, Description: s.Description}
			if s.Type == "basic" {
				cs.Type, cs.Scheme = "http", "basic"
			}
			b.api.SecuritySchemes[name] = cs
		}
	}
	if doc.Definitions != nil {
		for name, p := range doc.Definitions.Definitions.FromOldest() {
			b.namedSchema("#/definitions/", name, p)
		}
	}
	global, globalNone := security(doc.Security)
	if doc.Paths == nil {
		return
	}
	for path, item := range doc.Paths.PathItems.FromOldest() {
		ops := map[string]*v2.Operation{
			"GET": item.Get, "PUT": item.Put, "POST": item.Post, "DELETE": item.Delete,
			"OPTIONS": item.Options, "HEAD": item.Head, "PATCH": item.Patch,
		}
		for _, m := range methods {
			op := ops[m]
			if op == nil {
				continue
			}
			f := b.operation2(doc, m, path, item, op)
			if f == nil {
				continue
			}
			switch {
			case op.Security != nil:
				f.Security, f.NoAuth = security(op.Security)
			case emptySecurity2(item, m):
				f.NoAuth = true
			default:
				f.Security, f.NoAuth = global, globalNone
			}
			b.api.Functions = append(b.api.Functions, f)
		}
	}
}

func (b *builder) operation2(doc *v2.Swagger, method, path string, item *v2.PathItem, op *v2.Operation) *catalog.Function {
	where := method + " " + path
	f := newFunction(method, path, op.OperationId, op.Summary, op.Description, op.Tags, op.Deprecated)
	consumes := firstNonEmpty(op.Consumes, doc.Consumes, []string{"application/json"})
	produces := firstNonEmpty(op.Produces, doc.Produces, []string{"application/json"})

	var params []*v2.Parameter
	byKey := map[string]int{}
	for _, p := range append(slices.Clone(item.Parameters), op.Parameters...) {
		if p == nil || p.Name == "" {
			continue
		}
		key := p.In + "\x00" + p.Name
		if i, ok := byKey[key]; ok {
			params[i] = p
			continue
		}
		byKey[key] = len(params)
		params = append(params, p)
	}
	var form *catalog.Schema
	multipart := slices.Contains(consumes, "multipart/form-data")
	for _, p := range params {
		switch p.In {
		case "body":
			body := &catalog.Body{Required: p.Required != nil && *p.Required, Description: p.Description}
			schema := b.schemas.proxy(p.Schema, 0)
			for _, mt := range consumes {
				body.Content = append(body.Content, &catalog.MediaType{Type: mt, Schema: schema})
			}
			f.Body = body
		case "formData":
			if form == nil {
				form = &catalog.Schema{Type: []string{"object"}}
			}
			prop := simpleSchema2(p.Type, p.Format, p.Items, p.Enum, p.Default)
			prop.Description = p.Description
			if p.Type == "file" {
				multipart = true
				prop.Format = "binary"
			}
			form.Properties = append(form.Properties, &catalog.Property{Name: p.Name, Schema: prop})
			if p.Required != nil && *p.Required {
				form.Required = append(form.Required, p.Name)
			}
		case "path", "query", "header":
			cp := &catalog.Param{
				Name:        p.Name,
				In:          p.In,
				Required:    (p.Required != nil && *p.Required) || p.In == "path",
				Description: strings.TrimSpace(p.Description),
				Schema:      simpleSchema2(p.Type, p.Format, p.Items, p.Enum, p.Default),
			}
			cp.Style, cp.Explode = collectionFormat(p.In, p.CollectionFormat)
			f.Params = append(f.Params, cp)
		default:
			b.warn("%s: parameter %s has an unknown location %q; it is ignored", where, p.Name, p.In)
		}
	}
	if form != nil {
		mt := "application/x-www-form-urlencoded"
		if multipart {
			mt = "multipart/form-data"
		}
		f.Body = &catalog.Body{Required: len(form.Required) > 0, Content: []*catalog.MediaType{{Type: mt, Schema: form}}}
	}
	if !b.checkParams(where, f) {
		return nil
	}
	if op.Responses != nil {
		for code, r := range op.Responses.Codes.FromOldest() {
			f.Responses = append(f.Responses, b.response2(strings.ToUpper(code), r, produces))
		}
		if op.Responses.Default != nil {
			f.Responses = append(f.Responses, b.response2("default", op.Responses.Default, produces))
		}
	}
	return f
}

// response2 is a Swagger 2.0 response as OpenAPI 3 describes it: its
// schema under each media type the operation produces, with a success
// response's example for that media type (also when it has no schema).
func (b *builder) response2(code string, r *v2.Response, produces []string) *catalog.Response {
	out := &catalog.Response{Status: code, Description: strings.TrimSpace(r.Description)}
	var schema *catalog.Schema
	if r.Schema != nil {
		schema = b.schemas.proxy(r.Schema, 0)
	}
	for _, mt := range produces {
		media := &catalog.MediaType{Type: mt, Schema: schema}
		if strings.HasPrefix(code, "2") {
			media.Example = example2(r.Examples, mt)
		}
		if schema != nil || media.Example != nil {
			out.Content = append(out.Content, media)
		}
	}
	return out
}

// emptySecurity2 reports whether the operation of item for method says
// `security: []`, which the library's model does not tell from no security
// at all.
func emptySecurity2(item *v2.PathItem, method string) bool {
	pi := item.GoLow()
	if pi == nil {
		return false
	}
	ref := map[string]low.NodeReference[*lowv2.Operation]{
		"GET": pi.Get, "PUT": pi.Put, "POST": pi.Post, "DELETE": pi.Delete,
		"OPTIONS": pi.Options, "HEAD": pi.Head, "PATCH": pi.Patch,
	}[method]
	if ref.ValueNode == nil {
		return false
	}
	_, v := utils.FindKeyNodeTop("security", ref.ValueNode.Content)
	return v != nil && v.Kind == yaml.SequenceNode && len(v.Content) == 0
}

// collectionFormat maps Swagger 2.0's collectionFormat to OpenAPI 3's style
// and explode.
func collectionFormat(in, format string) (string, bool) {
	switch format {
	case "multi":
		return "form", true
	case "ssv":
		return "spaceDelimited", false
	case "pipes":
		return "pipeDelimited", false
	case "tsv":
		return "tabDelimited", false
	}
	if in == "query" {
		return "form", false // csv, the default
	}
	return "simple", false
}

// simpleSchema2 builds the schema of a Swagger 2.0 non-body parameter.
func simpleSchema2(typ, format string, items *v2.Items, enum []*yaml.Node, def *yaml.Node) *catalog.Schema {
	s := &catalog.Schema{Type: normalizeTypes([]string{typ}), Format: format, Default: nodeJSON(def)}
	for _, e := range enum {
		if j := nodeJSON(e); j != nil {
			s.Enum = append(s.Enum, j)
		}
	}
	if items != nil && typ == "array" {
		s.Items = simpleSchema2(items.Type, items.Format, items.Items, items.Enum, items.Default)
	}
	if len(s.Default) > 0 && !json.Valid(s.Default) {
		s.Default = nil
	}
	return s
}

func firstNonEmpty(lists ...[]string) []string {
	for _, l := range lists {
		if len(l) > 0 {
			return l
		}
	}
	return nil
}

// example2 is a success response's example for the media type mt (a
// Swagger 2 response's examples are keyed by media type, parameters and
// case aside) as JSON; nil when none, or when larger than
// catalog.MaxExampleBytes.
func example2(examples *v2.Example, mt string) json.RawMessage {
	if examples == nil || examples.Values == nil {
		return nil
	}
	want := mediaBase(mt)
	for key, node := range examples.Values.FromOldest() {
		if mediaBase(key) != want || node == nil {
			continue
		}
		data := nodeJSON(node)
		if len(data) == 0 || len(data) > catalog.MaxExampleBytes {
			return nil
		}
		return data
	}
	return nil
}

// mediaBase is a media type without its parameters, in lower case.
func mediaBase(mt string) string {
	if i := strings.IndexByte(mt, ';'); i >= 0 {
		mt = mt[:i]
	}
	return strings.ToLower(strings.TrimSpace(mt))
}
