package sdkdocs

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/host/sdk"
	"github.com/toolscript/toolscript/host/sdk/openapi/openapitest"
	"github.com/toolscript/toolscript/internal/testruntime"
)

// petstore loads host/sdk/openapi's petstore fixture the way serve does: through
// an sdk client, with a frozen parameter.
func petstore(t testing.TB, frozen map[string]any) *Docs {
	t.Helper()
	return clientDocs(t, frozen, openapitest.Load(t, "petstore", "../openapi/testdata/petstore.yaml"))
}

// clientDocs are the docs of apis as an sdk client with frozen parameters
// has them.
func clientDocs(t testing.TB, frozen map[string]any, apis ...*catalog.API) *Docs {
	t.Helper()
	c, err := sdk.New(&catalog.Catalog{APIs: apis}, sdk.Config{Frozen: frozen})
	if err != nil {
		t.Fatal(err)
	}
	return New(c.Catalog())
}

func TestSignatures(t *testing.T) {
	d := petstore(t, nil)
	for _, tc := range []struct{ name, want string }{
		{"list_pets", `sdk.list_pets(params: { ["X-Request-Id"]: string?, limit: number?, tags: {string}?, filter: { status: Status? }? }?): ({Pet}, SdkResponse)`},
		{"create_pet", `sdk.create_pet(params: { ["X-Request-Id"]: string? }?, body: NewPet): (nil, SdkResponse)`},
		{"get_pet", `sdk.get_pet(params: { petId: number, ["X-Request-Id"]: string? }): (Pet, SdkResponse)`},
		{"sdk.delete_pets_pet_id", `sdk.delete_pets_pet_id(params: { petId: number }): (nil, SdkResponse)`},
		{"petstore.get_tree", `sdk.get_tree(): (Node, SdkResponse)`},
	} {
		got, err := d.Signature(tc.name)
		if err != nil || got != tc.want {
			t.Errorf("%s:\n got %s (%v)\nwant %s", tc.name, got, err, tc.want)
		}
	}
	if _, err := d.Signature("get_pets"); err == nil || !strings.Contains(err.Error(), `did you mean "get_pet"`) {
		t.Errorf("unknown function: %v", err)
	}
}

func TestFunctionDocs(t *testing.T) {
	d := petstore(t, nil)
	doc, err := d.FunctionDocs("get_pet")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"GET /pets/{petId} (API petstore)",
		"- petId: number, required, in path, format int64",
		"- 200: data Pet",
		"- default: error body Error",
		"Auth: bearerAuth (bearer)",
		"type Pet = NewPet & { id: number }",
		`type NewPet = { name: string, tag: string?, status: Status?, attributes: {[string]: string}?, owner: (Person | string)? }`,
		`type Status = "available" | "pending" | "sold"`,
		"type Person = { name: string? }",
		"type Error = { message: string? }",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("missing %q in:\n%s", want, doc)
		}
	}
	tree, _ := d.FunctionDocs("get_tree")
	if !strings.Contains(tree, "type Node = { value: string?, children: {Node}? }") {
		t.Errorf("recursive type:\n%s", tree)
	}
	del, _ := d.FunctionDocs("delete_pets_pet_id")
	if !strings.Contains(del, "Auth: none") {
		t.Errorf("security: []:\n%s", del)
	}
}

func TestFrozenParamsHidden(t *testing.T) {
	d := petstore(t, map[string]any{"X-Request-Id": "fixed"})
	var all []string
	for _, api := range d.ListAPIs() {
		text, _ := d.Overview(api.Name)
		list, _ := d.FunctionList(api.Name)
		all = append(all, text, list)
		fns, _ := d.ListFunctions(api.Name, "")
		for _, f := range fns {
			doc, err := d.FunctionDocs(f.Name)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, doc)
		}
	}
	all = append(all, d.Definitions())
	for _, h := range d.Search("request id", 50) {
		all = append(all, h.Name, h.Summary)
	}
	if joined := strings.Join(all, "\n"); strings.Contains(joined, "X-Request-Id") || strings.Contains(joined, "fixed") {
		t.Error("a frozen parameter shows in the docs")
	}
}

