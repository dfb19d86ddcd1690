package upstream

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"slices"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolscript/toolscript/host/contract/catalog"
)

// maxSchemaDepth bounds how deep a tool's schema is converted for docs;
// deeper parts are "any".
const maxSchemaDepth = 32

// toolset is a server's tools as listed at one moment: replaced whole when
// they are re-listed, so a call sees one consistent list.
type toolset struct {
	api *catalog.API
	// byTool is by the tool's own name (catalog.Function.Tool).
	byTool map[string]*tool
	// key identifies the list: equal keys, equal tools.
	key [sha256.Size]byte
}

// tool is one tool with what checking its arguments needs.
type tool struct {
	name   string
	input  json.RawMessage
	once   sync.Once
	schema *jsonschema.Schema // nil when the schema checks nothing or does not compile
	// props are the argument names the schema declares; open is set when
	// it allows others too (additionalProperties true or a schema).
	props []string
	open  bool
}

// newToolset converts a tools/list result into the server's catalog API.
func newToolset(server string, tools []mcp.Tool) *toolset {
	ts := &toolset{byTool: map[string]*tool{}}
	api := &catalog.API{Name: server, Kind: catalog.MCP, Title: server, Schemas: map[string]*catalog.Schema{}}
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = Identifier(t.Name)
	}
	catalog.Uniquify(names)
	h := sha256.New()
	for i, t := range tools {
		raw, _ := json.Marshal(t)
		h.Write(raw)
		var schemas struct {
			Input  json.RawMessage `json:"inputSchema"`
			Output json.RawMessage `json:"outputSchema"`
		}
		_ = json.Unmarshal(raw, &schemas)
		f := &catalog.Function{
			Name: names[i], Kind: catalog.MCP, Tool: t.Name,
			Summary: firstLine(t.Description), Description: t.Description,
		}
		if t.Title != "" {
			f.Summary = t.Title
		} else if t.Annotations.Title != "" {
			f.Summary = t.Annotations.Title
		}
		f.Hints = hints(t.Annotations)
		c := converter{api: api, prefix: names[i]}
		if len(schemas.Input) > 0 && string(schemas.Input) != "null" {
			f.InputSchema = c.schema(schemas.Input, 0)
		}
		if len(schemas.Output) > 0 && string(schemas.Output) != "null" {
			f.OutputSchema = c.schema(schemas.Output, 0)
		}
		api.Functions = append(api.Functions, f)
		tl := &tool{name: t.Name, input: schemas.Input}
		ts.byTool[t.Name] = tl
	}
	if len(api.Schemas) == 0 {
		api.Schemas = nil
	}
	copy(ts.key[:], h.Sum(nil))
	ts.api = api
	return ts
}

// hints keeps a tool's behaviour annotations, nil when it gave none.
func hints(a mcp.ToolAnnotation) *catalog.Hints {
	if a.ReadOnlyHint == nil && a.DestructiveHint == nil && a.IdempotentHint == nil && a.OpenWorldHint == nil {
		return nil
	}
	return &catalog.Hints{ReadOnly: a.ReadOnlyHint, Destructive: a.DestructiveHint, Idempotent: a.IdempotentHint, OpenWorld: a.OpenWorldHint}
}

