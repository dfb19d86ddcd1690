package tests

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/internal/testapi"

	"github.com/toolscript/toolscript/internal/testspecs"
)

// The test API's spec (served by host/sdk's tests; here only read).
var testAPISpec = testapi.SpecPath()

func TestSDKCommand(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir := t.TempDir()
	api := "pets=" + testAPISpec

	out, errOut, status := toolscript(t, dir, "", "sdk", "list", "--api", api)
	if status != 0 || !strings.Contains(out, "pets") || !strings.Contains(out, "Test API") {
		t.Errorf("list: %d %q %q", status, out, errOut)
	}
	out, _, status = toolscript(t, dir, "", "sdk", "--api", api, "list")
	if status != 0 || !strings.Contains(out, "Test API") {
		t.Errorf("flags before the subcommand: %d %q", status, out)
	}
	out, _, status = toolscript(t, dir, "", "sdk", "list", "--api", api, "pets")
	if status != 0 || !regexp.MustCompile(`(?m)^sdk\.list_pets +List pets, a page at a time$`).MatchString(out) {
		t.Errorf("list pets: %d %q", status, out)
	}
	out, _, status = toolscript(t, dir, "", "sdk", "list", "--json", "--tag", "pets", "--api", api)
	if status != 0 || !strings.Contains(out, `"name": "sdk.get_pet"`) || strings.Contains(out, "sdk.echo") {
		t.Errorf("list --tag: %d %q", status, out)
	}
	out, _, status = toolscript(t, dir, "", "sdk", "docs", "--api", api, "get_pet")
	if status != 0 || !strings.Contains(out, "sdk.get_pet(params: { petId: number }): (Pet, SdkResponse)") || !strings.Contains(out, "type Pet = NewPet & { id: number }") {
		t.Errorf("docs: %d %q", status, out)
	}
	out, _, status = toolscript(t, dir, "", "sdk", "docs", "--api", api, "pets")
	if status != 0 || !strings.Contains(out, "# sdk.pets: Test API") {
		t.Errorf("docs API: %d %q", status, out)
	}
	out, _, status = toolscript(t, dir, "", "sdk", "docs", "--api", api, "sdk://pets/schemas/NewPet")
	if status != 0 || !strings.Contains(out, "type NewPet = {") {
		t.Errorf("docs resource: %d %q", status, out)
	}
	_, errOut, status = toolscript(t, dir, "", "sdk", "docs", "--api", api, "get_pets")
	if status != 1 || !strings.Contains(errOut, `did you mean "get_pet"`) {
		t.Errorf("docs unknown: %d %q", status, errOut)
	}
	out, _, status = toolscript(t, dir, "", "sdk", "search", "--api", api, "upload", "a", "file")
	if status != 0 || !strings.HasPrefix(out, "sdk.upload") {
		t.Errorf("search: %d %q", status, out)
	}
	_, errOut, status = toolscript(t, dir, "", "sdk", "search", "--api", api, "the", "of")
	if status != 2 || !strings.Contains(errOut, "no words to look for") {
		t.Errorf("search for stop words: %d %q", status, errOut)
	}
	out, _, status = toolscript(t, dir, "", "sdk", "docs", "--api", api, "sdk://pets/schemas")
	if status != 0 || !strings.Contains(out, "NewPet (object, ") {
		t.Errorf("the schemas resource: %d %q", status, out)
	}
	_, errOut, status = toolscript(t, dir, "", "sdk", "docs", "--api", api, "sdk://pets/functions?cursor=nope")
	if status != 1 || !strings.Contains(errOut, "invalid cursor") {
		t.Errorf("a bad cursor: %d %q", status, errOut)
	}
	defs := filepath.Join(dir, "sdk.d.luau")
	_, _, status = toolscript(t, dir, "", "sdk", "types", "--api", api, "-o", defs)
	data, _ := os.ReadFile(defs)
	if status != 0 || !strings.Contains(string(data), "declare sdk: {") {
		t.Errorf("types: %d %q", status, data)
	}
	_, errOut, status = toolscript(t, dir, "", "sdk", "list")
	if status != 2 || !strings.Contains(errOut, "no APIs") {
		t.Errorf("no APIs: %d %q", status, errOut)
	}
}

func TestSDKConfigFile(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	cfgDir := t.TempDir()
	data, _ := os.ReadFile(testAPISpec)
	os.WriteFile(filepath.Join(cfgDir, "api.yaml"), data, 0o644)
	// A relative spec path is relative to the config file, wherever the
	// command runs; frozen parameters vanish from the docs.
	os.WriteFile(filepath.Join(cfgDir, "toolscript.toml"), []byte(`
[apis.pets]
spec = "api.yaml"
[apis.pets.frozen_params]
tenant = "abc"
`), 0o644)
	out, errOut, status := toolscript(t, t.TempDir(), "", "sdk", "docs", "--config", filepath.Join(cfgDir, "toolscript.toml"), "list_tenant_items")
	if status != 0 || !strings.Contains(out, "sdk.list_tenant_items(params: { api_version: string?, limit: number? }?)") || strings.Contains(out, "tenant:") {
		t.Errorf("%d %q %q", status, out, errOut)
	}
}

// TestSDKStartupErrors: a spec that cannot be loaded, or a bad sdk
// setting, stops run, lint and sdk with status 2 and a message naming the
// API, the source and the cause.
func TestSDKStartupErrors(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "script.luau"), []byte("return 1"), 0o644)
	os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("hello: world\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "clash.yaml"), []byte("openapi: 3.0.0\ninfo: {title: c, version: '1'}\npaths:\n  /x:\n    get:\n      operationId: pets\n      responses: {'200': {description: ok}}\n"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--api", "bad=bad.yaml", "script.luau"}, "api bad: spec bad.yaml: not an OpenAPI"},
		{[]string{"lint", "--api", "gone=missing.yaml", "script.luau"}, "api gone: reading spec missing.yaml"},
		{[]string{"sdk", "list", "--api", "bad=bad.yaml"}, "api bad: spec bad.yaml"},
		{[]string{"run", "--api", "pets=" + testAPISpec, "--auth", "pets:TOOLSCRIPT_NO_SUCH_VAR", "script.luau"}, "TOOLSCRIPT_NO_SUCH_VAR is not set or empty"},
		{[]string{"run", "--api", "my-api=x.yaml", "script.luau"}, "not a Luau identifier"},
		{[]string{"sdk", "list", "--api", "pets=clash.yaml", "--api", "other=" + testAPISpec}, `API "pets" has the same name as the function sdk.pets.pets`},
		{[]string{"run", "--max-calls", "-1", "script.luau"}, "--max-calls must be positive"},
	} {
		_, errOut, status := toolscript(t, dir, "", tc.args...)
		if status != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: status %d, stderr %q; want 2 and %q", tc.args, status, errOut, tc.want)
		}
	}
}

func TestSDKGitHub(t *testing.T) {
	spec := testspecs.GitHub(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir := t.TempDir()
	for range 2 { // parsed, then from the cache
		out, errOut, status := toolscript(t, dir, "", "sdk", "list", "--api", "gh="+spec)
		if status != 0 || !strings.Contains(out, "gh   1223") {
			t.Fatalf("%d %q %q", status, out, errOut)
		}
	}
	out, _, status := toolscript(t, dir, "", "sdk", "docs", "--api", "gh="+spec, "repos_get_content")
	if status != 0 || !strings.Contains(out, "GET /repos/{owner}/{repo}/contents/{path}") {
		t.Errorf("%d %q", status, out)
	}
}
