package tests

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/runtime/result"
	"github.com/toolscript/toolscript/internal/testapi"
	"github.com/toolscript/toolscript/internal/testconfig"
	"github.com/toolscript/toolscript/internal/testupstreams"
)

// TestSDKErrorNames: the message of every failed sdk call names the
// function by sdk.<api>.<function>, the way a script reaches it in its
// API's table: argument errors, upstream errors and limit errors, of an
// OpenAPI operation (called through its API's table or by its short name)
// and of an MCP tool, through real scripts run by `toolscript run`
// against a real HTTP API and a real MCP server.
func TestSDKErrorNames(t *testing.T) {
	api := testapi.New(t)
	args := testupstreams.Python(t)
	list, _ := json.Marshal(args[1:])
	// An API whose one operation answers JSON nested deeper than a script
	// may take.
	deepAPI := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(strings.Repeat("[", 200) + strings.Repeat("]", 200)))
	}))
	t.Cleanup(deepAPI.Close)
	deepSpec := filepath.Join(t.TempDir(), "deep.yaml")
	if err := os.WriteFile(deepSpec, []byte(`openapi: 3.0.0
info: { title: deep, version: "1" }
paths:
  /deep:
    get:
      operationId: getDeep
      responses: { "200": { description: deep, content: { application/json: { schema: {} } } } }
`), 0o644); err != nil {
		t.Fatal(err)
	}
	config := "[apis.pets]\nspec = " + testconfig.Quote(testapi.SpecPath()) + "\nbase_url = " + testconfig.Quote(api.URL) + "\n" +
		"[apis.deep]\nspec = " + testconfig.Quote(deepSpec) + "\nbase_url = " + testconfig.Quote(deepAPI.URL) + "\n" +
		"[mcp_servers.py]\ncommand = " + testconfig.Quote(args[0]) + "\nargs = " + string(list) + "\n"
	for _, tc := range []struct {
		name, source string
		extra        []string
		kind         result.Kind
		// message is how the error's message starts, after the position
		// ("…/script.luau:1: ") of an argument error.
		message string
	}{
		{name: "OpenAPI argument error", source: `sdk.pets.get_pet({ petID = 7 })`, kind: result.Runtime,
			message: "sdk.pets.get_pet: unknown parameter 'petID' (did you mean 'petId'?)"},
		{name: "OpenAPI argument error, missing", source: `sdk.pets.get_pet()`, kind: result.Runtime,
			message: "sdk.pets.get_pet: missing required parameter 'petId'"},
		{name: "OpenAPI argument error, short name", source: `sdk.get_pet({ petId = "seven" })`, kind: result.Runtime,
			message: "sdk.pets.get_pet: parameter 'petId': got string, want integer"},
		{name: "OpenAPI upstream error", source: `sdk.pets.get_pet({ petId = 404 })`, kind: result.Upstream,
			message: "sdk.pets.get_pet: HTTP 404 Not Found"},
		{name: "OpenAPI upstream error, caught", source: `local ok, e = pcall(sdk.pets.get_pet, { petId = 404 }) error(e.message, 0)`, kind: result.Runtime,
			message: "sdk.pets.get_pet: HTTP 404 Not Found"},
		{name: "OpenAPI limit error", source: `sdk.pets.get_pet({ petId = 1 }) sdk.pets.list_pets()`, extra: []string{"--max-calls", "1"}, kind: result.Limit,
			message: "sdk.pets.list_pets: more than 1 sdk calls in one execution"},
		{name: "OpenAPI limit error in parallel", source: `parallel({ function() return sdk.pets.get_pet({ petId = 1 }) end, function() return sdk.pets.get_pet({ petId = 2 }) end }, 1)`,
			extra: []string{"--max-calls", "1"}, kind: result.Limit, message: "sdk.pets.get_pet: more than 1 sdk calls in one execution"},
		{name: "OpenAPI response too deep", source: `local d = sdk.deep.get_deep()`, kind: result.Upstream,
			message: "sdk.deep.get_deep: the response is nested more than 128 levels deep"},
		{name: "OpenAPI response too deep, short name", source: `local d = sdk.get_deep()`, kind: result.Upstream,
			message: "sdk.deep.get_deep: the response is nested more than 128 levels deep"},
		{name: "MCP argument error", source: `sdk.py.weather({ citty = "Oslo" })`, kind: result.Runtime,
			message: "sdk.py.weather: "},
		{name: "MCP upstream error", source: `sdk.py.fail({ reason = "r" })`, kind: result.Upstream,
			message: "sdk.py.fail: "},
		{name: "MCP limit error", source: `sdk.py.ping({ n = 1 }) sdk.py.ping({ n = 2 })`, extra: []string{"--max-calls", "1"}, kind: result.Limit,
			message: "sdk.py.ping: more than 1 sdk calls in one execution"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, stderr := runUpstreamScript(t, tc.source, config, []string{"XDG_CACHE_HOME=" + t.TempDir()}, tc.extra...)
			if res.Error == nil {
				t.Fatalf("no error: %s (stderr %s)", res.Value, stderr)
			}
			message := res.Error.Message
			if _, after, positioned := strings.Cut(message, "script.luau:1: "); positioned {
				message = after
			}
			if res.Error.Kind != tc.kind || !strings.HasPrefix(message, tc.message) {
				t.Errorf("error %s %q, want %s starting %q", res.Error.Kind, res.Error.Message, tc.kind, tc.message)
			}
		})
	}
}
