package mcpserver

import (
	"fmt"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/sdk/sdkdocs"
)

// wideCatalog is n functions whose parameters are wide: each signature is
// thousands of characters long.
func wideCatalog(n, params int, prefix string) *sdkdocs.Docs {
	api := &catalog.API{Name: "wide", Kind: catalog.OpenAPI}
	for i := range n {
		f := &catalog.Function{Name: fmt.Sprintf("%sop_%d", prefix, i), Kind: catalog.OpenAPI, Method: "GET", Path: "/x"}
		for j := range params {
			f.Params = append(f.Params, &catalog.Param{Name: fmt.Sprintf("parameter_number_%d", j), In: "query", Schema: &catalog.Schema{Type: []string{"string"}}})
		}
		api.Functions = append(api.Functions, f)
	}
	cat := &catalog.Catalog{APIs: []*catalog.API{api}}
	if err := cat.Link(); err != nil {
		panic(err)
	}
	return sdkdocs.New(cat)
}

// execute_script's description lists a small sdk's signatures, but never
// past maxInlineSignatures characters: wide signatures are listed compact,
// and when even those are too long it points to the discovery tools.
func TestSDKDescriptionBounded(t *testing.T) {
	long := strings.Repeat("a_very_long_name_", 20)
	for _, tc := range []struct {
		name          string
		docs          *sdkdocs.Docs
		want, notWant string
	}{
		{"small", wideCatalog(3, 2, ""), "- sdk.op_0(params: { parameter_number_0: string?, parameter_number_1: string? }?)", "find them with"},
		{"wide", wideCatalog(40, 100, ""), "- sdk.op_0(params: {...}?): (any, SdkResponse)", "parameter_number_99"},
		{"long names", wideCatalog(40, 1, long), "There are 40 functions: find them with", "- sdk." + long},
	} {
		s := testServer(false)
		s.sdkDocs.Store(tc.docs)
		desc := s.sdkDescription()
		if len(desc) > maxInlineSignatures+1000 {
			t.Errorf("%s: %d characters", tc.name, len(desc))
		}
		if !strings.Contains(desc, tc.want) || strings.Contains(desc, tc.notWant) {
			t.Errorf("%s:\n%.2000s", tc.name, desc)
		}
	}
}
