package typecheck_test

import (
	"context"
	"testing"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/runtime/typecheck"
	"github.com/toolscript/toolscript/host/sdk/openapi"
	"github.com/toolscript/toolscript/host/sdk/sdkdocs"
	"github.com/toolscript/toolscript/internal/testspecs"
)

// githubDefinitions are the sdk's definitions of GitHub's API, as
// toolscript sdk types writes them.
func githubDefinitions(b testing.TB) []byte {
	b.Helper()
	api, err := openapi.Load(context.Background(), openapi.Source{Name: "gh", Spec: testspecs.GitHub(b)}, openapi.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return []byte(sdkdocs.New(&catalog.Catalog{APIs: []*catalog.API{api}}).Definitions())
}

// BenchmarkCheckGitHub: a warm check of a 20-line script against GitHub's
// definitions (loaded once, outside the timed loop).
func BenchmarkCheckGitHub(b *testing.B) {
	c, err := typecheck.New(context.Background(), typecheck.Config{CacheDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close(context.Background())
	if err := c.Load(githubDefinitions(b)); err != nil {
		b.Fatal(err)
	}
	if diags, err := c.Check(context.Background(), testspecs.GitHubScript); err != nil || len(diags) != 0 {
		b.Fatalf("%+v, %v", diags, err)
	}
	for b.Loop() {
		if _, err := c.Check(context.Background(), testspecs.GitHubScript); err != nil {
			b.Fatal(err)
		}
	}
}
