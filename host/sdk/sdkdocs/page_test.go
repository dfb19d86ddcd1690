package sdkdocs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/sdk/openapi/openapitest"
)

// loadSpec loads a spec written to a temporary file.
func loadSpec(t *testing.T, spec string) *Docs {
	t.Helper()
	path := filepath.Join(t.TempDir(), "spec.yaml")
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	cat := &catalog.Catalog{APIs: []*catalog.API{openapitest.Load(t, "t", path)}}
	if err := cat.Link(); err != nil {
		t.Fatal(err)
	}
	return New(cat)
}

// The result type is the lowest 2xx status's, whatever order the spec
// lists them in; a specific status comes before 2XX.
func TestLowestSuccessIsTheResult(t *testing.T) {
	d := loadSpec(t, `openapi: 3.0.3
info: { title: T, version: "1" }
paths:
  /things:
    post:
      operationId: makeThing
      responses:
        "2XX": { description: any, content: { application/json: { schema: { type: boolean } } } }
        "202": { description: queued, content: { application/json: { schema: { $ref: "#/components/schemas/Job" } } } }
        "200": { description: done, content: { application/json: { schema: { $ref: "#/components/schemas/Thing" } } } }
  /jobs:
    get:
      operationId: listJobs
      responses:
        "2XX": { description: any, content: { application/json: { schema: { type: boolean } } } }
        "203": { description: partial, content: { application/json: { schema: { $ref: "#/components/schemas/Job" } } } }
components:
  schemas:
    Thing: { type: object, properties: { id: { type: string, format: uuid, description: "The thing's id" } } }
    Job: { type: object, properties: { started: { type: string, format: date-time } } }
`)
	for name, want := range map[string]string{
		"make_thing": "sdk.make_thing(): (Thing, SdkResponse)",
		"list_jobs":  "sdk.list_jobs(): (Job, SdkResponse)",
	} {
		if got, err := d.Signature(name); err != nil || got != want {
			t.Errorf("%s: got %s (%v), want %s", name, got, err, want)
		}
	}
	doc, _ := d.FunctionDocs("make_thing")
	for _, want := range []string{"- 200: data Thing: done", "- 202: data (not the typed result) Job", "type Thing = { id: string? }\n--   id (uuid): The thing's id\n"} {
		if !strings.Contains(doc, want) {
			t.Errorf("missing %q in\n%s", want, doc)
		}
	}
}

// Formats and descriptions of fields reach function docs and schema pages;
// list_apis and the overview give the base URL and version.
func TestFormatsBaseURLAndVersion(t *testing.T) {
	d := petstore(t, nil)
	doc, _ := d.FunctionDocs("get_pet")
	for _, want := range []string{"- petId: number, required, in path, format int64", "type Pet = NewPet & { id: number }\n--   id (int64)\n"} {
		if !strings.Contains(doc, want) {
			t.Errorf("missing %q in\n%s", want, doc)
		}
	}
	apis := d.ListAPIs()
	if apis[0].Version != "1.2" || apis[0].BaseURL != "https://eu.pets.example/v1" {
		t.Errorf("%+v", apis[0])
	}
	page, err := d.APIsPage(PageRequest{})
	if err != nil || !strings.Contains(page.Text, "sdk.petstore (OpenAPI, 6 functions, 6 schemas): Petstore, version 1.2, base URL https://eu.pets.example/v1 -- A store of pets.") {
		t.Errorf("%v\n%s", err, page.Text)
	}
	over, _ := d.Overview("petstore")
	if !strings.Contains(over, "(version 1.2)") || !strings.Contains(over, "Base URL: https://eu.pets.example/v1") {
		t.Errorf("overview:\n%s", over)
	}
	schemas, err := d.Resource("sdk://petstore/schemas")
	if err != nil || !strings.Contains(schemas, "Status (enum of 3)") || !strings.Contains(schemas, "NewPet (object, 5 fields)") {
		t.Errorf("%v\n%s", err, schemas)
	}
	// A base URL never shows user information or a query.
	if got := shownURL("https://user:secret@api.example/v1?key=secret#x"); got != "https://api.example/v1" {
		t.Errorf("shownURL: %s", got)
	}
}

func TestBuiltinsSearchedAndDocumented(t *testing.T) {
	d := petstore(t, nil)
	for query, want := range map[string]string{
		"parse JSON text":                 "json.decode",
		"run calls concurrently":          "parallel",
		"report progress":                 "progress",
		"open a file for writing":         "io.open",
		"encode a table as JSON":          "json.encode",
		"list the entries of a directory": "io.list",
	} {
		hits := d.Search(query, 3)
		found := false
		for _, h := range hits {
			found = found || h.Name == want
		}
		if !found {
			t.Errorf("%q: %s not in %+v", query, want, hits)
		}
	}
	for _, b := range Builtins {
		doc, err := d.FunctionDocs(b.Name())
		if err != nil || !strings.Contains(doc, b.Signature) || !strings.Contains(doc, b.Summary) {
			t.Errorf("%s: %v\n%s", b.Name(), err, doc)
		}
	}
	noIO := d.WithoutIO()
	if hits := noIO.Search("open a file for writing", 20); len(hits) > 0 && strings.HasPrefix(hits[0].Name, "io.") {
		t.Errorf("io built-ins found without io: %+v", hits)
	}
	if _, err := noIO.FunctionDocs("io.open"); err == nil || !strings.Contains(err.Error(), "disabled") {
		t.Errorf("io.open without io: %v", err)
	}
	if _, err := noIO.FunctionDocs("json.encode"); err != nil {
		t.Error(err)
	}
}

