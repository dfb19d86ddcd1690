package tests

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/result"
	"github.com/toolscript/toolscript/internal/testapi"
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
	config := "[apis.pets]\nspec = " + quoteTOML(testapi.SpecPath()) + "\nbase_url = " + quoteTOML(api.URL) + "\n" +
		"[mcp_servers.py]\ncommand = " + quoteTOML(args[0]) + "\nargs = " + string(list) + "\n"
	for _, tc := range []struct {
		name, source string
		extra        []string
		kind         result.Kind
		// message is how the error's message starts, after the position
		// ("script:1: ") of an argument error.
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
			message := strings.TrimPrefix(res.Error.Message, "script:1: ")
			if res.Error.Kind != tc.kind || !strings.HasPrefix(message, tc.message) {
				t.Errorf("error %s %q, want %s starting %q", res.Error.Kind, res.Error.Message, tc.kind, tc.message)
			}
		})
	}
}
