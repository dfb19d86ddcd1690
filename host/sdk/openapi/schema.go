package openapi

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/pb33f/go-yaml"
	"github.com/pb33f/libopenapi/datamodel/high/base"
	"github.com/pb33f/libopenapi/orderedmap"

	"github.com/toolscript/toolscript/host/contract/catalog"
)

// maxInlineDepth bounds how deep inline (unnamed) schemas are followed; a
// deeper one is kept as "any" with a warning. Named schemas reset the count
// (they are converted once each).
const maxInlineDepth = 64

// schemas converts libopenapi schemas into catalog schemas, naming every
// referenced schema once so that recursion becomes a graph of names.
type schemas struct {
	api *catalog.API
	// names maps a reference ("#/components/schemas/Pet", "common.yaml#/Pet")
	// to its name in api.Schemas.
	names    map[string]string
	warn     func(format string, args ...any)
	external bool // a reference outside the document was followed
}

func newSchemas(api *catalog.API, warn func(string, ...any)) *schemas {
	api.Schemas = map[string]*catalog.Schema{}
	return &schemas{api: api, names: map[string]string{}, warn: warn}
}

// refName is the name a reference's schema gets: the last segment of its
// JSON pointer (or the file name), unique within the API.
func (c *schemas) refName(ref string) string {
	frag := ref
	if i := strings.LastIndex(ref, "#"); i >= 0 {
		frag = ref[i+1:]
	}
	name := frag
	if i := strings.LastIndex(frag, "/"); i >= 0 {
		name = frag[i+1:]
	}
	if name == "" {
		name = strings.TrimSuffix(ref[strings.LastIndex(ref, "/")+1:], "#")
		name = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, ".json"), ".yaml"), ".yml")
	}
	name = strings.ReplaceAll(strings.ReplaceAll(name, "~1", "/"), "~0", "~")
	if u, err := url.PathUnescape(name); err == nil {
		name = u
	}
	if name == "" {
		name = "schema"
	}
	base := name
	for i := 2; ; i++ {
		if _, taken := c.api.Schemas[name]; !taken {
			return name
		}
		name = fmt.Sprintf("%s_%d", base, i)
	}
}

// proxy converts one schema reference or inline schema.
func (c *schemas) proxy(p *base.SchemaProxy, depth int) *catalog.Schema {
	if p == nil {
		return nil
	}
	if p.IsReference() {
		ref := p.GetReference()
		if name, ok := c.names[ref]; ok {
			return &catalog.Schema{Ref: name}
		}
		if !strings.HasPrefix(ref, "#") {
			c.external = true
		}
		name := c.refName(ref)
		c.names[ref] = name
		c.api.Schemas[name] = &catalog.Schema{} // placeholder: recursion stops here
		s := p.Schema()
		if s == nil {
			c.warn("schema %s could not be resolved (%v); it accepts any value", ref, p.GetBuildError())
			return &catalog.Schema{Ref: name}
		}
		c.api.Schemas[name] = c.schema(s, 0)
		return &catalog.Schema{Ref: name}
	}
	if depth > maxInlineDepth {
		c.warn("a schema nests deeper than %d levels; the rest accepts any value", maxInlineDepth)
		return &catalog.Schema{}
	}
	s := p.Schema()
	if s == nil {
		if err := p.GetBuildError(); err != nil {
			c.warn("a schema could not be built (%v); it accepts any value", err)
		}
		return &catalog.Schema{}
	}
	return c.schema(s, depth)
}

func (c *schemas) list(ps []*base.SchemaProxy, depth int) []*catalog.Schema {
	if len(ps) == 0 {
		return nil
	}
	out := make([]*catalog.Schema, 0, len(ps))
	for _, p := range ps {
		if s := c.proxy(p, depth+1); s != nil {
			out = append(out, s)
		}
	}
	return out
}

// schema converts one resolved schema.
func (c *schemas) schema(s *base.Schema, depth int) *catalog.Schema {
	out := &catalog.Schema{
		Type:        normalizeTypes(s.Type),
		Format:      s.Format,
		Title:       s.Title,
		Description: s.Description,
		Pattern:     s.Pattern,
		Minimum:     s.Minimum,
		Maximum:     s.Maximum,
		MinLength:   s.MinLength,
		MaxLength:   s.MaxLength,
		MinItems:    s.MinItems,
		MaxItems:    s.MaxItems,
		Required:    s.Required,
		Deprecated:  s.Deprecated != nil && *s.Deprecated,
		ReadOnly:    s.ReadOnly != nil && *s.ReadOnly,
		WriteOnly:   s.WriteOnly != nil && *s.WriteOnly,
		Default:     nodeJSON(s.Default),
		Const:       nodeJSON(s.Const),
	}
	if s.Nullable != nil && *s.Nullable && len(out.Type) > 0 && !out.Has("null") {
		out.Type = append(out.Type, "null")
	}
	for _, e := range s.Enum {
		if j := nodeJSON(e); j != nil {
			out.Enum = append(out.Enum, j)
		}
	}
	if s.Properties != nil {
		for name, p := range s.Properties.FromOldest() {
			out.Properties = append(out.Properties, &catalog.Property{Name: name, Schema: c.proxy(p, depth+1)})
		}
	}
	if ap := s.AdditionalProperties; ap != nil {
		switch {
		case ap.IsA():
			out.AdditionalProperties = c.proxy(ap.A, depth+1)
		case !ap.B:
			out.NoAdditional = true
		}
	}
	if it := s.Items; it != nil && it.IsA() {
		out.Items = c.proxy(it.A, depth+1)
	}
	out.AllOf = c.list(s.AllOf, depth)
	out.OneOf = c.list(s.OneOf, depth)
	out.AnyOf = c.list(s.AnyOf, depth)
	// An object described only by its properties says so.
	if len(out.Type) == 0 && (len(out.Properties) > 0 || out.AdditionalProperties != nil) {
		out.Type = []string{"object"}
	}
	if len(out.Type) == 0 && out.Items != nil {
		out.Type = []string{"array"}
	}
	return out
}

// normalizeTypes keeps the JSON Schema types a spec names, dropping
// unknown ones ("file" in Swagger 2.0 becomes a string).
func normalizeTypes(types []string) []string {
	var out []string
	for _, t := range types {
		switch t {
		case "object", "array", "string", "integer", "number", "boolean", "null":
			out = append(out, t)
		case "file":
			out = append(out, "string")
		}
	}
	return out
}

// nodeJSON renders a YAML value as JSON; nil for none or for a value JSON
// cannot hold.
func nodeJSON(n *yaml.Node) json.RawMessage {
	if n == nil {
		return nil
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return nil
	}
	j, err := json.Marshal(jsonable(v))
	if err != nil {
		return nil
	}
	return j
}

// jsonable turns YAML's map[any]any into map[string]any, recursively.
func jsonable(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = jsonable(e)
		}
		return x
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = jsonable(e)
		}
		return m
	case []any:
		for i, e := range x {
			x[i] = jsonable(e)
		}
		return x
	}
	return v
}

// keys returns an ordered map's keys, oldest first.
func keys[V any](m *orderedmap.Map[string, V]) []string {
	if m == nil {
		return nil
	}
	var out []string
	for k := range m.KeysFromOldest() {
		out = append(out, k)
	}
	return out
}