// synthetic is a catalog of n functions, each with its own tag, and one
// huge schema and description: a spec far larger than any real one.
func synthetic(n int) *Docs {
	api := &catalog.API{Name: "big", Kind: catalog.OpenAPI, Title: "Big", Version: "1", Description: strings.Repeat("long description ", 10000), Schemas: map[string]*catalog.Schema{}}
	wide := &catalog.Schema{Type: []string{"object"}}
	for i := range 5000 {
		wide.Properties = append(wide.Properties, &catalog.Property{Name: fmt.Sprintf("field_%d", i), Schema: &catalog.Schema{Type: []string{"string"}, Format: "date-time", Description: strings.Repeat("x", 300)}})
	}
	api.Schemas["Wide"] = wide
	for i := range n {
		api.Functions = append(api.Functions, &catalog.Function{
			Name: fmt.Sprintf("operation_number_%d", i), Kind: catalog.OpenAPI, Method: "GET", Path: fmt.Sprintf("/things/%d", i),
			Summary: fmt.Sprintf("Get thing number %d of the very large API", i), Tags: []string{fmt.Sprintf("tag%d", i)},
			Description: strings.Repeat("d", 1000),
			Responses:   []*catalog.Response{{Status: "200", Content: []*catalog.MediaType{{Type: "application/json", Schema: &catalog.Schema{Ref: "Wide"}}}}},
		})
	}
	api.Functions[0].Description = strings.Repeat("very long ", 20000)
	cat := &catalog.Catalog{APIs: []*catalog.API{api}}
	if err := cat.Link(); err != nil {
		panic(err)
	}
	return New(cat)
}

// TestHugeSpecBounded: with 50,000 operations, 50,000 tags, a 160 KB
// description and a schema of 5,000 described fields, every answer stays
// under MaxAnswer, paging reaches each function once, bad input gets a
// clear error, and a page costs what its lines cost, not what the spec
// does.
func TestHugeSpecBounded(t *testing.T) {
	d := synthetic(50000)
	seen := map[string]bool{}
	req := PageRequest{Limit: 1_000_000_000}
	pages := 0
	for {
		p, err := d.FunctionsPage("big", "", req)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Text) > MaxAnswer {
			t.Fatalf("page %d: %d characters", pages, len(p.Text))
		}
		for _, l := range strings.Split(strings.TrimSpace(p.Text), "\n")[1:] {
			if strings.HasPrefix(l, "-- ") {
				continue
			}
			name := l[:strings.IndexByte(l, '(')]
			if seen[name] {
				t.Fatalf("%s twice", name)
			}
			seen[name] = true
		}
		pages++
		if p.NextCursor == "" {
			break
		}
		req.Cursor = p.NextCursor
	}
	if len(seen) != 50000 {
		t.Errorf("%d functions listed", len(seen))
	}
	t.Logf("50,000 functions in %d pages", pages)
	for what, text := range map[string]func() (string, error){
		"overview":      func() (string, error) { return d.Overview("big") },
		"function docs": func() (string, error) { return d.FunctionDocs("operation_number_0") },
		"schema":        func() (string, error) { return d.SchemaDocs("big", "Wide") },
		"search": func() (string, error) {
			p, err := d.SearchPage("get thing", PageRequest{Limit: 1e9})
			return p.Text, err
		},
		"apis": func() (string, error) { p, err := d.APIsPage(PageRequest{Limit: 1e9}); return p.Text, err },
	} {
		s, err := text()
		if err != nil || len(s) > MaxAnswer || len(s) < 100 {
			t.Errorf("%s: %d characters, %v", what, len(s), err)
		}
	}
	if _, err := d.SearchPage(strings.Repeat("thing ", 100<<10/6), PageRequest{}); err == nil || !strings.Contains(err.Error(), "more than 1000") {
		t.Errorf("a 100 KB query: %v", err)
	}
	if _, err := d.SearchPage("the of and", PageRequest{}); err == nil || !strings.Contains(err.Error(), "no words") {
		t.Errorf("a query of stop words: %v", err)
	}
	// Names of 100 KB are refused before anything looks for a near name
	// (which costs in proportion to their length).
	long := strings.Repeat("operation_number_1", 100<<10/18)
	for what, err := range map[string]error{
		"function": func() error { _, err := d.FunctionDocs(long); return err }(),
		"api":      func() error { _, err := d.FunctionsPage(long, "", PageRequest{}); return err }(),
		"tag":      func() error { _, err := d.FunctionsPage("big", long, PageRequest{}); return err }(),
		"schema":   func() error { _, err := d.SchemaDocs("big", long); return err }(),
		"resource": func() error { _, err := d.Resource("sdk://big/functions/" + long); return err }(),
	} {
		if err == nil || len(err.Error()) > 300 || !strings.Contains(err.Error(), "long") {
			t.Errorf("%s of 100 KB: %.300v", what, err)
		}
	}
	// A first page allocates about the same with 50,000 functions as with
	// 5,000: the spec's size does not multiply its cost.
	small := synthetic(5000)
	big := testing.AllocsPerRun(3, func() { d.FunctionsPage("big", "", PageRequest{Limit: 50}) })
	few := testing.AllocsPerRun(3, func() { small.FunctionsPage("big", "", PageRequest{Limit: 50}) })
	if big > 1.5*few+100 {
		t.Errorf("a page allocates %.0f times with 50,000 functions, %.0f with 5,000", big, few)
	}
}

