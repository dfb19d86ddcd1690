package sdkdocs

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/runtime/typecheck"
	"github.com/toolscript/toolscript/host/runtime/typecheck/typechecktest"
	"github.com/toolscript/toolscript/internal/testwait"
)

// TestHostileDefinitions: the texts a spec or an upstream server's tool
// schema gives (an API's title, an enum value, a property name) neither
// break the definitions nor write into them: the real type checker loads
// them, the value is the type the script writes, and a declaration
// hidden in a title declares nothing.
func TestHostileDefinitions(t *testing.T) {
	tests := []struct {
		name, title, value, property string
	}{
		{"plain", "Pets", "cat", "kind"},
		{"title with a declaration", "Pets\ndeclare function evil(): number", "cat", "kind"},
		{"title with a carriage return", "Pets\rdeclare function evil(): number", "cat", "kind"},
		{"html characters in an enum", "Pets", "<=&>", "kind"},
		{"html characters in a property", "Pets", "cat", "a&b<c>"},
		{"control character", "Pets", "a\x01b\x7f", "k\x1bey"},
		{"line and paragraph separators", "Pets", "a\u2028b\u2029", "k\u2028"},
		{"quotes and backslashes", "Pets", `"]\\'` + "\n", `p"\`},
		{"invalid utf-8", "Pets", "a\xffb", "k\xfe"},
		{"byte order mark", "Pets", "\ufeffa", "k"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			value, _ := json.Marshal(tc.value)
			api := &catalog.API{Name: "pets", Kind: catalog.MCP, Title: tc.title,
				Schemas: map[string]*catalog.Schema{"Pet": {Type: []string{"string"}}}, Functions: []*catalog.Function{{
					Name: "put", Kind: catalog.MCP, Tool: "put", InputSchema: &catalog.Schema{Type: []string{"object"}, Required: []string{tc.property}, Properties: []*catalog.Property{
						{Name: tc.property, Schema: &catalog.Schema{Type: []string{"string"}, Enum: []json.RawMessage{value}}},
					}},
				}}}
			cat := &catalog.Catalog{APIs: []*catalog.API{api}}
			if err := cat.Link(); err != nil {
				t.Fatal(err)
			}
			defs := New(cat).Definitions()
			checker := typechecktest.Loaded(t, typecheck.Config{CacheDir: t.TempDir()}, []byte(defs))
			// The key and the value as a script writes them: JSON's strings
			// (invalid UTF-8 replaced), each byte escaped.
			property, _ := json.Marshal(tc.property)
			call := func(value string) string {
				return "return sdk.pets.put({ [" + bytesLiteral(jsonText(t, property)) + "] = " + bytesLiteral(value) + " })\n"
			}
			ctx := testwait.Context(t)
			diags, err := checker.Check(ctx, call(jsonText(t, value)))
			if err != nil {
				t.Fatalf("%v\n%s", err, defs[strings.Index(defs, "type SdkError"):])
			}
			if len(diags) > 0 {
				t.Errorf("the value the enum gives is refused: %+v\n%s", diags, call(jsonText(t, value)))
			}
			if diags, err = checker.Check(ctx, call("other")); err != nil || len(diags) == 0 {
				t.Errorf("a value the enum does not give is accepted (%v)", err)
			}
			diags, err = checker.Check(ctx, "local n: number = evil()\nreturn n\n")
			if err != nil {
				t.Fatal(err)
			}
			if len(diags) == 0 {
				t.Errorf("the title declared a function:\n%s", defs[strings.Index(defs, "type SdkError"):])
			}
		})
	}
}

// jsonText is the string a JSON string literal holds.
func jsonText(t *testing.T, literal []byte) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(literal, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// bytesLiteral is s as a Luau string literal, each byte escaped (\ddd).
func bytesLiteral(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, "\\%03d", s[i])
	}
	b.WriteByte('"')
	return b.String()
}

// FuzzLuauString: a literal is one line of valid UTF-8 with no control
// character, and holds the text JSON gives a script for the string (each
// invalid byte U+FFFD), read back by Luau's escapes.
func FuzzLuauString(f *testing.F) {
	for _, s := range []string{"", "cat", "<=&>", "a\x01\x7f", "\u2028\u2029\ufeff", `"\`, "a\xffb", "\n\r\t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		lit := luauString(s)
		if !utf8.ValidString(lit) || strings.ContainsFunc(lit, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\u2028' || r == '\u2029' }) {
			t.Fatalf("%q: %q is not one printable line", s, lit)
		}
		j, _ := json.Marshal(s)
		var want string
		if err := json.Unmarshal(j, &want); err != nil {
			t.Fatal(err)
		}
		if got := readLuauString(t, lit); got != want {
			t.Fatalf("%q: %q reads %q, want %q", s, lit, got, want)
		}
	})
}

// readLuauString reads a literal luauString writes: quoted, with \", \\
// and \u{X} escapes.
func readLuauString(t *testing.T, lit string) string {
	t.Helper()
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		t.Fatalf("%q is not quoted", lit)
	}
	var b strings.Builder
	body := lit[1 : len(lit)-1]
	for i := 0; i < len(body); i++ {
		switch c := body[i]; {
		case c == '"':
			t.Fatalf("%q: an unescaped quote at %d", lit, i)
		case c != '\\':
			b.WriteByte(c)
		case i+1 < len(body) && (body[i+1] == '"' || body[i+1] == '\\'):
			b.WriteByte(body[i+1])
			i++
		case strings.HasPrefix(body[i:], `\u{`):
			end := strings.IndexByte(body[i:], '}')
			if end < 0 {
				t.Fatalf("%q: an unclosed \\u escape at %d", lit, i)
			}
			r, err := strconv.ParseUint(body[i+3:i+end], 16, 32)
			if err != nil {
				t.Fatalf("%q: a bad \\u escape at %d", lit, i)
			}
			b.WriteRune(rune(r))
			i += end
		default:
			t.Fatalf("%q: an escape Luau does not read at %d", lit, i)
		}
	}
	return b.String()
}

