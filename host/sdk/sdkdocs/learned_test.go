package sdkdocs

import (
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/sdk/learned"
)

// TestLearnedResults: a function whose result type is declared as nothing
// gets the type learned from recorded calls in its signature, the
// definitions, get_function_docs and search_docs, marked as learned; a
// declared outputSchema wins over a learned type.
func TestLearnedResults(t *testing.T) {
	declared := &catalog.Schema{Type: []string{"object"}, Properties: []*catalog.Property{{Name: "ok", Schema: &catalog.Schema{Type: []string{"boolean"}}}}}
	cat := &catalog.Catalog{APIs: []*catalog.API{{Name: "py", Kind: catalog.MCP, Functions: []*catalog.Function{
		{Name: "raw", Kind: catalog.MCP, Tool: "raw", Description: "Writes a raw response"},
		{Name: "weather", Kind: catalog.MCP, Tool: "weather", Description: "The weather", OutputSchema: declared},
		{Name: "env", Kind: catalog.MCP, Tool: "env", Description: "The environment"},
		{Name: "echo", Kind: catalog.MCP, Tool: "echo", Description: "Echoes"},
	}}}}
	raw := learned.NewLearner()
	for _, v := range []string{`{"v": [], "n": 1}`, `{"v": [[]]}`} {
		if err := raw.AddJSON([]byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	set := learned.Set{
		"sdk.py.raw":     {Schema: raw.Schema(), Calls: raw.Samples()},
		"sdk.py.weather": {Schema: &catalog.Schema{Type: []string{"string"}}, Calls: 3},
		"sdk.py.env":     {Schema: &catalog.Schema{Type: []string{"string"}}, Calls: 1, TextJSON: learned.Learn([][]byte{[]byte(`{"HOME": "/root"}`)})},
	}
	plain := New(cat)
	d := plain.WithLearned(set)

	for _, tc := range []struct{ name, want string }{
		{"raw", "sdk.py.raw(args: {[string]: any}?): ({ v: {{any}}, n: number? }, SdkResponse)"},
		{"weather", "sdk.py.weather(args: {[string]: any}?): ({ ok: boolean? }, SdkResponse)"},
		{"env", "sdk.py.env(args: {[string]: any}?): (string, SdkResponse)"},
		{"echo", "sdk.py.echo(args: {[string]: any}?): (any, SdkResponse)"},
	} {
		if got, err := d.Signature(tc.name); err != nil || got != tc.want {
			t.Errorf("%s: got %s (%v), want %s", tc.name, got, err, tc.want)
		}
	}
	if got, _ := plain.Signature("raw"); !strings.Contains(got, "(any, SdkResponse)") {
		t.Errorf("without learned types: %s", got)
	}

	defs := d.Definitions()
	for _, want := range []string{
		"\t\t-- result type learned from 2 recorded calls, not declared\n\t\traw: (args: {[string]: any}?) -> ({ v: {{any}}, n: number? }, SdkResponse),",
		"\t\tweather: (args: {[string]: any}?) -> ({ ok: boolean? }, SdkResponse),",
		"\t\t-- result type learned from 1 recorded call, not declared\n\t\tenv:",
	} {
		if !strings.Contains(defs, want) {
			t.Errorf("definitions lack %q:\n%s", want, defs)
		}
	}
	if strings.Count(defs, "learned") != 2 {
		t.Errorf("want 2 learned notes:\n%s", defs)
	}

	docs, err := d.FunctionDocs("raw")
	if err != nil || !strings.Contains(docs, "Returns (learned from 2 recorded calls, not declared by the server): { v: {{any}}, n: number? }") {
		t.Errorf("raw's docs (%v):\n%s", err, docs)
	}
	docs, _ = d.FunctionDocs("env")
	if !strings.Contains(docs, "json.decode(result) gives (learned): { HOME: string }") {
		t.Errorf("env's docs:\n%s", docs)
	}
	docs, _ = d.FunctionDocs("weather")
	if strings.Contains(docs, "learned") {
		t.Errorf("a declared outputSchema is marked learned:\n%s", docs)
	}

	page, err := d.SearchPage("raw response", PageRequest{})
	if err != nil || !strings.Contains(page.Text, "sdk.py.raw(args: {[string]: any}?): ({ v: {{any}}, n: number? }, SdkResponse) -- Writes a raw response (result type learned from 2 recorded calls)") {
		t.Errorf("search_docs (%v):\n%s", err, page.Text)
	}
}

// TestLearnedDefinitionsParse: learned types of awkward results (keys that
// are Luau keywords or hold '-', '.', '$', '@'; unions with nil; nested
// and empty arrays; maps; objects in arrays of unions) render as
// definitions the real Luau parser takes.
func TestLearnedDefinitionsParse(t *testing.T) {
	results := [][]string{
		{`{"end": 1, "function": "x", "a-b": true, "a.b": null, "$ref": [], "@id": {"x": [[1], "y"]}}`},
		{`[1, "x", null]`, `[{"a": [{}]}]`, `null`},
		{`{"1": 1, "a b": 2}`},
		{`"text"`, `{"k": [[[[[[[[[[[1]]]]]]]]]]]}`},
		{`{"v": [[]]}`, `{"v": [[null]], "w": {"x": {"y": {"z": "q"}}}}`},
	}
	api := &catalog.API{Name: "m", Kind: catalog.MCP}
	set := learned.Set{}
	for i, values := range results {
		name := "tool" + strings.Repeat("x", i)
		api.Functions = append(api.Functions, &catalog.Function{Name: name, Kind: catalog.MCP, Tool: name})
		var raw [][]byte
		for _, v := range values {
			raw = append(raw, []byte(v))
		}
		set["sdk.m."+name] = learned.Result{Schema: learned.Learn(raw), Calls: len(values)}
	}
	defs := New(&catalog.Catalog{APIs: []*catalog.API{api}}).WithLearned(set).Definitions()
	if strings.Count(defs, "-- result type learned from") != len(results) {
		t.Errorf("want %d learned types:\n%s", len(results), defs)
	}
	checkLuauSyntax(t, asLuau(defs))
}
