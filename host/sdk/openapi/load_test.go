package openapi

import (
	"context"
	"encoding/json"
	"github.com/pb33f/go-yaml"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/contract/catalog"
)

func load(t *testing.T, spec string) *catalog.API {
	t.Helper()
	api, err := Load(context.Background(), Source{Name: "t", Spec: spec, Dir: "testdata"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return api
}

// loadText writes spec as spec.yaml in dir (a new temporary directory
// when dir is "") and loads it from there as the API "t".
func loadText(t *testing.T, dir, spec string, opts Options) *catalog.API {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.WriteFile(filepath.Join(dir, "spec.yaml"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	api, err := Load(context.Background(), Source{Name: "t", Spec: "spec.yaml", Dir: dir}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return api
}

// spec30 is an OpenAPI 3.0 document of paths (YAML as under "paths:",
// and what follows it), with server as its one server unless that is "".
func spec30(server, paths string) string {
	head := "openapi: 3.0.0\ninfo: { title: t, version: \"1\" }\n"
	if server != "" {
		head += "servers: [{ url: \"" + server + "\" }]\n"
	}
	return head + "paths:\n" + paths
}

// listThings starts the paths of a spec with GET /things (listThings),
// its responses to follow.
const listThings = `  /things:
    get:
      operationId: listThings
      responses:
`

func mustFunc(t *testing.T, api *catalog.API, name string) *catalog.Function {
	t.Helper()
	f := api.Function(name)
	if f == nil {
		var names []string
		for _, f := range api.Functions {
			names = append(names, f.Name)
		}
		t.Fatalf("no function %s (have %v)", name, names)
	}
	return f
}

func param(f *catalog.Function, name string) *catalog.Param {
	for _, p := range f.Params {
		if p.Name == name {
			return p
		}
	}
	return nil
}

func TestOpenAPI30(t *testing.T) {
	api := load(t, "petstore.yaml")
	if api.Title != "Petstore" || api.Version != "1.2" || api.Description != "A store of pets." {
		t.Errorf("info: %q %q %q", api.Title, api.Version, api.Description)
	}
	if api.BaseURL != "https://eu.pets.example/v1" {
		t.Errorf("base URL %q (server variables take their defaults)", api.BaseURL)
	}
	var names []string
	for _, f := range api.Functions {
		names = append(names, f.Name)
	}
	want := "list_pets create_pet get_pet delete_pets_pet_id list_pets_2 get_tree"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("names %q, want %q (broken is skipped: its {id} has no parameter)", got, want)
	}
	if !strings.Contains(strings.Join(api.Warnings, "\n"), "GET /broken/{id}: skipped") {
		t.Errorf("warnings %q", api.Warnings)
	}

	list := mustFunc(t, api, "list_pets")
	if p := param(list, "X-Request-Id"); p == nil || p.In != "header" || p.Schema.Format != "uuid" {
		t.Errorf("path-level header parameter: %+v", p)
	}
	if p := param(list, "tags"); p.Style != "pipeDelimited" || p.Explode {
		t.Errorf("tags style %s explode %v", p.Style, p.Explode)
	}
	if p := param(list, "limit"); p.Style != "form" || !p.Explode || p.Required || p.Schema.Format != "int32" {
		t.Errorf("limit %+v", p)
	}
	if p := param(list, "filter"); p.Style != "deepObject" || p.Schema.Property("status").Ref != "Status" {
		t.Errorf("filter %+v", p)
	}
	if len(list.Security) != 1 || list.Security[0][0] != "bearerAuth" || list.NoAuth {
		t.Errorf("inherited security %v %v", list.Security, list.NoAuth)
	}
	get := mustFunc(t, api, "get_pet")
	if p := param(get, "X-Request-Id"); p.Schema.Format != "" {
		t.Error("the operation's parameter must override the path item's")
	}
	if p := param(get, "petId"); !p.Required || p.Style != "simple" {
		t.Errorf("petId %+v", p)
	}
	if len(get.Responses) != 2 || get.Responses[0].Status != "200" || get.Responses[1].Status != "default" ||
		get.Responses[0].Content[0].Schema.Ref != "Pet" {
		t.Errorf("responses %+v", get.Responses)
	}
	if del := mustFunc(t, api, "delete_pets_pet_id"); !del.NoAuth {
		t.Error("security: [] must mean no auth")
	}
	create := mustFunc(t, api, "create_pet")
	if create.Body == nil || !create.Body.Required || create.Body.Content[0].Type != "application/json" || create.Body.Content[0].Schema.Ref != "NewPet" {
		t.Errorf("body %+v", create.Body)
	}

	newPet := api.Schemas["NewPet"]
	if tag := newPet.Property("tag"); !tag.Has("null") || !tag.Has("string") {
		t.Errorf("nullable tag: %v", tag.Type)
	}
	if attrs := newPet.Property("attributes"); attrs.AdditionalProperties == nil || attrs.AdditionalProperties.Type[0] != "string" {
		t.Errorf("additionalProperties %+v", attrs)
	}
	if owner := newPet.Property("owner"); len(owner.OneOf) != 2 || owner.OneOf[0].Ref != "Person" {
		t.Errorf("oneOf %+v", owner)
	}
	if !api.Schemas["Person"].NoAdditional {
		t.Error("additionalProperties: false")
	}
	if pet := api.Schemas["Pet"]; len(pet.AllOf) != 2 || pet.AllOf[0].Ref != "NewPet" {
		t.Errorf("allOf %+v", pet)
	}
	if st := api.Schemas["Status"]; len(st.Enum) != 3 || string(st.Enum[0]) != `"available"` {
		t.Errorf("enum %s", st.Enum)
	}
	node := api.Schemas["Node"]
	if c := node.Property("children"); c == nil || c.Items.Ref != "Node" {
		t.Errorf("recursive schema: %+v", c)
	}
	// The catalog serialises (no pointer cycles).
	if _, err := json.Marshal(api); err != nil {
		t.Fatal(err)
	}
}

func TestSwagger2(t *testing.T) {
	api := load(t, "swagger2.yaml")
	if api.BaseURL != "https://legacy.example/api" {
		t.Errorf("base URL %q", api.BaseURL)
	}
	if s := api.SecuritySchemes["basic"]; s.Type != "http" || s.Scheme != "basic" {
		t.Errorf("basic scheme %+v", s)
	}
	list := mustFunc(t, api, "list_items")
	if p := param(list, "ids"); p.Style != "form" || !p.Explode || p.Schema.Items.Type[0] != "integer" {
		t.Errorf("multi: %+v", p)
	}
	if p := param(list, "names"); p.Style != "spaceDelimited" {
		t.Errorf("ssv: %+v", p)
	}
	if p := param(list, "kind"); len(p.Schema.Enum) != 2 || string(p.Schema.Default) != `"a"` {
		t.Errorf("enum/default: %+v", p.Schema)
	}
	if list.Responses[0].Content[0].Schema.Items.Ref != "Item" {
		t.Errorf("response schema %+v", list.Responses[0].Content[0].Schema)
	}
	create := mustFunc(t, api, "create_item")
	if create.Body == nil || !create.Body.Required || create.Body.Content[0].Schema.Ref != "Item" || !create.NoAuth {
		t.Errorf("body parameter: %+v noauth %v", create.Body, create.NoAuth)
	}
	upload := mustFunc(t, api, "upload_photo")
	if upload.Body == nil || upload.Body.Content[0].Type != "multipart/form-data" {
		t.Fatalf("formData body %+v", upload.Body)
	}
	form := upload.Body.Content[0].Schema
	if form.Property("file").Format != "binary" || form.Required[0] != "file" || len(upload.Params) != 1 {
		t.Errorf("form %+v params %v", form, upload.Params)
	}
	if len(upload.Security) != 1 || upload.Security[0][0] != "key" {
		t.Errorf("security %v", upload.Security)
	}
	if api.Schemas["Item"].Property("parent").Ref != "Item" {
		t.Error("recursive definition")
	}
}

func TestExternalRefs(t *testing.T) {
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/common/error.yaml" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte("Error:\n  type: object\n  properties:\n    code: { type: integer }\n"))
	}))
	defer remote.Close()

	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "models.yaml"), []byte("Thing:\n  type: object\n  properties:\n    id: { type: string }\n    next: { $ref: '#/Thing' }\n"), 0o644)
	spec := spec30("http://api.example", listThings+`        "200":
          description: ok
          content: { application/json: { schema: { $ref: "./models.yaml#/Thing" } } }
        "500":
          description: err
          content: { application/json: { schema: { $ref: "`+remote.URL+`/common/error.yaml#/Error" } } }
`)
	cache := NewCache(t.TempDir(), "test", nil)
	api := loadText(t, dir, spec, Options{Cache: cache})
	f := mustFunc(t, api, "list_things")
	thing := api.Resolve(f.Responses[0].Content[0].Schema)
	if thing == nil || thing.Property("id") == nil || thing.Property("next").Ref == "" {
		t.Fatalf("local file ref: %+v (warnings %v)", thing, api.Warnings)
	}
	errSchema := api.Resolve(f.Responses[1].Content[0].Schema)
	if errSchema == nil || errSchema.Property("code") == nil {
		t.Fatalf("remote ref: %+v (warnings %v)", errSchema, api.Warnings)
	}
	if entries := mustReadDir(t, cache.dir); len(entries) != 0 {
		t.Errorf("a spec with external references was cached: %v", entries)
	}
}

