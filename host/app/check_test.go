package app_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolscript/toolscript/host/app"
	"github.com/toolscript/toolscript/host/config"
	"github.com/toolscript/toolscript/host/lint"
	"github.com/toolscript/toolscript/host/runtime/result"
	"github.com/toolscript/toolscript/host/serve/mcpserver"
	"github.com/toolscript/toolscript/internal/syncbuf"
	"github.com/toolscript/toolscript/internal/testapi"
	"github.com/toolscript/toolscript/internal/testclient"
	"github.com/toolscript/toolscript/internal/testfile"
	"github.com/toolscript/toolscript/internal/testspecs"
	"github.com/toolscript/toolscript/internal/testupstreams"
	"github.com/toolscript/toolscript/internal/testwait"
)

// The scripts against GitHub's API the check tests run: one correct, one
// reading a response field that does not exist.
const (
	githubCorrect = "local issue = sdk.gh.issues_get({owner = \"o\", repo = \"r\", issue_number = 1})\nreturn issue.title\n"
	githubUnknown = "local issue = sdk.gh.issues_get({owner = \"o\", repo = \"r\", issue_number = 1})\nreturn issue.comment_count\n"
)

// githubAPI is an httptest server standing for api.github.com that
// answers every request with an issue, and counts them.
func githubAPI(t *testing.T) (url string, requests *atomic.Int64) {
	t.Helper()
	requests = &atomic.Int64{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id": 1, "number": 1, "title": "found", "state": "open"}`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, requests
}

// configFile writes text as a configuration file and loads it.
func configFile(t *testing.T, text string) *config.File {
	t.Helper()
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	file, err := config.Load(testfile.Temp(t, "toolscript.toml", text))
	if err != nil {
		t.Fatal(err)
	}
	return file
}

// githubConfig configures GitHub's real spec as the API gh at url.
func githubConfig(t *testing.T, url string) *config.File {
	t.Helper()
	return configFile(t, "[apis.gh]\nspec = "+strconv.Quote(testspecs.GitHub(t))+"\nbase_url = "+strconv.Quote(url)+"\n")
}

// checkAnswer is check_script's structured content.
type checkAnswer struct {
	Errors      int `json:"errors"`
	Warnings    int `json:"warnings"`
	Diagnostics []struct {
		Line     int    `json:"line"`
		Severity string `json:"severity"`
		Rule     string `json:"rule"`
		Message  string `json:"message"`
	} `json:"diagnostics"`
	Omitted   int    `json:"omitted"`
	Unchecked string `json:"unchecked"`
}

func checkScript(t *testing.T, c *client.Client, script string) (checkAnswer, *mcp.CallToolResult) {
	t.Helper()
	res := testclient.Call(t, c, mcp.CallToolParams{Name: mcpserver.ToolCheckScript, Arguments: map[string]any{"script": script}})
	if res.IsError {
		return checkAnswer{}, res
	}
	return testclient.Structured[checkAnswer](t, res), res
}

func executeChecked(t *testing.T, c *client.Client, script string) result.Result {
	t.Helper()
	res := testclient.Call(t, c, mcp.CallToolParams{Name: mcpserver.ToolName, Arguments: map[string]any{"script": script, "check": true}})
	return testclient.Structured[result.Result](t, res)
}

// TestCheckServeGitHub: over stdio and hosted HTTP, against GitHub's real
// spec, check_script finds the planted unknown field and nothing in the
// correct script, reports a syntax error (the types unchecked), says a
// script over the check's size is unchecked (and check: true runs it with
// a warning) and refuses a script over the server's size; execute_script with check:
// true refuses the planted script without calling the API (kind type)
// and runs the correct one.
func TestCheckServeGitHub(t *testing.T) {
	for _, transport := range []string{"stdio", "hosted"} {
		t.Run(transport, func(t *testing.T) {
			url, requests := githubAPI(t)
			file := githubConfig(t, url)
			var c *client.Client
			if transport == "stdio" {
				var stop func() error
				c, _, stop = startStdio(t, file)
				defer stop()
			} else {
				h := serveHosted(t, file)
				c = h.client
				defer h.stop()
			}

			answer, res := checkScript(t, c, githubUnknown)
			if answer.Errors == 0 || !hasDiagnostic(answer, 2, "type", "comment_count") {
				t.Errorf("planted: %+v; text %v", answer, res.Content)
			}
			if text := res.Content[0].(mcp.TextContent).Text; !strings.Contains(text, "2:") || !strings.Contains(text, "comment_count") {
				t.Errorf("planted: text %q", text)
			}
			if answer, res = checkScript(t, c, githubCorrect); answer.Errors+answer.Warnings != 0 || answer.Unchecked != "" {
				t.Errorf("correct: %+v; text %v", answer, res.Content)
			}
			if answer, res = checkScript(t, c, "local x = = 1\nreturn x\n"); !hasDiagnostic(answer, 1, "syntax", "") || answer.Unchecked == "" {
				t.Errorf("syntax error: %+v; text %v", answer, res.Content)
			}
			if _, res = checkScript(t, c, strings.Repeat("-", mcpserver.DefaultMaxScriptBytes+1)); !res.IsError {
				t.Errorf("oversized: %v, want a tool error", res.Content)
			}

			large := "return 1 --" + strings.Repeat("x", 70<<10) + "\n"
			if answer, res = checkScript(t, c, large); res.IsError || !strings.Contains(answer.Unchecked, "over the") {
				t.Errorf("over the check's size: %+v; text %v", answer, res.Content)
			}
			if got := executeChecked(t, c, large); got.Error != nil || len(got.Warnings) != 1 || !strings.Contains(got.Warnings[0], "unchecked") {
				t.Errorf("check: true over the check's size: %+v, want it run with a warning", got)
			}

			if got := executeChecked(t, c, githubUnknown); got.Error == nil || got.Error.Kind != result.Type || !strings.Contains(got.Error.Message, "comment_count") {
				t.Errorf("check: true with a type error: %+v", got)
			}
			if n := requests.Load(); n != 0 {
				t.Errorf("the API got %d requests from a refused script", n)
			}
			if got := executeChecked(t, c, githubCorrect); got.Error != nil || string(got.Value) != `"found"` || len(got.Warnings) != 0 {
				t.Errorf("check: true, correct: %+v (value %s)", got, got.Value)
			}
			if n := requests.Load(); n != 1 {
				t.Errorf("the API got %d requests, want 1", n)
			}
		})
	}
}

func hasDiagnostic(a checkAnswer, line int, rule, text string) bool {
	for _, d := range a.Diagnostics {
		if d.Line == line && d.Rule == rule && strings.Contains(d.Message, text) {
			return true
		}
	}
	return false
}

// TestCheckServeUpstream: check_script and check: true against a reference
// MCP server (server-everything), which starts in the background: the
// check waits for its tools. A string where its tool takes a number is
// refused; the correct call runs.
func TestCheckServeUpstream(t *testing.T) {
	argv := testupstreams.Everything(t)
	file := configFile(t, fmt.Sprintf("[mcp_servers.everything]\ncommand = %q\nargs = [%q, %q]\n", argv[0], argv[1], argv[2]))
	c, _, stop := startStdio(t, file)
	defer stop()
	planted := "return sdk.everything.get_sum({a = \"1\", b = 2})\n"
	if answer, res := checkScript(t, c, planted); answer.Errors == 0 || !hasDiagnostic(answer, 1, "type", "") {
		t.Errorf("planted: %+v; text %v", answer, res.Content)
	}
	if got := executeChecked(t, c, planted); got.Error == nil || got.Error.Kind != result.Type {
		t.Errorf("check: true with a type error: %+v", got)
	}
	correct := "local sum = sdk.everything.get_sum({a = 1, b = 2})\nreturn sum\n"
	if answer, res := checkScript(t, c, correct); answer.Errors != 0 {
		t.Errorf("correct: %+v; text %v", answer, res.Content)
	}
	if got := executeChecked(t, c, correct); got.Error != nil {
		t.Errorf("check: true, correct: %+v", got)
	}
}

// TestRunCheck: app.Run with Check refuses a script with a type error
// before any request (kind type, the errors named by the script's name)
// and runs a correct one.
func TestRunCheck(t *testing.T) {
	url, requests := githubAPI(t)
	file := githubConfig(t, url)
	run := func(source string) *result.Result {
		res, err := app.Run(testwait.Context(t), app.RunConfig{File: file, Settings: settings(t, file, config.Run),
			SDK: app.SDKOptions{Stderr: io.Discard}, Source: []byte(source), Name: "issue.luau", Check: true})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := run(githubUnknown); res.Error == nil || res.Error.Kind != result.Type || !strings.Contains(res.Error.Message, "issue.luau:2:") {
		t.Errorf("planted: %+v", res)
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("the API got %d requests from a refused script", n)
	}
	if res := run(githubCorrect); res.Error != nil || string(res.Value) != `"found"` {
		t.Errorf("correct: %+v", res)
	}
	if res := run("return 1 --" + strings.Repeat("x", 70<<10)); res.Error != nil || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "unchecked") {
		t.Errorf("oversized for a check: %+v, want it run with a warning", res)
	}
}

// amplifiedSpec writes an OpenAPI spec of some 80 KB whose definitions
// are over the type checker's 8 MiB: one query parameter with an enum of
// 1000 values, shared by 400 operations, each of which declares its
// arguments in full. It stands for any API (or upstream server) whose
// definitions do not load.
func amplifiedSpec(t *testing.T) string {
	t.Helper()
	enum := make([]string, 1000)
	for i := range enum {
		enum[i] = fmt.Sprintf("value-number-%06d", i)
	}
	paths := map[string]any{}
	for i := range 400 {
		paths[fmt.Sprintf("/things%d", i)] = map[string]any{"get": map[string]any{"operationId": fmt.Sprintf("get_thing_%d", i),
			"parameters": []any{map[string]any{"$ref": "#/components/parameters/Kind"}},
			"responses":  map[string]any{"200": map[string]any{"description": "ok"}}}}
	}
	spec, err := json.Marshal(map[string]any{"openapi": "3.0.3", "info": map[string]any{"title": "things", "version": "1"}, "paths": paths,
		"servers": []any{map[string]any{"url": "https://things.example"}},
		"components": map[string]any{"parameters": map[string]any{"Kind": map[string]any{"name": "kind", "in": "query", "required": true,
			"schema": map[string]any{"type": "string", "enum": enum}}}}})
	if err != nil {
		t.Fatal(err)
	}
	return testfile.Temp(t, "big.json", string(spec))
}

// TestCheckOneAPIsDefinitionsFail: of two APIs, one whose definitions do
// not load (over the checker's cap) leaves its own calls unchecked, not
// every script: check_script, check: true, run --check and lint --types
// still find the other API's misuse, accept the failing API's calls with
// a warning that names it, and the server's and the run's standard error
// name it.
func TestCheckOneAPIsDefinitionsFail(t *testing.T) {
	api := testapi.New(t)
	file := petsConfig(t, api, "[apis.things]\nspec = "+strconv.Quote(amplifiedSpec(t))+"\nbase_url = "+strconv.Quote(api.URL)+"\n")
	const (
		misuse  = "local pet = sdk.pets.get_pet({petId = 1})\nreturn pet.nmae\n"
		bigCall = "local ok = sdk.things.get_thing_1({kind = \"not a value\"})\nreturn ok\n"
	)
	c, stderr, stop := startStdio(t, file)
	defer stop()
	if answer, res := checkScript(t, c, misuse); answer.Errors == 0 || !hasDiagnostic(answer, 2, "type", "nmae") {
		t.Errorf("the good API's misuse: %+v; text %v", answer, res.Content)
	}
	answer, res := checkScript(t, c, bigCall)
	if answer.Errors != 0 || answer.Unchecked != "" || !hasDiagnostic(answer, 1, "type", "sdk.things") {
		t.Errorf("the failing API's call: %+v, want accepted with a warning naming sdk.things; text %v", answer, res.Content)
	}
	if got := executeChecked(t, c, misuse); got.Error == nil || got.Error.Kind != result.Type {
		t.Errorf("check: true with the good API's misuse: %+v", got)
	}
	if got := executeChecked(t, c, "local ok = pcall(sdk.things.get_thing_1, {kind = \"x\"})\nreturn ok\n"); len(got.Warnings) != 1 || !strings.Contains(got.Warnings[0], "sdk.things") {
		t.Errorf("check: true naming the failing API: %+v, want it run with a warning naming sdk.things", got)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr.String(), "sdk.things") || !strings.Contains(stderr.String(), "over the limit") {
		t.Errorf("serve's stderr %q, want a warning naming sdk.things and why", stderr.String())
	}

	var runErr syncbuf.Buffer
	res2, err := app.Run(testwait.Context(t), app.RunConfig{File: file, Settings: settings(t, file, config.Run),
		SDK: app.SDKOptions{Stderr: &runErr}, Source: []byte(misuse), Name: "pet.luau", Check: true})
	if err != nil {
		t.Fatal(err)
	}
	if res2.Error == nil || res2.Error.Kind != result.Type || !strings.Contains(res2.Error.Message, "pet.luau:2:") {
		t.Errorf("run --check with the good API's misuse: %+v", res2)
	}
	if !strings.Contains(runErr.String(), "sdk.things") {
		t.Errorf("run's stderr %q, want a warning naming sdk.things", runErr.String())
	}

	var lintErr syncbuf.Buffer
	report, err := app.Lint(testwait.Context(t), app.LintConfig{File: file, SDK: app.SDKOptions{Stderr: &lintErr}, Types: true,
		Sources: []lint.Source{{Name: "pet.luau", Text: []byte(misuse)}}})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, d := range report.Diagnostics {
		found = found || d.Rule == lint.RuleType && d.Line == 2 && strings.Contains(d.Message, "nmae")
	}
	if !found || !strings.Contains(lintErr.String(), "sdk.things") {
		t.Errorf("lint --types: %+v, stderr %q; want the misuse found and sdk.things named", report.Diagnostics, lintErr.String())
	}
}

// TestRunCheckRedactsLooseWarning: the warnings that name an API whose
// definitions do not load, on standard error and in the result's
// warnings, pass the configuration's redactor (here a secret that is the
// words the warning gives why).
func TestRunCheckRedactsLooseWarning(t *testing.T) {
	const token = "over the limit"
	t.Setenv("TSLEAK_THINGS_TOKEN", token)
	api := testapi.New(t)
	file := petsConfig(t, api, "[apis.things]\nspec = "+strconv.Quote(amplifiedSpec(t))+"\nbase_url = "+strconv.Quote(api.URL)+"\n")
	file.APIs["things"] = func(a config.API) config.API { a.AuthEnv = "TSLEAK_THINGS_TOKEN"; return a }(file.APIs["things"])
	var stderr syncbuf.Buffer
	res, err := app.Run(testwait.Context(t), app.RunConfig{File: file, Settings: settings(t, file, config.Run),
		SDK: app.SDKOptions{Stderr: &stderr}, Source: []byte("local ok = pcall(sdk.things.get_thing_1, {kind = \"x\"})\nreturn ok\n"), Check: true})
	if err != nil {
		t.Fatal(err)
	}
	warnings := strings.Join(res.Warnings, "\n")
	for what, text := range map[string]string{"stderr": stderr.String(), "the result's warnings": warnings} {
		if !strings.Contains(text, "sdk.things") || strings.Contains(text, token) || !strings.Contains(text, "[REDACTED]") {
			t.Errorf("%s: %q, want sdk.things named and the secret redacted", what, text)
		}
	}
}