// Identifier maps an MCP tool name to a Luau identifier: characters
// outside identifiers become "_", a leading digit gets "_" before it and a
// keyword "_" after it ("read-file" → read_file, "2fa" → _2fa).
func Identifier(name string) string {
	var b strings.Builder
	for _, r := range name {
		if r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	s := b.String()
	switch {
	case s == "":
		return "_"
	case s[0] >= '0' && s[0] <= '9':
		s = "_" + s
	}
	if !catalog.IsIdentifier(s) {
		s += "_" // a keyword
	}
	return s
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\n"); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	return s
}

// converter turns a tool's JSON Schema into catalog schemas (for docs and
// lint); its $defs become named schemas of the API, prefixed with the
// tool's name so that tools never share a name.
type converter struct {
	api    *catalog.API
	prefix string
	defs   map[string]json.RawMessage
}

func (c *converter) schema(raw json.RawMessage, depth int) *catalog.Schema {
	if depth == 0 {
		c.readDefs(raw)
	}
	if depth > maxSchemaDepth {
		return &catalog.Schema{}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return &catalog.Schema{} // true, false or garbage: any
	}
	if ref := str(m["$ref"]); ref != "" {
		return c.ref(ref, depth)
	}
	s := &catalog.Schema{}
	valueKeywords(s, m)
	c.objectKeywords(s, m, depth)
	if items := bytes.TrimSpace(m["items"]); len(items) > 0 && items[0] == '{' {
		s.Items = c.schema(items, depth+1)
	}
	list := func(raw json.RawMessage) []*catalog.Schema {
		var parts []json.RawMessage
		_ = json.Unmarshal(raw, &parts)
		var out []*catalog.Schema
		for _, p := range parts {
			out = append(out, c.schema(p, depth+1))
		}
		return out
	}
	s.AllOf, s.OneOf, s.AnyOf = list(m["allOf"]), list(m["oneOf"]), list(m["anyOf"])
	return s
}

// readDefs keeps the top schema's $defs (or definitions).
func (c *converter) readDefs(raw json.RawMessage) {
	var top struct {
		Defs        map[string]json.RawMessage `json:"$defs"`
		Definitions map[string]json.RawMessage `json:"definitions"`
	}
	_ = json.Unmarshal(raw, &top)
	c.defs = top.Defs
	if c.defs == nil {
		c.defs = top.Definitions
	}
}

// ref is the schema of a $ref: a named schema of the API for one of the
// top schema's $defs, any schema otherwise.
func (c *converter) ref(ref string, depth int) *catalog.Schema {
	for _, p := range []string{"#/$defs/", "#/definitions/"} {
		if name, ok := strings.CutPrefix(ref, p); ok && c.defs[name] != nil {
			full := c.prefix + "." + name
			if _, done := c.api.Schemas[full]; !done {
				c.api.Schemas[full] = &catalog.Schema{} // breaks cycles
				c.api.Schemas[full] = c.schema(c.defs[name], depth+1)
			}
			return &catalog.Schema{Ref: full}
		}
	}
	return &catalog.Schema{}
}

// valueKeywords reads what m says of a value itself: its type (with
// null when nullable), format, texts, enum, const, flags and bounds.
func valueKeywords(s *catalog.Schema, m map[string]json.RawMessage) {
	switch t := m["type"]; {
	case len(t) > 0 && t[0] == '"':
		s.Type = []string{str(t)}
	case len(t) > 0 && t[0] == '[':
		_ = json.Unmarshal(t, &s.Type)
	}
	s.Format, s.Title, s.Description, s.Pattern = str(m["format"]), str(m["title"]), str(m["description"]), str(m["pattern"])
	_ = json.Unmarshal(m["enum"], &s.Enum)
	s.Const, s.Default = m["const"], m["default"]
	_ = json.Unmarshal(m["deprecated"], &s.Deprecated)
	_ = json.Unmarshal(m["readOnly"], &s.ReadOnly)
	_ = json.Unmarshal(m["writeOnly"], &s.WriteOnly)
	_ = json.Unmarshal(m["required"], &s.Required)
	for _, k := range []struct {
		key string
		dst **float64
	}{{"minimum", &s.Minimum}, {"maximum", &s.Maximum}} {
		_ = json.Unmarshal(m[k.key], k.dst)
	}
	for _, k := range []struct {
		key string
		dst **int64
	}{{"minLength", &s.MinLength}, {"maxLength", &s.MaxLength}, {"minItems", &s.MinItems}, {"maxItems", &s.MaxItems}} {
		_ = json.Unmarshal(m[k.key], k.dst)
	}
	if nullable(m) && len(s.Type) > 0 && !s.Has("null") {
		s.Type = append(s.Type, "null")
	}
}

// objectKeywords reads m's properties (a nullable one is optional) and
// additionalProperties.
func (c *converter) objectKeywords(s *catalog.Schema, m map[string]json.RawMessage, depth int) {
	if props := m["properties"]; len(props) > 0 {
		var all map[string]json.RawMessage
		_ = json.Unmarshal(props, &all)
		for _, name := range objectKeys(props) {
			s.Properties = append(s.Properties, &catalog.Property{Name: name, Schema: c.schema(all[name], depth+1)})
			if nullable(rawObject(all[name])) {
				s.Required = slices.DeleteFunc(s.Required, func(r string) bool { return r == name })
			}
		}
	}
	switch ap := bytes.TrimSpace(m["additionalProperties"]); {
	case string(ap) == "false":
		s.NoAdditional = true
	case len(ap) > 0 && ap[0] == '{':
		s.AdditionalProperties = c.schema(ap, depth+1)
	}
}

// nullable reports whether a schema says OpenAPI's `nullable: true`, which
// servers generated from OpenAPI specs write in JSON Schema: the value may
// be null or left out, so the property is optional.
func nullable(m map[string]json.RawMessage) bool {
	return string(bytes.TrimSpace(m["nullable"])) == "true"
}

func rawObject(raw json.RawMessage) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(raw, &m)
	return m
}

func str(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// objectKeys returns the keys of a JSON object in document order (the
// order a tool lists its arguments in is the order docs show).
func objectKeys(raw json.RawMessage) []string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return keys
		}
		k, _ := t.(string)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return keys
		}
		keys = append(keys, k)
	}
	return keys
}