func TestSpecFromURL(t *testing.T) {
	data, _ := os.ReadFile("testdata/petstore.yaml")
	// The same spec without servers: the default server is the spec's origin.
	spec := strings.Replace(string(data), "servers:\n  - url: https://{region}.pets.example/{basePath}\n    variables:\n      region: { default: eu, enum: [eu, us] }\n      basePath: { default: v1 }\n", "", 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/specs/pets.yaml" {
			w.Write([]byte(spec))
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	api, err := Load(context.Background(), Source{Name: "p", Spec: srv.URL + "/specs/pets.yaml"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if api.BaseURL != srv.URL {
		t.Errorf("base URL %q, want %q", api.BaseURL, srv.URL)
	}
	_, err = Load(context.Background(), Source{Name: "p", Spec: srv.URL + "/missing.yaml"}, Options{})
	if err == nil || !strings.Contains(err.Error(), "404") || !strings.Contains(err.Error(), "api p") {
		t.Errorf("404 spec: %v", err)
	}
}

func TestBadSpecs(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, content, want string }{
		{"empty.yaml", "", "empty"},
		{"notyaml.yaml", "{{{ not: [yaml", "not an OpenAPI"},
		{"other.json", `{"hello": "world"}`, "not an OpenAPI"},
		{"asyncapi.yaml", "asyncapi: 2.0.0\ninfo: {title: x, version: '1'}\n", "not an OpenAPI"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.WriteFile(filepath.Join(dir, tc.name), []byte(tc.content), 0o644)
			_, err := Load(context.Background(), Source{Name: "bad", Spec: tc.name, Dir: dir}, Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.name) || !strings.Contains(err.Error(), "api bad") {
				t.Errorf("error %v, want one naming the API, the source and %q", err, tc.want)
			}
		})
	}
	_, err := Load(context.Background(), Source{Name: "bad", Spec: "nope.yaml", Dir: dir}, Options{})
	if err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing file: %v", err)
	}
}

