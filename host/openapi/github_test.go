package openapi

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/catalog"
)

// githubSpec is GitHub's REST API description from the npm package
// @octokit/openapi, which .ci/run installs (tests/sdk/package.json pins it).
func githubSpec(tb testing.TB) string {
	tb.Helper()
	path, _ := filepath.Abs("../../tests/sdk/node_modules/@octokit/openapi/generated/api.github.com.json")
	if p := os.Getenv("TOOLSCRIPT_GITHUB_SPEC"); p != "" {
		path = p
	}
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatalf("GitHub's spec is missing in CI: %v (run: npm ci --prefix tests/sdk)", err)
		}
		tb.Skipf("GitHub's spec is not installed (npm ci --prefix tests/sdk): %v", err)
	}
	return path
}

func TestGitHubSpec(t *testing.T) {
	path := githubSpec(t)
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
