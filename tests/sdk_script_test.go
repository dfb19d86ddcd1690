package tests

import (
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/runtime/result"
	"github.com/toolscript/toolscript/internal/testapi"
	"github.com/toolscript/toolscript/internal/testconfig"
)

// Scripts calling a real API through `toolscript run`: calling, results,
// parallel and credentials as docs/sdk.md describes them, end to end.

const testToken = "s3cret-t0ken-value"

// runScript runs source with the test API as pets and returns the result.
func runScript(t *testing.T, api *testapi.Server, source string, extra ...string) (*result.Result, string) {
	t.Helper()
	config := "[apis.pets]\nspec = " + testconfig.Quote(testapi.SpecPath()) + "\nbase_url = " + testconfig.Quote(api.URL) + "\nauth_env = \"PETS_TOKEN\"\n"
	res, stdout, stderr := runJSON(t, source, config, []string{"PETS_TOKEN=" + testToken, "XDG_CACHE_HOME=" + t.TempDir()}, extra...)
	if strings.Contains(stdout+stderr, testToken) {
		t.Errorf("the credential reached the output:\n%s\n%s", stdout, stderr)
	}
	return res, stderr
}

func TestSDKScripts(t *testing.T) {
	api := testapi.New(t)
	cases := []struct {
		name, src string
		result    string      // expected result JSON
		kind      result.Kind // expected error kind
		message   string      // fragment of the error message
	}{
		{name: "data and response", src: `
			local pets, resp = sdk.list_pets({limit = 2})
			return {n = #pets, first = pets[1].id, tag = pets[1].tag == json.null, status = resp.status,
				link = resp.headers.link ~= nil, etag = resp.headers.etag, remaining = resp.headers["x-ratelimit-remaining"]}`,
			result: `{"etag":"\"v1\"","first":11,"link":true,"n":2,"remaining":"42","status":200,"tag":true}`},
		{name: "namespaced and flat", src: `return {sdk.pets.get_pet({petId = 7}).id, sdk.get_pet({petId = 8}).id, sdk.pets.get_pet == sdk.get_pet}`,
			result: `[7,8,true]`},
		{name: "201 with a body", src: `local pet, r = sdk.create_pet({name = "Rex"}) return {pet.name, pet.id, r.status}`,
			result: `["Rex",9007199254740991,201]`},
		{name: "204 is nil", src: `local d, r = sdk.delete_pet({petId = 1}) return {d == nil, r.status}`, result: `[true,204]`},
		{name: "404 is an error table", src: `
			local ok, err = pcall(sdk.get_pet, {petId = 404})
			return {ok, err.status, err.body.message, tostring(err)}`,
			result: `[false,404,"no pet 404","sdk.pets.get_pet: HTTP 404 Not Found: {\"message\":\"no pet 404\"}\n"]`},
		{name: "500 with a text body", src: `local ok, err = pcall(sdk.get_pet, {petId = 500}) return {err.status, err.body}`,
			result: `[500,"database on fire"]`},
		{name: "uncaught, kind upstream", src: "\nsdk.get_pet({petId = 404})", kind: result.Upstream, message: "sdk.pets.get_pet: HTTP 404 Not Found"},
		{name: "an unknown parameter, with a suggestion", src: `sdk.list_pets({limt = 1})`, kind: result.Runtime, message: "did you mean 'limit'"},
		{name: "a missing required parameter", src: `sdk.get_pet({})`, kind: result.Runtime, message: "petId"},
		{name: "a value outside the enum", src: `sdk.list_pets({status = "lost"})`, kind: result.Runtime, message: "status"},
		{name: "a body missing a required property", src: `sdk.create_pet({tag = "x"})`, kind: result.Runtime, message: "name"},
		{name: "path parameters cannot change the path", src: `return sdk.echo({value = "a/b?c"}).path`, result: `"/echo/a%2Fb%3Fc"`},
		{name: "the credential is sent and never shown", src: `return sdk.echo({value = "x"}).headers.authorization`, result: `"Bearer [REDACTED]"`},
		{name: "security [] sends none", src: `return sdk.public_info().headers.authorization == nil`, result: `true`},
		{name: "form bodies", src: `return sdk.submit_form({name = "a b", tags = {"x", "y"}}).form`, result: `{"name":["a b"],"tags":["x","y"]}`},
		{name: "binary strings keep their bytes", src: `
			local png = "\x89PNG\r\n\0\xff\xfe"
			local inParallel = parallel({function() return sdk.echo_raw("\xc3(\xff").body_hex end})
			return {sdk.upload({file = png, caption = "c"}).files_hex.file, sdk.echo_raw(png).body_hex, inParallel[1]}`,
			result: `["89504e470d0a00fffe","89504e470d0a00fffe","c328ff"]`},
		{name: "a redirect to another origin is not followed", src: `local ok, e = pcall(sdk.redirect, {to = "other"}) return ok`, result: `false`},
		{name: "max_calls", src: `for i = 1, 200 do sdk.get_pet({petId = i}) end`, kind: result.Limit, message: "max_calls"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, stderr := runScript(t, api, c.src)
			if c.kind == "" {
				if res.Error != nil {
					t.Fatalf("error: %+v (stderr %q)", res.Error, stderr)
				}
				if string(res.Value) != c.result {
					t.Errorf("result = %s\nwant     %s", res.Value, c.result)
				}
				return
			}
			if res.Error == nil || res.Error.Kind != c.kind || !strings.Contains(res.Error.Message, c.message) {
				t.Errorf("error = %+v, want kind %s with %q", res.Error, c.kind, c.message)
			}
		})
	}
}

// parallel against the delay endpoint: 16 calls of 200 ms with a limit of
// 8 overlap at the server (counted there, not timed), never more than 8 at
// once; the results come in order.
func TestSDKParallel(t *testing.T) {
	api := testapi.New(t)
	res, _ := runScript(t, api, `
		local fns = {}
		for i = 1, 16 do fns[i] = function() return sdk.delay({ms = 200, n = i}).n end end
		return parallel(fns, 8)`)
	if res.Error != nil || string(res.Value) != "[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]" {
		t.Fatalf("result %s, error %+v", res.Value, res.Error)
	}
	if peak := api.DelayPeak.Load(); peak < 2 || peak > 8 {
		t.Errorf("16 calls of 200 ms with a limit of 8: %d at once at the server, want 2 to 8", peak)
	}

	ioDir := t.TempDir()
	res, _ = runScript(t, api, `
		print("started")
		io.open("before.txt", "w"):write("x"):close()
		local fns = {}
		for i = 1, 8 do fns[i] = function() return sdk.delay({ms = 60000}) end end
		return parallel(fns)`, "--timeout", "500ms", "--io-dir", ioDir)
	if res.Error == nil || res.Error.Kind != result.Timeout || len(res.Logs) != 1 || res.Logs[0] != "started" ||
		len(res.FilesTouched) != 1 || res.FilesTouched[0].Name != "before.txt" {
		t.Errorf("a timeout during parallel: %+v, logs %q, files %+v", res.Error, res.Logs, res.FilesTouched)
	}
}
