package openapi

import (
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/contract/catalog"
)

func TestBaseURL(t *testing.T) {
	vars := map[string]catalog.ServerVariable{"region": {Default: "eu"}}
	for _, tc := range []struct {
		name    string
		servers []catalog.Server
		loc     string
		want    string
		problem string
	}{
		{"absolute", []catalog.Server{{URL: "https://api.example/v1/"}}, "spec.yaml", "https://api.example/v1", ""},
		{"variables", []catalog.Server{{URL: "https://{region}.api.example", Variables: vars}}, "spec.yaml", "https://eu.api.example", ""},
		{"variable without default", []catalog.Server{{URL: "https://{tenant}.api.example"}}, "spec.yaml", "", "variables without defaults"},
		{"none, from a URL", nil, "http://127.0.0.1:8080/specs/a.json", "http://127.0.0.1:8080", ""},
		{"none, from a file", nil, "/specs/a.json", "", "names no server"},
		{"relative, from a URL", []catalog.Server{{URL: "/api"}}, "https://h.example/specs/a.json", "https://h.example/api", ""},
		{"relative, from a file", []catalog.Server{{URL: "/api"}}, "a.json", "", "relative and the spec is a file"},
		{"host without scheme, from a URL", []catalog.Server{{URL: "//h.example/v2"}}, "http://s.example/a.json", "http://h.example/v2", ""},
		{"host without scheme, from a file", []catalog.Server{{URL: "//h.example/v2"}}, "a.json", "https://h.example/v2", ""},
		{"not http", []catalog.Server{{URL: "ftp://h.example"}}, "a.json", "", "not http(s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, problem := baseURL(tc.servers, tc.loc)
			if got != tc.want || !strings.Contains(problem, tc.problem) || (tc.problem == "") != (problem == "") {
				t.Errorf("baseURL = %q, %q; want %q, a problem containing %q", got, problem, tc.want, tc.problem)
			}
		})
	}
}
