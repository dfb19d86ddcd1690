package sdk

import (
	"encoding/json"
	"errors"
	"math"
	"net/url"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/sdk/sdkargs"
)

// A checker validates one argument (the params table or the body) with a
// real JSON Schema validator (santhosh-tekuri/jsonschema), compiled once
// per function from the catalog's schemas. Checks are lenient where specs
// are often wrong: oneOf is read as anyOf, readOnly properties are never
// required in a request, and bounds and patterns are left to the API.
type checker struct {
	schema *jsonschema.Schema
}

// newChecker compiles root (with the named schemas it reaches) or returns
// nil when it checks nothing or cannot be compiled: a call is never refused
// because its spec is odd.
func newChecker(api *catalog.API, root *catalog.Schema) *checker {
	if root == nil {
		return nil
	}
	doc := toJSONSchema(api, root)
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	for _, f := range extraFormats {
		c.RegisterFormat(f)
	}
	if err := c.AddResource("sdk:///args.json", doc); err != nil {
		return nil
	}
	s, err := c.Compile("sdk:///args.json")
	if err != nil {
		return nil
	}
	return &checker{schema: s}
}

// The places of a call's two arguments, as their errors name them.
var (
	paramsPlace = sdkargs.Place{Member: "parameter"} // "parameter 'limit': "
	bodyPlace   = sdkargs.Place{Value: "body"}       // "body.items[2]: "
)

// check validates v (as decoded by jsonschema.UnmarshalJSON); the error
// names the first problem's location as at says.
func (c *checker) check(v any, at sdkargs.Place) error {
	if c == nil {
		return nil
	}
	err := c.schema.Validate(v)
	if err == nil {
		return nil
	}
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return err
	}
	return errors.New(sdkargs.Describe(ve, at))
}

// checkedFormats are the formats arguments are checked against: those
// whose meaning is unambiguous. Others (uri, hostname, regex...) are often
// used loosely by specs and left to the API.
var checkedFormats = map[string]bool{
	"uuid": true, "date-time": true, "date": true, "time": true, "email": true,
	"ipv4": true, "ipv6": true, "int32": true, "int64": true,
}

// extraFormats are OpenAPI's formats that JSON Schema does not define.
var extraFormats = []*jsonschema.Format{
	{Name: "int32", Validate: intRange(math.MinInt32, math.MaxInt32)},
	{Name: "int64", Validate: intRange(math.MinInt64, math.MaxInt64)},
}

func intRange(lo, hi float64) func(v any) error {
	return func(v any) error {
		n, ok := v.(json.Number)
		if !ok {
			return nil
		}
		f, err := n.Float64()
		if err != nil || f != math.Trunc(f) || f < lo || f > hi {
			return errors.New("out of range")
		}
		return nil
	}
}

// toJSONSchema renders root as a JSON Schema document whose $defs hold
// the named schemas it reaches.
func toJSONSchema(api *catalog.API, root *catalog.Schema) map[string]any {
	w := &schemaWriter{api: api, defs: map[string]any{}}
	doc := w.conv(root).(map[string]any)
	for len(w.pending) > 0 {
		name := w.pending[0]
		w.pending = w.pending[1:]
		if s := api.Schemas[name]; s != nil {
			w.defs[name] = w.conv(s)
		} else {
			w.defs[name] = true
		}
	}
	if len(w.defs) > 0 {
		doc["$defs"] = w.defs
	}
	return doc
}

// schemaWriter renders catalog schemas as JSON Schema, collecting the
// named schemas they refer to.
type schemaWriter struct {
	api  *catalog.API
	defs map[string]any
	// pending are the names referred to and not rendered yet.
	pending []string
}

// conv renders s: a reference to $defs for a named schema.
func (w *schemaWriter) conv(s *catalog.Schema) any {
	if s == nil {
		return true
	}
	if s.Ref != "" {
		if _, done := w.defs[s.Ref]; !done {
			w.defs[s.Ref] = nil
			w.pending = append(w.pending, s.Ref)
		}
		return map[string]any{"$ref": "#/$defs/" + escapeRef(s.Ref)}
	}
	out := map[string]any{}
	valueKeywords(out, s)
	w.objectKeywords(out, s)
	if s.Items != nil {
		out["items"] = w.conv(s.Items)
	}
	if len(s.AllOf) > 0 {
		out["allOf"] = w.list(s.AllOf)
	}
	if any := append(append([]*catalog.Schema(nil), s.AnyOf...), s.OneOf...); len(any) > 0 {
		out["anyOf"] = w.list(any)
	}
	return out
}

func (w *schemaWriter) list(ss []*catalog.Schema) []any {
	out := make([]any, len(ss))
	for i, x := range ss {
		out[i] = w.conv(x)
	}
	return out
}

// valueKeywords renders what s says of a value itself: type, format,
// enum and const.
func valueKeywords(out map[string]any, s *catalog.Schema) {
	if len(s.Type) > 0 {
		types := make([]any, len(s.Type))
		for i, t := range s.Type {
			types[i] = t
		}
		out["type"] = types
	}
	if checkedFormats[s.Format] {
		out["format"] = s.Format
	}
	if len(s.Enum) > 0 {
		enum := make([]any, 0, len(s.Enum))
		for _, e := range s.Enum {
			if v, err := jsonschema.UnmarshalJSON(strings.NewReader(string(e))); err == nil {
				enum = append(enum, v)
			}
		}
		// A nullable enum without null among its values still takes null.
		if s.Has("null") && len(s.Type) > 0 {
			enum = append(enum, nil)
		}
		out["enum"] = enum
	}
	if len(s.Const) > 0 {
		if v, err := jsonschema.UnmarshalJSON(strings.NewReader(string(s.Const))); err == nil {
			out["const"] = v
		}
	}
}

// objectKeywords renders s's properties, required (less those read
// only) and additionalProperties.
func (w *schemaWriter) objectKeywords(out map[string]any, s *catalog.Schema) {
	if len(s.Properties) > 0 {
		props := map[string]any{}
		for _, p := range s.Properties {
			props[p.Name] = w.conv(p.Schema)
		}
		out["properties"] = props
	}
	var required []any
	for _, r := range s.Required {
		if p := s.Property(r); p != nil && w.api.Resolve(p) != nil && w.api.Resolve(p).ReadOnly {
			continue
		}
		required = append(required, r)
	}
	if len(required) > 0 {
		out["required"] = required
	}
	switch {
	case s.NoAdditional:
		out["additionalProperties"] = false
	case s.AdditionalProperties != nil:
		out["additionalProperties"] = w.conv(s.AdditionalProperties)
	}
}

func escapeRef(name string) string {
	return url.PathEscape(strings.NewReplacer("~", "~0", "/", "~1").Replace(name))
}

// paramsSchema is the schema of a function's params table: an object of
// its visible parameters. Unknown and missing names are checked before,
// with better messages.
func paramsSchema(f *catalog.Function) *catalog.Schema {
	if len(f.Params) == 0 {
		return nil
	}
	s := &catalog.Schema{Type: []string{"object"}}
	for _, p := range f.Params {
		ps := p.Schema
		if ps == nil || p.ContentType != "" {
			ps = &catalog.Schema{}
		}
		s.Properties = append(s.Properties, &catalog.Property{Name: p.Name, Schema: ps})
	}
	return s
}

// bodySchema is the schema a body is checked against: the first media
// type's (they describe the same data).
func bodySchema(f *catalog.Function) *catalog.Schema {
	if f.Body == nil || len(f.Body.Content) == 0 {
		return nil
	}
	return f.Body.Content[0].Schema
}
