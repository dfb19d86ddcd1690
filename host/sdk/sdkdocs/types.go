package sdkdocs

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/sdk/learned"
)

// maxInline bounds how deep inline object types are written out; deeper
// ones are {[string]: any}. Named schemas are always written by name.
const maxInline = 8

// luauReserved are names a type alias cannot take.
var luauReserved = map[string]bool{
	"any": true, "nil": true, "number": true, "string": true, "boolean": true, "thread": true,
	"buffer": true, "vector": true, "userdata": true, "unknown": true, "never": true, "table": true,
	"typeof": true, "true": true, "false": true, "File": true, "SdkResponse": true, "SdkError": true,
}

// typeNames gives every named schema of an API a Luau type name: the
// schema's name with other characters made "_", never a built-in type,
// none of taken (which it adds them to); prefix is put first (for a
// definitions file holding several APIs, which share taken: API "a"'s
// schema "b_c" and API "a_b"'s "c" would both be a_b_c, and a type
// defined twice leaves the definitions unloadable).
func typeNames(api *catalog.API, prefix string, taken map[string]bool) map[string]string {
	names := slices.Sorted(maps.Keys(api.Schemas))
	out := make(map[string]string, len(names))
	for _, n := range names {
		var b strings.Builder
		for i, r := range n {
			switch {
			case r == '_' || r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'):
				b.WriteRune(r)
			case r >= '0' && r <= '9':
				if i == 0 {
					b.WriteString("T")
				}
				b.WriteRune(r)
			default:
				b.WriteByte('_')
			}
		}
		base := prefix + b.String()
		if base == "" || luauReserved[base] || !catalog.IsIdentifier(base) {
			base += "_"
		}
		name := base
		for i := 2; taken[name]; i++ {
			name = base + "_" + strconv.Itoa(i)
		}
		taken[name] = true
		out[n] = name
	}
	return out
}

// typer renders schemas of one API as Luau types.
type typer struct {
	api   *catalog.API
	names map[string]string
	// used collects the named schemas a rendering referred to, in order.
	used  []string
	seen  map[string]bool
	write bool // a request: readOnly properties are left out
	// learned are the result types learned from recorded calls.
	learned learned.Set
	// closedArgs renders a call's table of parameters (an MCP tool's
	// arguments when its schema says additionalProperties: false) closed,
	// so that a key that is none of them is a type error: the
	// definitions' (the sdk refuses such a call), not the docs'.
	closedArgs bool
}

// learnedResult is what was learned of f's result, when a type was.
func (t *typer) learnedResult(f *catalog.Function) (learned.Result, bool) {
	r, ok := t.learned["sdk."+t.api.Name+"."+f.Name]
	return r, ok && r.Schema != nil
}

func newTyper(api *catalog.API, names map[string]string) *typer {
	return &typer{api: api, names: names, seen: map[string]bool{}}
}

// typ renders s; optional adds "?" (for a value that may be absent).
func (t *typer) typ(s *catalog.Schema, depth int) string {
	if s == nil {
		return "any"
	}
	if s.Ref != "" {
		return t.named(s.Ref)
	}
	alts, nullable := t.alternatives(s, depth)
	if len(alts) == 0 {
		if nullable && len(s.Type) == 1 {
			return "nil"
		}
		return "any"
	}
	if len(alts) > 1 {
		for i, a := range alts {
			alts[i] = paren(a) // Luau needs (A & B) | C
		}
	}
	out := strings.Join(alts, " | ")
	if nullable && out != "any" {
		out = paren(out) + "?"
	}
	return out
}

// named renders a reference to the named schema ref, and notes its use.
func (t *typer) named(ref string) string {
	name, ok := t.names[ref]
	if !ok {
		return "any"
	}
	if !t.seen[ref] {
		t.seen[ref] = true
		t.used = append(t.used, ref)
	}
	return name
}