func TestListsAndSearch(t *testing.T) {
	d := petstore(t, nil)
	apis := d.ListAPIs()
	if len(apis) != 1 || apis[0].Name != "petstore" || apis[0].Functions != 6 || apis[0].Description != "A store of pets." {
		t.Errorf("apis %+v", apis)
	}
	fns, err := d.ListFunctions("petstore", "pets")
	if err != nil || len(fns) != 2 || fns[0].Name != "sdk.list_pets" || fns[0].Summary != "List pets" {
		t.Errorf("by tag: %+v %v", fns, err)
	}
	if _, err := d.ListFunctions("petstor", ""); err == nil || !strings.Contains(err.Error(), `did you mean "petstore"`) {
		t.Errorf("unknown api: %v", err)
	}
	if _, err := d.ListFunctions("", "pet"); err == nil || !strings.Contains(err.Error(), `did you mean "pets"`) {
		t.Errorf("unknown tag: %v", err)
	}
	hits := d.Search("list pets", 0)
	if len(hits) == 0 || hits[0].Name != "sdk.list_pets" {
		t.Errorf("search: %+v", hits)
	}
	if hits := d.Search("tree", 0); len(hits) != 1 || hits[0].Name != "sdk.get_tree" {
		t.Errorf("search tree: %+v", hits)
	}
	if hits := d.Search("zebra", 0); len(hits) != 0 {
		t.Errorf("no match expected: %+v", hits)
	}
}

