package tests

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/app"
	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/host/sdk"
	"github.com/toolscript/toolscript/internal/testapi"
	"github.com/toolscript/toolscript/internal/testconfig"
	"github.com/toolscript/toolscript/internal/testruntime"

	"github.com/toolscript/toolscript/internal/testspecs"
)

// The test API's spec (served by host/sdk's tests; here only read).
var testAPISpec = testapi.SpecPath()

func TestSDKCommand(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir := t.TempDir()
	api := "pets=" + testAPISpec

	for _, c := range []struct {
		name       string
		args       []string // after "sdk"
		status     int
		stdout     []string // each in standard output
		stdoutNot  string   // not in it, unless empty
		stdoutLine string   // a line of it (a regular expression), unless empty
		prefix     string   // how it starts
		stderr     string   // in standard error
	}{
		{name: "list", args: []string{"list", "--api", api}, stdout: []string{"pets", "Test API"}},
		{name: "flags before the subcommand", args: []string{"--api", api, "list"}, stdout: []string{"Test API"}},
		{name: "list pets", args: []string{"list", "--api", api, "pets"}, stdoutLine: `^sdk\.list_pets +List pets, a page at a time$`},
		{name: "list --tag", args: []string{"list", "--json", "--tag", "pets", "--api", api}, stdout: []string{`"name": "sdk.get_pet"`}, stdoutNot: "sdk.echo"},
		{name: "docs", args: []string{"docs", "--api", api, "get_pet"}, stdout: []string{"sdk.get_pet(params: { petId: number }): (Pet, SdkResponse)", "type Pet = NewPet & { id: number }"}},
		{name: "docs API", args: []string{"docs", "--api", api, "pets"}, stdout: []string{"# sdk.pets: Test API"}},
		{name: "docs resource", args: []string{"docs", "--api", api, "sdk://pets/schemas/NewPet"}, stdout: []string{"type NewPet = {"}},
		{name: "docs unknown", args: []string{"docs", "--api", api, "get_pets"}, status: 1, stderr: `did you mean "get_pet"`},
		{name: "search", args: []string{"search", "--api", api, "upload", "a", "file"}, prefix: "sdk.upload"},
		{name: "search for stop words", args: []string{"search", "--api", api, "the", "of"}, status: 2, stderr: "no words to look for"},
		{name: "the schemas resource", args: []string{"docs", "--api", api, "sdk://pets/schemas"}, stdout: []string{"NewPet (object, "}},
		{name: "a bad cursor", args: []string{"docs", "--api", api, "sdk://pets/functions?cursor=nope"}, status: 1, stderr: "invalid cursor"},
		{name: "no APIs", args: []string{"list"}, status: 2, stderr: "no APIs"},
	} {
		out, errOut, status := toolscript(t, dir, "", append([]string{"sdk"}, c.args...)...)
		ok := status == c.status && strings.HasPrefix(out, c.prefix) && strings.Contains(errOut, c.stderr)
		for _, want := range c.stdout {
			ok = ok && strings.Contains(out, want)
		}
		if c.stdoutNot != "" && strings.Contains(out, c.stdoutNot) {
			ok = false
		}
		if c.stdoutLine != "" && !regexp.MustCompile("(?m)"+c.stdoutLine).MatchString(out) {
			ok = false
		}
		if !ok {
			t.Errorf("%s: %d %q %q", c.name, status, out, errOut)
		}
	}
	defs := filepath.Join(dir, "sdk.d.luau")
	_, _, status := toolscript(t, dir, "", "sdk", "types", "--api", api, "-o", defs)
	data, _ := os.ReadFile(defs)
	if status != 0 || !strings.Contains(string(data), "declare sdk: {") {
		t.Errorf("types: %d %q", status, data)
	}
}

func TestSDKConfigFile(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	cfgDir := t.TempDir()
	data, _ := os.ReadFile(testAPISpec)
	os.WriteFile(filepath.Join(cfgDir, "api.yaml"), data, 0o644)
	// A relative spec path is relative to the config file, wherever the
	// command runs; frozen parameters vanish from the docs.
	testconfig.Write(t, cfgDir, `
[apis.pets]
spec = "api.yaml"
[apis.pets.frozen_params]
tenant = "abc"
`)
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

// petsToken is the bearer token petsSDK's client sends.
const petsToken = "t0ken"

// petsSDK is a runtime whose sdk is internal/testapi's spec as the API
// pets, reached at url with petsToken, and the client behind it.
func petsSDK(t testing.TB, url string) (*luau.Runtime, *sdk.Client) {
	t.Helper()
	client, err := app.NewSDK(context.Background(), sdk.Config{
		APIs:     []sdk.APIConfig{{Name: "pets", Spec: testapi.SpecPath(), BaseURL: url, Auth: &sdk.Credential{Token: petsToken}}},
		MaxCalls: 1 << 20,
	}, nil, app.SDKOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	manifest := client.Manifest()
	return testruntime.New(t, luau.Config{SDK: &manifest}), client
}