func TestCursors(t *testing.T) {
	d := petstore(t, nil)
	p, err := d.FunctionsPage("petstore", "", PageRequest{Limit: 2})
	if err != nil || p.NextCursor == "" || p.Remaining != 4 || p.Shown != 2 || !strings.Contains(p.Text, "-- 4 more:") {
		t.Fatalf("%+v %v", p, err)
	}
	again, _ := d.FunctionsPage("petstore", "", PageRequest{Limit: 2})
	if again.NextCursor != p.NextCursor {
		t.Error("a cursor is not stable")
	}
	if other := petstore(t, nil); func() string { q, _ := other.FunctionsPage("petstore", "", PageRequest{Limit: 2}); return q.NextCursor }() != p.NextCursor {
		t.Error("the same sdk loaded again gives another cursor")
	}
	changed := petstore(t, map[string]any{"X-Request-Id": "x"}) // same functions: cursors still work
	if _, err := changed.FunctionsPage("petstore", "", PageRequest{Limit: 2, Cursor: p.NextCursor}); err != nil {
		t.Errorf("frozen parameter changed the cursor: %v", err)
	}
	fewer := synthetic(3)
	huge := strings.Repeat("A", 100<<10)
	for name, tc := range map[string]struct {
		d      *Docs
		cursor string
		want   string
	}{
		"garbage":         {d, "garbage!!", "not one this server gave"},
		"huge":            {d, huge, "not one this server gave"},
		"short":           {d, "AAAA", "not one this server gave"},
		"another listing": {d, encodeCursor(d.listingKey("schemas", "petstore"), 2), "another listing"},
		"another sdk":     {fewer, p.NextCursor, "another listing"},
		"past the end":    {d, encodeCursor(d.listingKey("functions", "petstore", ""), 7), "past the end"},
		"zero":            {d, encodeCursor(d.listingKey("functions", "petstore", ""), 0), "past the end"},
	} {
		_, err := tc.d.FunctionsPage("petstore", "", PageRequest{Cursor: tc.cursor})
		if tc.d == fewer {
			_, err = tc.d.FunctionsPage("big", "", PageRequest{Cursor: tc.cursor})
		}
		if !errors.Is(err, ErrBadCursor) || !strings.Contains(err.Error(), tc.want) || len(err.Error()) > 400 {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := d.FunctionsPage("petstore", "", PageRequest{Limit: -1}); err == nil {
		t.Error("a negative limit")
	}
	// The last page names no cursor; the pages together are the listing.
	var names []string
	req := PageRequest{Limit: 4}
	for {
		p, err := d.FunctionsPage("", "", req)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, regexp.MustCompile(`(?m)^sdk\.\w+`).FindAllString(p.Text, -1)...)
		if p.NextCursor == "" {
			break
		}
		req.Cursor = p.NextCursor
	}
	if len(names) != 6 {
		t.Errorf("%v", names)
	}
}

// FuzzCursor: any string is either a cursor of the listing or a clear
// error, never a panic or an offset outside the listing.
func FuzzCursor(f *testing.F) {
	key := [8]byte{1, 2, 3, 4, 5, 6, 7, 8}
	f.Add(encodeCursor(key, 3))
	f.Add("")
	f.Add("garbage")
	f.Add(encodeCursor(key, 1<<40))
	f.Fuzz(func(t *testing.T, cursor string) {
		off, err := decodeCursor(cursor, key, 10)
		if err != nil {
			if !errors.Is(err, ErrBadCursor) {
				t.Fatalf("%q: %v", cursor, err)
			}
			return
		}
		if off < 0 || off > 10 || (cursor == "") != (off == 0) {
			t.Fatalf("%q: offset %d", cursor, off)
		}
	})
}
