package sdkdocs

import (
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/sdk/openapi/openapitest"
	"github.com/toolscript/toolscript/internal/testspecs"
)

// TestGitHubDocs: every function of GitHub's API gets docs, the search
// finds what a model would ask for, and the whole definitions file parses
// with the real Luau parser.
func TestGitHubDocs(t *testing.T) {
	api := openapitest.Load(t, "gh", testspecs.GitHub(t))
	d := clientDocs(t, map[string]any{"owner": "octocat"}, api)
	fns, err := d.ListFunctions("gh", "")
	if err != nil || len(fns) != len(api.Functions) {
		t.Fatalf("%d functions, %v", len(fns), err)
	}
	for _, f := range fns {
		doc, err := d.FunctionDocs(f.Name)
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		if strings.Contains(doc, "- owner:") {
			t.Fatalf("%s: frozen owner shown", f.Name)
		}
	}
	for n := range api.Schemas {
		if _, err := d.SchemaDocs("gh", n); err != nil {
			t.Fatalf("schema %s: %v", n, err)
		}
	}
	doc, _ := d.FunctionDocs("repos_get_content")
	if !strings.Contains(doc, "- 200: data content_directory | content_file | content_symlink | content_submodule") {
		t.Errorf("the JSON response is documented, not the first media type:\n%s", doc)
	}
	inTop3 := func(query, want string) {
		t.Helper()
		hits := d.Search(query, 3)
		for _, h := range hits {
			if h.Name == want {
				return
			}
		}
		t.Errorf("search %q: %s is not in the top 3: %+v", query, want, hits)
	}
	inTop3("create an issue", "sdk.issues_create")
	inTop3("list pull requests", "sdk.pulls_list")
	inTop3("get repository contents", "sdk.repos_get_content")
	defs := d.Definitions()
	t.Logf("definitions: %d bytes, %d signatures", len(defs), len(d.Signatures()))
	checkLuauSyntax(t, asLuau(defs))
}
