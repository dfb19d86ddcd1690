package sdkdocs

import (
	"testing"

	"github.com/toolscript/toolscript/host/contract/catalog"
)

// TestEffects: an API's writers are its functions that are not read-only;
// an MCP server whose tools are not listed yet may change data.
func TestEffects(t *testing.T) {
	yes, no := true, false
	get := &catalog.Function{Name: "get", Kind: catalog.OpenAPI, Method: "GET"}
	post := &catalog.Function{Name: "post", Kind: catalog.OpenAPI, Method: "POST"}
	readTool := &catalog.Function{Name: "read", Kind: catalog.MCP, Hints: &catalog.Hints{ReadOnly: &yes}}
	writeTool := &catalog.Function{Name: "write", Kind: catalog.MCP, Hints: &catalog.Hints{ReadOnly: &no}}
	plainTool := &catalog.Function{Name: "plain", Kind: catalog.MCP}
	// Declared by the configuration ([apis.NAME] safe and unsafe).
	safePost := &catalog.Function{Name: "search", Kind: catalog.OpenAPI, Method: "POST", Configured: &yes}
	unsafeGet := &catalog.Function{Name: "token", Kind: catalog.OpenAPI, Method: "GET", Configured: &no}
	safeTool := &catalog.Function{Name: "lookup", Kind: catalog.MCP, Configured: &yes}
	cases := []struct {
		name     string
		apis     []*catalog.API
		readOnly bool
		writers  []int
	}{
		{"no sdk", nil, true, nil},
		{"GET only", []*catalog.API{{Name: "a", Kind: catalog.OpenAPI, Functions: []*catalog.Function{get}}}, true, []int{0}},
		{"a POST", []*catalog.API{{Name: "a", Kind: catalog.OpenAPI, Functions: []*catalog.Function{get, post}}}, false, []int{1}},
		{"read-only tools", []*catalog.API{{Name: "m", Kind: catalog.MCP, Functions: []*catalog.Function{readTool}}}, true, []int{0}},
		{"tools not marked, or marked not read-only", []*catalog.API{{Name: "m", Kind: catalog.MCP, Functions: []*catalog.Function{readTool, writeTool, plainTool}}}, false, []int{2}},
		{"a server starting", []*catalog.API{
			{Name: "a", Kind: catalog.OpenAPI, Functions: []*catalog.Function{get}},
			{Name: "m", Kind: catalog.MCP, State: "starting"},
		}, false, []int{0, 0}},
		{"a POST declared safe", []*catalog.API{{Name: "a", Kind: catalog.OpenAPI, Functions: []*catalog.Function{get, safePost}}}, true, []int{0}},
		{"a GET declared unsafe", []*catalog.API{{Name: "a", Kind: catalog.OpenAPI, Functions: []*catalog.Function{unsafeGet, safePost}}}, false, []int{1}},
		{"a tool declared safe", []*catalog.API{{Name: "m", Kind: catalog.MCP, Functions: []*catalog.Function{readTool, safeTool}}}, true, []int{0}},
		{"a server down", []*catalog.API{{Name: "m", Kind: catalog.MCP, State: "down"}}, false, []int{0}},
	}
	for _, c := range cases {
		effects := New(&catalog.Catalog{APIs: c.apis}).Effects()
		if got := ReadOnly(effects); got != c.readOnly {
			t.Errorf("%s: ReadOnly %v, want %v (%+v)", c.name, got, c.readOnly, effects)
		}
		for i, e := range effects {
			if e.Writers != c.writers[i] || e.Pending != (c.apis[i].State != "") {
				t.Errorf("%s: %+v, want %d writers", c.name, e, c.writers[i])
			}
		}
	}
}
