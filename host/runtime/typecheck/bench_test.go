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

// githubScript is a 20-line script against GitHub's API.
const githubScript = `local issues = sdk.gh.issues_list_for_repo({owner = "o", repo = "r", state = "open", per_page = 50})
local titles = {}
for _, issue in issues do
	local body = issue.body
	if body and #body > 0 then
		table.insert(titles, issue.title .. ": " .. string.sub(body, 1, 40))
	end
	local reason = issue.state_reason and issue.state_reason or "none"
	table.insert(titles, reason)
end
local ok, err = pcall(function()
	return sdk.gh.issues_create({owner = "o", repo = "r"}, {title = "found " .. #titles, labels = {"triage"}})
end)
if not ok then
	print("could not create: " .. tostring(err))
end
progress(1, 1, "done")
local repo = sdk.gh.repos_get({owner = "o", repo = "r"})
print(repo.full_name, repo.stargazers_count)
return json.encode({titles = titles, created = ok})
`

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
	if diags, err := c.Check(context.Background(), githubScript); err != nil || len(diags) != 0 {
		b.Fatalf("%+v, %v", diags, err)
	}
	for b.Loop() {
		if _, err := c.Check(context.Background(), githubScript); err != nil {
			b.Fatal(err)
		}
	}
}
