package typecheck_test

import (
	"context"
	"os"
	"testing"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/runtime/typecheck"
	"github.com/toolscript/toolscript/host/runtime/typecheck/typechecktest"
	"github.com/toolscript/toolscript/host/sdk/openapi/openapitest"
	"github.com/toolscript/toolscript/host/sdk/sdkdocs"
	"github.com/toolscript/toolscript/internal/testspecs"
)

// githubDefinitions are the sdk's definitions of GitHub's API, as
// toolscript sdk types writes them.
func githubDefinitions(b testing.TB) []byte {
	b.Helper()
	api := openapitest.Load(b, "gh", testspecs.GitHub(b))
	return []byte(sdkdocs.New(&catalog.Catalog{APIs: []*catalog.API{api}}).Definitions())
}

// BenchmarkCheckGitHub: a warm check of a 20-line script against GitHub's
// definitions (loaded once, outside the timed loop), each in a fresh
// instance made from their image.
func BenchmarkCheckGitHub(b *testing.B) {
	c := typechecktest.Loaded(b, typecheck.Config{CacheDir: b.TempDir()}, githubDefinitions(b))
	if diags, err := c.Check(context.Background(), testspecs.GitHubScript); err != nil || len(diags) != 0 {
		b.Fatalf("%+v, %v", diags, err)
	}
	for b.Loop() {
		if _, err := c.Check(context.Background(), testspecs.GitHubScript); err != nil {
			b.Fatal(err)
		}
	}
}

// firstCheck makes a Checker with the compilation cache in dir, loads
// GitHub's definitions and checks the 20-line script: a process's first
// check.
func firstCheck(b *testing.B, dir string, definitions []byte) {
	c, err := typecheck.New(context.Background(), typecheck.Config{CacheDir: dir})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close(context.Background())
	if err := c.Load(definitions); err != nil {
		b.Fatal(err)
	}
	if diags, err := c.Check(context.Background(), testspecs.GitHubScript); err != nil || len(diags) != 0 {
		b.Fatalf("%+v, %v", diags, err)
	}
}

// BenchmarkFirstCheckGitHub: a new Checker, the load of GitHub's
// definitions and the first check, with the compilation cache warm (a
// process's first check after the first ever).
func BenchmarkFirstCheckGitHub(b *testing.B) {
	definitions := githubDefinitions(b)
	dir := b.TempDir()
	firstCheck(b, dir, definitions) // fills the cache
	for b.Loop() {
		firstCheck(b, dir, definitions)
	}
}

// BenchmarkFirstCheckGitHubColdCache: as BenchmarkFirstCheckGitHub, with
// an empty compilation cache each time (the first check ever).
func BenchmarkFirstCheckGitHubColdCache(b *testing.B) {
	definitions := githubDefinitions(b)
	for b.Loop() {
		dir, err := os.MkdirTemp(b.TempDir(), "cache")
		if err != nil {
			b.Fatal(err)
		}
		firstCheck(b, dir, definitions)
	}
}
