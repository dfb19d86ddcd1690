package openapi

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/internal/testspecs"
)

func TestGitHubSpec(t *testing.T) {
	path := testspecs.GitHub(t)
	start := time.Now()
	api, err := Load(context.Background(), Source{Name: "gh", Spec: path}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("loaded in %s: %d functions, %d schemas, %d warnings", time.Since(start), len(api.Functions), len(api.Schemas), len(api.Warnings))
	for _, w := range api.Warnings {
		t.Log("warning:", w)
	}
	if len(api.Functions) < 1000 {
		t.Errorf("only %d functions", len(api.Functions))
	}
	seen := map[string]bool{}
	for _, f := range api.Functions {
		if !catalog.IsIdentifier(f.Name) {
			t.Errorf("%s %s: name %q is not an identifier", f.Method, f.Path, f.Name)
		}
		if seen[f.Name] {
			t.Errorf("duplicate name %s", f.Name)
		}
		seen[f.Name] = true
	}
	if f := api.Function("repos_get_content"); f == nil || f.Method != "GET" || f.Path != "/repos/{owner}/{repo}/contents/{path}" {
		t.Errorf("repos_get_content = %+v", f)
	}
	if api.BaseURL != "https://api.github.com" {
		t.Errorf("base URL %q", api.BaseURL)
	}
	runtime.KeepAlive(api)
}