func TestResources(t *testing.T) {
	d := petstore(t, nil)
	for uri, want := range map[string]string{
		"sdk://petstore/overview":            "# sdk.petstore: Petstore (version 1.2)",
		"sdk://petstore/functions":           "sdk.list_pets(params",
		"sdk://petstore/functions/get_pet":   "sdk.get_pet(params: { petId: number",
		"sdk://petstore/schemas/Pet":         "type Pet = NewPet & { id: number }",
		"sdk://petstore/schemas/Node":        "type Node = { value: string?, children: {Node}? }",
		"sdk://petstore/functions/list_pets": "List pets",
	} {
		text, err := d.Resource(uri)
		if err != nil || !strings.Contains(text, want) {
			t.Errorf("%s: %v\n%s", uri, err, text)
		}
	}
	for _, bad := range []string{"sdk://nope/overview", "sdk://petstore/zzz", "http://x", "sdk://petstore/schemas/Pett"} {
		if _, err := d.Resource(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	if len(d.Resources()) != 3 {
		t.Errorf("resources %+v", d.Resources())
	}
}

// TestBuiltinsMatchTheirDocs keeps Builtins equal to the signatures the
// MCP server's docs give (host/serve/mcpserver/docs/*.md).
func TestBuiltinsMatchTheirDocs(t *testing.T) {
	files, err := filepath.Glob("../../serve/mcpserver/docs/*.md")
	if err != nil || len(files) == 0 {
		t.Fatalf("docs: %v", err)
	}
	sig := regexp.MustCompile(`(?m)^([a-z]+(?:\.[a-z]+)?)\((.*)$`)
	have := map[string]bool{}
	for _, b := range Builtins {
		have[b.Signature] = true
	}
	found := 0
	for _, f := range files {
		data, _ := os.ReadFile(f)
		block, ok := strings.CutPrefix(string(data)[strings.Index(string(data), "\n")+1:], "\n```luau\n")
		if !ok {
			continue
		}
		block = block[:strings.Index(block, "```")]
		for _, m := range sig.FindAllString(block, -1) {
			name := m[:strings.IndexByte(m, '(')]
			if name == "print" {
				continue // Luau's own
			}
			found++
			line := strings.TrimSpace(strings.SplitN(m, "--", 2)[0])
			if !have[line] {
				t.Errorf("%s: %q is not in Builtins", filepath.Base(f), line)
			}
		}
	}
	if found < 7 {
		t.Errorf("only %d signatures found in the docs", found)
	}
}

// asLuau turns a definitions file into ordinary Luau, so that the real
// Luau parser in the module can check every type in it.
func asLuau(defs string) string {
	var out []string
	open := false
	for _, line := range strings.Split(defs, "\n") {
		switch {
		case strings.HasPrefix(line, "declare function "):
			line = "local function " + strings.TrimPrefix(line, "declare function ") + " end"
		case strings.HasPrefix(line, "declare "):
			line = "local " + strings.TrimPrefix(line, "declare ")
			open = true
		case open && line == "}":
			line = "} = (nil :: any)"
			open = false
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// checkLuauSyntax parses text with the real Luau front end and fails on
// syntax errors.
func checkLuauSyntax(t *testing.T, text string) {
	t.Helper()
	rt := testruntime.New(t, luau.Config{})
	l := rt.NewLinter(luau.LintOptions{IO: true})
	defer l.Close()
	diags, err := l.Lint(context.Background(), []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(text, "\n")
	for _, d := range diags {
		if d.Rule == luau.RuleSyntax {
			ctx := ""
			if d.Line-1 < len(lines) {
				ctx = lines[d.Line-1]
				if len(ctx) > 300 {
					ctx = ctx[:300]
				}
			}
			t.Errorf("line %d: %s\n  %s", d.Line, d.Message, ctx)
		}
	}
}

func TestDefinitionsParse(t *testing.T) {
	d := petstore(t, nil)
	defs := d.Definitions()
	for _, want := range []string{
		"declare function progress(done: number, total: number?, message: string?): ()",
		"declare json: {\n\tencode: (value: any) -> string,",
		"type petstore_Pet = petstore_NewPet & { id: number }",
		// A key that is no parameter does not fit the table (the indexer to nil).
		"\t\tget_pet: (params: { petId: number, [\"X-Request-Id\"]: string?, [string]: nil }) -> (petstore_Pet, SdkResponse),",
		"declare sdk: {\n\tpetstore: {",
	} {
		if !strings.Contains(defs, want) {
			t.Errorf("missing %q in\n%s", want, defs)
		}
	}
	checkLuauSyntax(t, asLuau(defs))
	// Every function's signature parses as a Luau function type too.
	var b strings.Builder
	for i, s := range d.Signatures() {
		open := strings.IndexByte(s, '(')
		b.WriteString("local f" + strings.Repeat("x", i) + ": " + s[open:strings.LastIndex(s, "): (")] + ") -> " + s[strings.LastIndex(s, "): (")+3:] + " = nil :: any\n")
	}
	checkLuauSyntax(t, "type SdkResponse = {}\ntype Pet = {}\ntype NewPet = {}\ntype Node = {}\n"+b.String())
}

func TestMCPFunctionDocs(t *testing.T) {
	// A catalog of an MCP server renders with its schemas (section 4).
	cat := &catalog.Catalog{APIs: []*catalog.API{{Name: "files", Kind: catalog.MCP, Functions: []*catalog.Function{{
		Name: "read_file", Kind: catalog.MCP, Tool: "read-file", Description: "Reads a file",
		InputSchema: &catalog.Schema{Type: []string{"object"}, Required: []string{"path"}, Properties: []*catalog.Property{{Name: "path", Schema: &catalog.Schema{Type: []string{"string"}}}}},
	}}}}}
	if err := cat.Link(); err != nil {
		t.Fatal(err)
	}
	d := New(cat)
	// An MCP tool is only sdk.<server>.<tool> (never flat); its args are
	// required when the schema requires any.
	if s, _ := d.Signature("sdk.files.read_file"); s != "sdk.files.read_file(args: { path: string }): (any, SdkResponse)" {
		t.Errorf("mcp signature %s", s)
	}
	j, _ := json.Marshal(d.ListAPIs())
	if !strings.Contains(string(j), `"kind":"mcp"`) {
		t.Errorf("%s", j)
	}
}