// alternatives are the distinct types s takes, and whether it takes nil
// too.
func (t *typer) alternatives(s *catalog.Schema, depth int) (alts []string, nullable bool) {
	nullable = s.Has("null") && len(s.Type) > 0
	add := func(x string) {
		if !slices.Contains(alts, x) {
			alts = append(alts, x)
		}
	}
	switch {
	case len(s.Enum) > 0:
		for _, e := range s.Enum {
			add(literal(e))
		}
	case len(s.Const) > 0:
		add(literal(s.Const))
	case len(s.AllOf) > 0 && len(s.Properties) == 0:
		add(t.intersection(s.AllOf, depth))
	case len(s.OneOf)+len(s.AnyOf) > 0:
		for _, sub := range append(append([]*catalog.Schema(nil), s.OneOf...), s.AnyOf...) {
			if sub.Ref == "" && len(sub.Type) == 1 && sub.Type[0] == "null" {
				nullable = true
				continue
			}
			add(t.typ(sub, depth+1))
		}
	default:
		for _, ty := range t.plain(s, depth) {
			add(ty)
		}
	}
	return alts, nullable
}

// intersection renders allOf's parts joined with &.
func (t *typer) intersection(all []*catalog.Schema, depth int) string {
	var parts []string
	for _, sub := range all {
		parts = append(parts, paren(t.typ(sub, depth+1)))
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return strings.Join(parts, " & ")
}

// literal renders an enum value: string literals as Luau singletons,
// booleans as true/false, numbers as number, null as nil.
func literal(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return "any"
	}
	switch x := v.(type) {
	case string:
		return luauString(x)
	case bool:
		if x {
			return "true"
		}
		return "false"
	case float64:
		return "number"
	case nil:
		return "nil"
	}
	return "any"
}

// object renders an object schema as a table type.
func (t *typer) object(s *catalog.Schema, depth int) string {
	if depth > maxInline {
		return "{[string]: any}"
	}
	var fields []string
	required := map[string]bool{}
	for _, r := range s.Required {
		required[r] = true
	}
	for _, p := range s.Properties {
		ps := p.Schema
		if t.write {
			if r := t.api.Resolve(ps); r != nil && r.ReadOnly {
				continue
			}
		}
		ty := t.typ(ps, depth+1)
		if !required[p.Name] && !strings.HasSuffix(ty, "?") && ty != "any" && ty != "nil" {
			ty = paren(ty) + "?"
		}
		fields = append(fields, key(p.Name)+": "+ty)
	}
	switch {
	case s.AdditionalProperties != nil:
		fields = append(fields, "[string]: "+t.typ(s.AdditionalProperties, depth+1))
	case len(s.Properties) == 0 && !s.NoAdditional:
		fields = append(fields, "[string]: any")
	}
	if len(fields) == 0 {
		return "{}"
	}
	out := "{ " + strings.Join(fields, ", ") + " }"
	if len(fields) == 1 && strings.HasPrefix(fields[0], "[string]: ") {
		out = "{" + fields[0] + "}" // a map: {[string]: T}
	}
	if len(s.AllOf) > 0 && len(s.Properties) > 0 {
		var parts []string
		for _, sub := range s.AllOf {
			parts = append(parts, paren(t.typ(sub, depth+1)))
		}
		return strings.Join(append(parts, out), " & ")
	}
	return out
}

// key renders a table type's property name: bare when an identifier,
// quoted otherwise.
func key(name string) string {
	if catalog.IsIdentifier(name) {
		return name
	}
	return "[" + luauString(name) + "]"
}