func TestCache(t *testing.T) {
	dir := t.TempDir()
	specDir := t.TempDir()
	data, _ := os.ReadFile("testdata/petstore.yaml")
	os.WriteFile(filepath.Join(specDir, "p.yaml"), data, 0o644)
	src := Source{Name: "p", Spec: "p.yaml", Dir: specDir}

	first, err := Load(context.Background(), src, Options{Cache: NewCache(dir, "v1", nil)})
	if err != nil {
		t.Fatal(err)
	}
	if entries := mustReadDir(t, dir); len(entries) != 1 {
		t.Fatalf("cache entries %v", entries)
	}
	// Corrupt the entry's content but keep its name: a hit must come from
	// the entry, so a changed title shows it was read.
	cached := *first
	cached.Title = "from the cache"
	encoded, err := encode(&cached)
	if err != nil {
		t.Fatal(err)
	}
	NewCache(dir, "v1", nil).put(data, encoded)
	hit, _ := Load(context.Background(), src, Options{Cache: NewCache(dir, "v1", nil)})
	if hit.Title != "from the cache" || hit.Name != "p" {
		t.Errorf("cache not used: %q", hit.Title)
	}
	// Another version does not read it.
	other, _ := Load(context.Background(), src, Options{Cache: NewCache(dir, "v2", nil)})
	if other.Title != "Petstore" {
		t.Errorf("another version read the cache: %q", other.Title)
	}
	// A changed spec is never served stale.
	os.WriteFile(filepath.Join(specDir, "p.yaml"), []byte(strings.Replace(string(data), "title: Petstore", "title: Changed", 1)), 0o644)
	changed, _ := Load(context.Background(), src, Options{Cache: NewCache(dir, "v1", nil)})
	if changed.Title != "Changed" {
		t.Errorf("stale: %q", changed.Title)
	}
	// A broken entry is rebuilt.
	for _, e := range mustReadDir(t, dir) {
		os.WriteFile(filepath.Join(dir, e.Name()), []byte("garbage"), 0o644)
	}
	rebuilt, err := Load(context.Background(), src, Options{Cache: NewCache(dir, "v1", nil)})
	if err != nil || rebuilt.Title != "Changed" {
		t.Errorf("broken entry: %v %q", err, rebuilt.Title)
	}
}

