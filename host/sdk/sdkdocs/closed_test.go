package sdkdocs

import (
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/contract/catalog"
)

// TestClosedArguments: in the definitions, an MCP tool's arguments table
// is closed ([string]: nil) when its schema says additionalProperties:
// false, and left open otherwise (the catalog cannot tell an absent
// additionalProperties from true, which the sdk takes as open); the docs'
// signatures show the parameters alone.
func TestClosedArguments(t *testing.T) {
	path := &catalog.Schema{Type: []string{"string"}}
	cat := &catalog.Catalog{APIs: []*catalog.API{{Name: "fs", Kind: catalog.MCP, Functions: []*catalog.Function{
		{Name: "closed", Kind: catalog.MCP, Tool: "closed", InputSchema: &catalog.Schema{Type: []string{"object"},
			Properties: []*catalog.Property{{Name: "path", Schema: path}}, Required: []string{"path"}, NoAdditional: true}},
		{Name: "open", Kind: catalog.MCP, Tool: "open", InputSchema: &catalog.Schema{Type: []string{"object"},
			Properties: []*catalog.Property{{Name: "path", Schema: path}}}},
	}}}}
	d := New(cat)
	defs := d.Definitions()
	for _, want := range []string{
		"\t\tclosed: (args: { path: string, [string]: nil }) -> (any, SdkResponse),",
		"\t\topen: (args: { path: string? }?) -> (any, SdkResponse),",
	} {
		if !strings.Contains(defs, want) {
			t.Errorf("missing %q in\n%s", want, defs)
		}
	}
	if sig, _ := d.Signature("fs.closed"); strings.Contains(sig, "[string]: nil") {
		t.Errorf("the docs' signature shows the indexer: %s", sig)
	}
}