// luauString is s as a Luau string literal holding the text a script
// gets for it from JSON (each invalid UTF-8 byte U+FFFD): the quote and
// the backslash escaped, control characters and other unprintable ones
// written as \u{...}. JSON's own escapes (\u003c) are no Luau: a spec's
// or an upstream server's enum value or property name written with them
// would leave the definitions unloadable, and every check unchecked.
func luauString(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s { // an invalid byte is utf8.RuneError
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x80 && r >= 0x20 && r != 0x7f, r >= 0x80 && unicode.IsPrint(r):
			b.WriteRune(r)
		default:
			fmt.Fprintf(&b, "\\u{%X}", r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// paren wraps a union or intersection so that "?" or "&" binds to all of it.
func paren(s string) string {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '{', '(':
			depth++
		case '}', ')':
			depth--
		case '|', '&':
			if depth == 0 {
				return "(" + s + ")"
			}
		case '"':
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' {
					i++
				}
			}
		}
	}
	if strings.HasSuffix(s, "?") && depth == 0 {
		return "(" + s + ")"
	}
	return s
}

// plain is the Luau types of a schema's own types (or of what its
// properties and items imply when it names none), without its enum,
// const or combinators.
func (t *typer) plain(s *catalog.Schema, depth int) []string {
	types := s.Type
	if len(types) == 0 {
		switch {
		case len(s.Properties) > 0 || s.AdditionalProperties != nil:
			types = []string{"object"}
		case s.Items != nil:
			types = []string{"array"}
		}
	}
	var out []string
	for _, ty := range types {
		switch ty {
		case "string":
			out = append(out, "string")
		case "integer", "number":
			out = append(out, "number")
		case "boolean":
			out = append(out, "boolean")
		case "array":
			out = append(out, "{"+t.typ(s.Items, depth+1)+"}")
		case "object":
			out = append(out, t.object(s, depth))
		}
	}
	return out
}

// selfRecursive are the named schemas of api that are themselves with no
// table in between (a $ref to itself alone, in a union or an
// intersection; two that are each other): JSON Schema allows them, and a
// Luau type alias cannot be one ("Type contains a self-recursive
// construct"), which would leave the whole definitions unloadable. They
// are the schemas in a cycle of unguardedRefs (Tarjan's strongly
// connected components).
func selfRecursive(api *catalog.API) map[string]bool {
	out := map[string]bool{}
	index, low, onStack := map[string]int{}, map[string]int{}, map[string]bool{}
	var stack []string
	var visit func(n string)
	visit = func(n string) {
		index[n], low[n] = len(index), len(index)
		stack = append(stack, n)
		onStack[n] = true
		self := false
		for _, m := range unguardedRefs(api.Schemas[n], nil) {
			if _, ok := api.Schemas[m]; !ok {
				continue
			}
			self = self || m == n
			if _, seen := index[m]; !seen {
				visit(m)
				low[n] = min(low[n], low[m])
			} else if onStack[m] {
				low[n] = min(low[n], index[m])
			}
		}
		if low[n] != index[n] {
			return
		}
		i := len(stack) - 1
		for stack[i] != n {
			i--
		}
		component := stack[i:]
		stack = stack[:i]
		for _, m := range component {
			onStack[m] = false
			if len(component) > 1 || self {
				out[m] = true
			}
		}
	}
	for _, n := range slices.Sorted(maps.Keys(api.Schemas)) {
		if _, seen := index[n]; !seen {
			visit(n)
		}
	}
	return out
}

// unguardedRefs appends the named schemas s renders as (typ) other than
// inside a table's braces: itself a $ref, or a part of its union or
// intersection.
func unguardedRefs(s *catalog.Schema, out []string) []string {
	if s == nil {
		return out
	}
	if s.Ref != "" {
		return append(out, s.Ref)
	}
	var parts []*catalog.Schema
	switch {
	case len(s.Enum) > 0 || len(s.Const) > 0:
	case len(s.AllOf) > 0 && len(s.Properties) == 0:
		parts = s.AllOf
	case len(s.OneOf)+len(s.AnyOf) > 0:
		parts = append(append(parts, s.OneOf...), s.AnyOf...)
	case len(s.AllOf) > 0 && s.Has("object"):
		parts = s.AllOf // object: the parts beside the table's braces
	}
	for _, p := range parts {
		out = unguardedRefs(p, out)
	}
	return out
}