// mustReadDir lists a cache's entries (not its key, nor temporary files).
func mustReadDir(t *testing.T, dir string) []os.DirEntry {
	all, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var entries []os.DirEntry
	for _, e := range all {
		if !strings.HasPrefix(e.Name(), ".") {
			entries = append(entries, e)
		}
	}
	return entries
}

func TestHasExternalRef(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{`{"$ref": "#/components/schemas/A"}`, false},
		{`{"$ref":"other.json#/A"}`, true},
		{`{"$r\u0065f":"other.json#/A"}`, true},
		{"schema:\n  $ref: '#/A'\n", false},
		{"schema:\n  $ref: ./a.yaml\n", true},
		{"schema:\n  $ref: \"https://x/a.yaml\"\n", true},
		{"schema:\n  $ref: >-\n    #/components/schemas/A\n", false},
		{"schema:\n  $ref: >-\n    ./a.yaml\n", true},
		{"schema:\n  $ref: |\n    #/A\n", false},
		{"schema:\n  $ref:\n    '#/A'\n", false},
		{"schema:\n  $ref:\n    other.yaml#/A\n", true},
		{"schema: {$ref: '#/A'}\n", false},
		{"a: &x './a.yaml'\nschema:\n  $ref: *x\n", false}, // an alias is not a scalar: libopenapi does not follow it either
		{`"description": "use $ref: other.yaml here"`, false},
		{"properties:\n  $ref:\n    type: string\n", false}, // a property called $ref
	} {
		var root yaml.Node
		if err := yaml.Unmarshal([]byte(tc.in), &root); err != nil {
			t.Fatalf("%q: %v", tc.in, err)
		}
		if got := hasExternalRef(&root); got != tc.want {
			t.Errorf("hasExternalRef(%q) = %v", tc.in, got)
		}
	}
}

