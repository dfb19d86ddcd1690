package app_test

import (
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
	"github.com/toolscript/toolscript/host/runtime/result"
	"github.com/toolscript/toolscript/host/serve/mcpserver"
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
