package catalog

import "testing"

func TestReadOnly(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		name string
		f    Function
		want bool
	}{
		{"GET", Function{Kind: OpenAPI, Method: "GET"}, true},
		{"head, lower case", Function{Kind: OpenAPI, Method: "head"}, true},
		{"OPTIONS", Function{Kind: OpenAPI, Method: "OPTIONS"}, true},
		{"POST", Function{Kind: OpenAPI, Method: "POST"}, false},
		{"PUT", Function{Kind: OpenAPI, Method: "PUT"}, false},
		{"PATCH", Function{Kind: OpenAPI, Method: "PATCH"}, false},
		{"DELETE", Function{Kind: OpenAPI, Method: "DELETE"}, false},
		{"TRACE", Function{Kind: OpenAPI, Method: "TRACE"}, false},
		{"a tool without annotations", Function{Kind: MCP}, false},
		{"a tool with other annotations only", Function{Kind: MCP, Hints: &Hints{Idempotent: &yes}}, false},
		{"a tool marked readOnlyHint: false", Function{Kind: MCP, Hints: &Hints{ReadOnly: &no}}, false},
		{"a tool marked readOnlyHint: true", Function{Kind: MCP, Hints: &Hints{ReadOnly: &yes}}, true},
		{"a tool that says GET", Function{Kind: MCP, Method: "GET"}, false},
	} {
		if got := tc.f.ReadOnly(); got != tc.want {
			t.Errorf("%s: ReadOnly() = %v, want %v", tc.name, got, tc.want)
		}
	}
}