// A spec whose references are written as YAML block scalars (">-", "|-"),
// quoted on the next line or in flow style (OpenAI's spec folds long ones: "$ref: >-"
// with the target on the next line) has no external reference: it is
// cached on its first load and read from the cache on the next, and its
// references resolve.
func TestFoldedRefsCached(t *testing.T) {
	spec := spec30("http://api.example", listThings+`        "200":
          description: ok
          content:
            application/json:
              schema:
                $ref: >-
                  #/components/schemas/ThingList
        "404":
          description: missing
          content:
            application/json:
              schema:
                $ref: |-
                  #/components/schemas/Error
        "500":
          description: err
          content:
            application/json:
              schema:
                $ref:
                  "#/components/schemas/Error"
        default:
          description: other
          content: { application/json: { schema: { $ref: '#/components/schemas/Error' } } }
components:
  schemas:
    ThingList:
      type: array
      items:
        $ref: >-
          #/components/schemas/Thing
    Thing:
      type: object
      properties:
        id: { type: string }
    Error:
      type: object
      properties:
        code: { type: integer }
`)
	specDir, cacheDir := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(specDir, "folded.yaml"), []byte(spec), 0o644)
	src := Source{Name: "f", Spec: "folded.yaml", Dir: specDir}
	for i, wantParsed := range []bool{true, false} {
		api, parsed, err := LoadParsed(context.Background(), src, Options{Cache: NewCache(cacheDir, "v1", nil)})
		if err != nil {
			t.Fatal(err)
		}
		if parsed != wantParsed {
			t.Fatalf("load %d: parsed %v, want %v (entries %v)", i+1, parsed, wantParsed, mustReadDir(t, cacheDir))
		}
		if n := len(mustReadDir(t, cacheDir)); n != 1 {
			t.Fatalf("load %d: %d cache entries, want 1", i+1, n)
		}
		f := mustFunc(t, api, "list_things")
		list := api.Resolve(f.Responses[0].Content[0].Schema)
		if list == nil || !list.Has("array") || api.Resolve(list.Items) == nil || api.Resolve(list.Items).Property("id") == nil {
			t.Fatalf("load %d: folded ref: %+v (warnings %v)", i+1, list, api.Warnings)
		}
		for _, r := range f.Responses[1:] {
			if e := api.Resolve(r.Content[0].Schema); e == nil || e.Property("code") == nil {
				t.Fatalf("load %d: response %s: %+v (warnings %v)", i+1, r.Status, e, api.Warnings)
			}
		}
		if len(api.Warnings) != 0 {
			t.Errorf("load %d: warnings %v", i+1, api.Warnings)
		}
	}
}

func TestOpenAPI31(t *testing.T) {
	// testdata/fastapi31.json is what FastAPI generates for
	// testdata/fastapi31_app.py.
	api := load(t, "fastapi31.json")
	var names []string
	for _, f := range api.Functions {
		names = append(names, f.Name)
	}
	if got := strings.Join(names, " "); got != "list_todos_todos_get create_todo_todos_post get_todo_todos_todo_id_get delete_todo_todos_todo_id_delete" {
		t.Errorf("names %s", got)
	}
	if api.BaseURL != "" || !strings.Contains(strings.Join(api.Warnings, "\n"), "base_url") {
		t.Errorf("no server: base %q, warnings %v", api.BaseURL, api.Warnings)
	}
	todo := api.Schemas["Todo"]
	if todo == nil {
		t.Fatalf("schemas %v", api.Schemas)
	}
	if note := todo.Property("note"); len(note.AnyOf) != 2 || note.AnyOf[1].Type[0] != "null" {
		t.Errorf("Optional[str] %+v", note)
	}
	if meta := todo.Property("meta"); meta.AdditionalProperties == nil || meta.AdditionalProperties.Type[0] != "integer" {
		t.Errorf("dict[str, int] %+v", meta)
	}
	if parent := todo.Property("parent"); len(parent.AnyOf) != 2 || parent.AnyOf[0].Ref != "Todo" {
		t.Errorf("recursive Optional[Todo] %+v", parent)
	}
	list := mustFunc(t, api, "list_todos_todos_get")
	if p := param(list, "x-trace"); p == nil || p.In != "header" {
		t.Errorf("header x-trace: %+v", list.Params)
	}

	typeArray := `openapi: 3.1.0
info: { title: t, version: "1" }
servers: [{ url: "http://x" }]
paths:
  /a:
    get:
      operationId: a
      parameters:
        - { name: q, in: query, schema: { type: [string, "null"], const: "x" } }
      responses: { "200": { description: ok } }
`
	api2 := loadText(t, "", typeArray, Options{})
	q := param(api2.Functions[0], "q").Schema
	if !q.Has("string") || !q.Has("null") || q.Has("integer") || string(q.Const) != `"x"` {
		t.Errorf("type array: %+v", q)
	}
}

