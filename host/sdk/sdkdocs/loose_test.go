package sdkdocs

import (
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/runtime/typecheck"
	"github.com/toolscript/toolscript/host/runtime/typecheck/typechecktest"
	"github.com/toolscript/toolscript/internal/testwait"
)

// TestDefinitionsLoose: an API declared loosely is typed any (its table
// and its functions that are also sdk.<name>), its types are left out,
// the other APIs are declared as in Definitions, and the real type checker
// loads the text: the loose API's calls are accepted, the others' misuse
// is not. Definitions is DefinitionsLoose with none.
func TestDefinitionsLoose(t *testing.T) {
	number := &catalog.Schema{Type: []string{"number"}}
	cat := &catalog.Catalog{APIs: []*catalog.API{
		{Name: "pets", Kind: catalog.MCP, Functions: []*catalog.Function{{Name: "get_pet", Kind: catalog.MCP, Tool: "get_pet",
			InputSchema: &catalog.Schema{Type: []string{"object"}, Required: []string{"id"}, Properties: []*catalog.Property{{Name: "id", Schema: number}}}}}},
		{Name: "shop", Kind: catalog.OpenAPI, Schemas: map[string]*catalog.Schema{"Order": {Type: []string{"object"}}},
			Functions: []*catalog.Function{{Name: "get_order", Kind: catalog.OpenAPI, Method: "GET", Path: "/order"}}},
	}}
	if err := cat.Link(); err != nil {
		t.Fatal(err)
	}
	d := New(cat)
	if got := d.APINames(); strings.Join(got, ",") != "pets,shop" {
		t.Errorf("APINames %v", got)
	}
	if d.Definitions() != d.DefinitionsLoose(nil) {
		t.Error("Definitions differs from DefinitionsLoose with no API loose")
	}
	loose := d.DefinitionsLoose([]string{"shop"})
	for _, want := range []string{"\tshop: any,", "\tget_order: any,", "get_pet: (args: { id: number"} {
		if !strings.Contains(loose, want) {
			t.Errorf("missing %q in\n%s", want, loose)
		}
	}
	if strings.Contains(loose, "shop_Order") {
		t.Errorf("the loose API's types are declared:\n%s", loose)
	}
	checker := typechecktest.Loaded(t, typecheck.Config{CacheDir: t.TempDir()}, []byte(loose))
	ctx := testwait.Context(t)
	for script, wantErrors := range map[string]bool{
		"return sdk.shop.get_order({ anything = 1 }).whatever\n": false,
		"return sdk.get_order(1, 2, 3)\n":                        false,
		"return sdk.pets.get_pet({ id = \"one\" })\n":            true,
	} {
		diags, err := checker.Check(ctx, script)
		if err != nil {
			t.Fatal(err)
		}
		if (len(diags) > 0) != wantErrors {
			t.Errorf("%q: %+v, want errors %v", script, diags, wantErrors)
		}
	}
}