// TestDefinitionsTypeNamesAcrossAPIs: the type names of two APIs' schemas
// stay apart when an API's name and a schema's name meet another's (API
// "a" with schema "b_c", API "a_b" with schema "c"): the definitions load
// and each function answers its own type.
func TestDefinitionsTypeNamesAcrossAPIs(t *testing.T) {
	api := func(name, schema, typ, fn string) *catalog.API {
		return &catalog.API{Name: name, Kind: catalog.MCP, Schemas: map[string]*catalog.Schema{schema: {Type: []string{typ}}},
			Functions: []*catalog.Function{{Name: fn, Kind: catalog.MCP, Tool: fn, OutputSchema: &catalog.Schema{Ref: schema}}}}
	}
	cat := &catalog.Catalog{APIs: []*catalog.API{api("a", "b_c", "string", "f"), api("a_b", "c", "number", "g")}}
	if err := cat.Link(); err != nil {
		t.Fatal(err)
	}
	defs := New(cat).Definitions()
	checker := typechecktest.Loaded(t, typecheck.Config{CacheDir: t.TempDir()}, []byte(defs))
	ctx := testwait.Context(t)
	for script, want := range map[string]int{
		"local s: string = sdk.a.f()\nlocal n: number = sdk.a_b.g()\nreturn s, n\n": 0,
		"local n: number = sdk.a.f()\nreturn n\n":                                   1,
	} {
		diags, err := checker.Check(ctx, script)
		if err != nil {
			t.Fatalf("%v\n%s", err, defs[strings.Index(defs, "type SdkError"):])
		}
		if len(diags) != want {
			t.Errorf("%q: %+v, want %d diagnostics", script, diags, want)
		}
	}
}

// TestDefinitionsRecursiveSchemas: a schema that is itself without a
// table between (a $ref to itself, alone, in a union, an intersection or
// with null; two that are each other), which JSON Schema allows and Luau
// cannot resolve, is any, and the definitions load; a schema that holds
// itself inside a table keeps its type.
func TestDefinitionsRecursiveSchemas(t *testing.T) {
	str := &catalog.Schema{Type: []string{"string"}}
	ref := func(name string) *catalog.Schema { return &catalog.Schema{Ref: name} }
	object := func(props ...*catalog.Property) *catalog.Schema {
		o := &catalog.Schema{Type: []string{"object"}, Properties: props}
		for _, p := range props {
			o.Required = append(o.Required, p.Name)
		}
		return o
	}
	tests := []struct {
		api     string
		schemas map[string]*catalog.Schema
		// script uses the result of sdk.<api>.f(); want is its diagnostics.
		script string
		want   int
	}{
		{"self", map[string]*catalog.Schema{"A": ref("A")}, "local n: number = r\n", 0},
		{"pair", map[string]*catalog.Schema{"A": ref("B"), "B": ref("A")}, "local n: number = r\n", 0},
		{"in_union", map[string]*catalog.Schema{"A": {OneOf: []*catalog.Schema{ref("A"), str}}}, "local n: number = r\n", 0},
		{"with_null", map[string]*catalog.Schema{"A": {AnyOf: []*catalog.Schema{ref("A"), {Type: []string{"null"}}}}}, "local n: number = r\n", 0},
		{"in_intersection", map[string]*catalog.Schema{"A": {AllOf: []*catalog.Schema{ref("A"), object(&catalog.Property{Name: "x", Schema: str})}}}, "local n: number = r\n", 0},
		{"beside_properties", map[string]*catalog.Schema{"A": {Type: []string{"object"}, AllOf: []*catalog.Schema{ref("A")}, Properties: []*catalog.Property{{Name: "x", Schema: str}}}}, "local n: number = r\n", 0},
		{"in_a_table", map[string]*catalog.Schema{"A": object(&catalog.Property{Name: "next", Schema: ref("A")}, &catalog.Property{Name: "x", Schema: str})}, "local n: number = r.next.x\n", 1},
		{"in_an_array", map[string]*catalog.Schema{"A": {Type: []string{"array"}, Items: ref("A")}}, "local n: number = r\n", 1},
	}
	cat := &catalog.Catalog{}
	for _, tc := range tests {
		cat.APIs = append(cat.APIs, &catalog.API{Name: tc.api, Kind: catalog.MCP, Schemas: tc.schemas,
			Functions: []*catalog.Function{{Name: "f", Kind: catalog.MCP, Tool: "f", OutputSchema: ref("A")}}})
	}
	if err := cat.Link(); err != nil {
		t.Fatal(err)
	}
	defs := New(cat).Definitions()
	checker := typechecktest.Loaded(t, typecheck.Config{CacheDir: t.TempDir()}, []byte(defs))
	ctx := testwait.Context(t)
	for _, tc := range tests {
		t.Run(tc.api, func(t *testing.T) {
			script := "local r = sdk." + tc.api + ".f()\n" + tc.script + "return n\n"
			diags, err := checker.Check(ctx, script)
			if err != nil {
				t.Fatalf("%v\n%s", err, defs[strings.Index(defs, "type SdkError"):])
			}
			if len(diags) != tc.want {
				t.Errorf("%q: %+v, want %d diagnostics", script, diags, tc.want)
			}
		})
	}
}