func TestCachePrune(t *testing.T) {
	dir := t.TempDir()
	c := NewCache(dir, "v1", nil)
	spec := []byte("spec")
	encoded, _ := encode(&catalog.API{Title: "kept"})
	c.put(spec, encoded)
	old := time.Now().Add(-2 * cacheMaxAge)
	// An entry still in use is touched when read, and survives pruning.
	os.Chtimes(c.path(spec), old, old)
	if api := c.get(spec); api == nil || api.Title != "kept" {
		t.Fatal("cache miss")
	}
	// An unused one goes at the next write.
	os.WriteFile(filepath.Join(dir, "stale.gob"), []byte("x"), 0o644)
	os.Chtimes(filepath.Join(dir, "stale.gob"), old, old)
	c.put([]byte("other"), encoded)
	if _, err := os.Stat(filepath.Join(dir, "stale.gob")); !os.IsNotExist(err) {
		t.Error("a stale entry survived")
	}
	if c.get(spec) == nil {
		t.Error("the entry in use was pruned")
	}
}

func TestRelativeRefFromURL(t *testing.T) {
	spec := spec30("", listThings+`        "200":
          description: ok
          content: { application/json: { schema: { $ref: "models/thing.yaml#/Thing" } } }
`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/spec.yaml":
			w.Write([]byte(spec))
		case "/api/models/thing.yaml":
			w.Write([]byte("Thing:\n  type: object\n  properties:\n    id: { type: integer }\n"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	api, err := Load(context.Background(), Source{Name: "ext", Spec: srv.URL + "/api/spec.yaml"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	thing := api.Resolve(api.Functions[0].Responses[0].Content[0].Schema)
	if thing == nil || thing.Property("id") == nil || thing.Property("id").Type[0] != "integer" {
		t.Fatalf("relative ref from a URL spec: %+v (warnings %v)", thing, api.Warnings)
	}
	if api.BaseURL != srv.URL {
		t.Errorf("base URL %q", api.BaseURL)
	}
}

// TestLenient: problems that leave operations callable are warnings.
func TestLenient(t *testing.T) {
	spec := spec30("http://api.example", `  /a:
    get:
      operationId: a
      parameters:
        - { name: q, in: query, schema: { $ref: "#/components/schemas/Missing" } }
        - { name: x, in: body }
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: { type: object, properties: { n: { type: integer, example: "not a number" } } }
  /b:
    get:
      servers: [{ url: "https://uploads.example" }]
      responses: { "200": { description: ok } }
`)
	api := loadText(t, "", spec, Options{})
	if len(api.Functions) != 2 || api.Functions[1].Name != "get_b" {
		t.Fatalf("functions %+v", api.Functions)
	}
	// The library drops the whole parameter list when a $ref in it does
	// not resolve: the operation stays callable, and a warning says so.
	w := strings.Join(api.Warnings, "\n")
	if !strings.Contains(w, "Missing") || !strings.Contains(w, "GET /a: 2 of its parameters could not be read") ||
		!strings.Contains(w, "GET /b: the spec gives it its own server https://uploads.example") {
		t.Errorf("warnings %q", api.Warnings)
	}
}
