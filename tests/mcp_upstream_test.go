package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolscript/toolscript/host/runtime/result"
	"github.com/toolscript/toolscript/internal/testapi"
	"github.com/toolscript/toolscript/internal/testconfig"
	"github.com/toolscript/toolscript/internal/testupstreams"
	"github.com/toolscript/toolscript/internal/testwait"
)

// runUpstreamScript is runJSON, returning the result and standard error.
func runUpstreamScript(t *testing.T, source, config string, env []string, extra ...string) (*result.Result, string) {
	t.Helper()
	res, _, stderr := runJSON(t, source, config, env, extra...)
	return res, stderr
}

func TestUpstreamScripts(t *testing.T) {
	py := "--mcp=py=" + testupstreams.Shell(testupstreams.Python(t))
	for _, tc := range []struct {
		name, source, want, kind, message string
	}{
		{name: "structured content is a table", source: `local w = sdk.py.weather({ city = "Oslo" }); return w.city .. " " .. w.conditions`, want: `"Oslo sunny"`},
		{name: "text is a string", source: `return sdk.py.say_hello({ name = "Ada" })`, want: `"Hello, Ada!"`},
		{name: "text blocks joined", source: `return sdk.py.two_lines()`, want: `"first\nsecond"`},
		{name: "content blocks are a list", source: `local c = sdk.py.picture(); return { c[1].type, c[1].text, c[2].type, c[2].mimeType }`, want: `["text","a pixel","image","image/png"]`},
		{name: "isError is an error table", source: `local ok, e = pcall(sdk.py.fail, { reason = "why" })
			return { ok, string.find(e.message, "^sdk.py.fail: ") ~= nil, string.find(e.content[1].text, "why") ~= nil, string.find(tostring(e), "why") ~= nil }`, want: `[false,true,true,true]`},
		{name: "uncaught isError is kind upstream", source: `sdk.py.fail({ reason = "up" })`, kind: "upstream", message: "sdk.py.fail: "},
		{name: "argument check", source: `sdk.py.weather({ city = "Oslo", dayz = 2 })`, kind: "runtime", message: "sdk.py.weather: unknown argument 'dayz' (did you mean 'days'?)"},
		{name: "argument type", source: `sdk.py.weather({ city = 3 })`, kind: "runtime", message: "sdk.py.weather: argument 'city': got number, want string"},
		{name: "missing argument", source: `sdk.py.weather()`, kind: "runtime", message: "sdk.py.weather: missing required argument 'city'"},
		{name: "tool name mapped", source: `return sdk.py["say_hello"] ~= nil and sdk.py["say-hello"] == nil`, want: `true`},
		{name: "killed mid-call, restarted", source: `-- "exited (exit status 3) during the call" once the exit status is known
			local ok, e = pcall(sdk.py.crash)
			return { ok, string.find(tostring(e), "exited.-during the call") ~= nil, (sdk.py.say_hello({ name = "again" })) }`, want: `[false,true,"Hello, again!"]`},
		{name: "max_calls counts tool calls", source: `for i = 1, 3 do sdk.py.ping({ n = i }) end`, kind: "limit", message: "more than 2 sdk calls"},
		{name: "too many content blocks is kind limit", source: `sdk.py.blocks({ n = 10001 })`, kind: "limit",
			message: "sdk.py.blocks: the MCP server py sent a result of more than 10000 content blocks"},
		{name: "a result as deep as a script's values may be", source: `local x, n = sdk.py.raw({ depth = 127 }).v, 0
			while type(x) == "table" do n += 1; x = x[1] end
			return n`, want: `127`},
		{name: "a result deeper than a script's values is the server's error", source: `sdk.py.raw({ depth = 128 })`, kind: "upstream",
			message: "sdk.py.raw: the result nests 129 levels deep, more than the 128 a script can take"},
		{name: "a message nested past the decoder fails at once", source: `sdk.py.raw({ depth = 10010 })`, kind: "upstream",
			message: "sdk.py.raw: the MCP server py sent a message nested more than 10000 levels deep"},
		{name: "a tool error's message is capped, its content whole", source: `local ok, e = pcall(sdk.py.fail, { reason = string.rep("x", 100000) })
			return { ok, #e.message < 1200, string.find(e.message, "... (", 1, true) ~= nil, #e.content[1].text > 100000 }`, want: `[false,true,true,true]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, stderr := runUpstreamScript(t, tc.source, "", nil, py, "--max-calls=2")
			if tc.kind != "" {
				if res.Error == nil || string(res.Error.Kind) != tc.kind || !strings.Contains(res.Error.Message, tc.message) {
					t.Fatalf("error %+v, want kind %s with %q\nstderr %s", res.Error, tc.kind, tc.message, stderr)
				}
				return
			}
			if res.Error != nil || string(res.Value) != tc.want {
				t.Fatalf("result %s error %+v, want %s\nstderr %s", res.Value, res.Error, tc.want, stderr)
			}
		})
	}
}

func TestUpstreamTimeoutCancels(t *testing.T) {
	// The script times out while its call is in flight: the upstream gets
	// notifications/cancelled, and the process is gone when run returns.
	log := filepath.Join(t.TempDir(), "log")
	py := "--mcp=py=" + testupstreams.Shell(testupstreams.Python(t))
	res, _ := runUpstreamScript(t, `return sdk.py.sleep({ seconds = 60, tag = "t1" })`, "", []string{"PYSERVER_LOG=" + log}, py, "--timeout=2s")
	if res.Error == nil || res.Error.Kind != result.Timeout {
		t.Fatalf("%+v", res.Error)
	}
	b, _ := os.ReadFile(log)
	if !strings.Contains(string(b), "started sleep t1\n") || !strings.Contains(string(b), "cancelled sleep t1\n") {
		t.Fatalf("the upstream did not see the cancellation: %q", b)
	}
}

func TestUpstreamConfigHTTP(t *testing.T) {
	// [mcp_servers.NAME] with url and a header from the environment, and a
	// stdio server with args; stderr of servers never reaches stdout.
	url := testupstreams.EverythingHTTP(t)
	dir := t.TempDir()
	ev := testupstreams.Everything(t)
	config := "[mcp_servers.remote]\nurl = " + testconfig.Quote(url) + "\nheaders = { Authorization = \"Bearer ${EV_TOKEN}\" }\n" +
		"[mcp_servers.here]\ncommand = " + testconfig.Quote(ev[0]) + "\nargs = [" + testconfig.Quote(ev[1]) + ", " + testconfig.Quote(ev[2]) + "]\n"
	res, stderr := runUpstreamScript(t, `return { (sdk.remote.echo({ message = "over http" })), (sdk.here.get_sum({ a = 1, b = 2 })) }`, config, []string{"EV_TOKEN=secret"})
	if res.Error != nil || string(res.Value) != `["Echo: over http","The sum of 1 and 2 is 3."]` {
		t.Fatalf("%s %+v\n%s", res.Value, res.Error, stderr)
	}
	if !strings.Contains(stderr, "[here] ") {
		t.Errorf("stderr of the stdio server is not prefixed: %q", stderr)
	}
	// A variable that is not set is a start-up error naming it.
	_, stderr, status := toolscriptEnv(t, testconfig.Write(t, dir, config), []string{"EV_TOKEN="}, "run", "-")
	if status != 2 || !strings.Contains(stderr, "mcp_servers.remote.headers.Authorization: the environment variable EV_TOKEN is not set") {
		t.Errorf("status %d stderr %q", status, stderr)
	}
}

func TestUpstreamStartFailure(t *testing.T) {
	// A server that cannot start is a start-up error naming it (exit 2),
	// for run, lint and sdk alike.
	for _, args := range [][]string{
		{"run", "--mcp", "broken=/nonexistent/server --flag", "-"},
		{"lint", "--mcp", "broken=/nonexistent/server", "-"},
		{"sdk", "--mcp", "broken=/nonexistent/server", "list"},
	} {
		_, stderr, status := toolscript(t, t.TempDir(), "return 1", args...)
		if status != 2 || !strings.Contains(stderr, "mcp server broken") {
			t.Errorf("%v: status %d stderr %q", args, status, stderr)
		}
	}
}

func TestUpstreamDocsAndLint(t *testing.T) {
	py := "--mcp=py=" + testupstreams.Shell(testupstreams.Python(t))
	dir := t.TempDir()
	stdout, stderr, status := toolscript(t, dir, "", "sdk", py, "docs", "sdk.py.say_hello")
	if status != 0 || !strings.Contains(stdout, "sdk.py.say_hello(args: { name: string }): (any, SdkResponse)") || !strings.Contains(stdout, `MCP tool "say-hello" of server py`) {
		t.Errorf("docs: %d %s %s", status, stdout, stderr)
	}
	stdout, _, _ = toolscript(t, dir, "", "sdk", py, "types")
	if !strings.Contains(stdout, "say_hello") {
		t.Errorf("types without the tool: %s", stdout)
	}
	stdout, _, status = toolscript(t, dir, "local w = sdk.py.weather({ citty = \"x\" })\nreturn w\n", "lint", py, "-")
	if status != 1 || !strings.Contains(stdout+stderr, "has no argument 'citty'; did you mean 'city'?") {
		t.Errorf("lint: %d %s", status, stdout)
	}
}

func TestUpstreamToolsChangeUnderServe(t *testing.T) {
	// An upstream's tools change while serve runs: toolscript rebuilds the
	// sdk, tells its client (notifications/tools/list_changed), and the next
	// scripts, the description and the docs see the new tools; a removed
	// tool is gone for them.
	py := "--mcp=py=" + testupstreams.Shell(testupstreams.Python(t))
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	c, _ := mcpClient(t, t.TempDir(), "", "--no-io", py)
	ctx := testwait.Context(t)
	notified := make(chan string, 16)
	c.OnNotification(func(n mcp.JSONRPCNotification) { notified <- n.Method })
	script := func(src string) string {
		t.Helper()
		_, out := callScript(t, ctx, c, map[string]any{"script": src})
		if out.Error != nil {
			t.Fatalf("%s: %+v", src, out.Error)
		}
		return string(out.Result)
	}
	description := func() string {
		t.Helper()
		tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range tools.Tools {
			if tool.Name == "execute_script" {
				return tool.Description
			}
		}
		t.Fatal("no execute_script")
		return ""
	}
	// waitToolsChanged waits for notifications/tools/list_changed until
	// execute_script's description has (or lacks) a signature: the
	// server's first tools arrive after initialize, with a notification
	// of their own.
	waitToolsChanged := func(signature string, has bool) {
		t.Helper()
		for {
			select {
			case m := <-notified:
				if m == string(mcp.MethodNotificationToolsListChanged) && strings.Contains(description(), signature) == has {
					return
				}
			case <-ctx.Done():
				t.Fatalf("no notifications/tools/list_changed from toolscript with %s in the description: %v", signature, has)
			}
		}
	}

	if got := script(`return { sdk.py.added == nil, (sdk.py.add_tool()) }`); got != `[true,{"result":"added"}]` {
		t.Fatalf("before: %s", got)
	}
	waitToolsChanged("sdk.py.added(", true)
	if got := script(`return sdk.py.added({ x = 3 })`); !strings.Contains(got, "added 3") {
		t.Errorf("the added tool: %s", got)
	}
	if d := description(); !strings.Contains(d, "sdk.py.added(") {
		t.Errorf("execute_script's description lacks the added tool:\n%s", d)
	}
	docs, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "get_function_docs", Arguments: map[string]any{"name": "sdk.py.added"}}})
	if err != nil || docs.IsError || !strings.Contains(strings.Join(textsOf(docs), ""), "A tool added at run time.") {
		t.Errorf("get_function_docs of the added tool: %v %v", err, textsOf(docs))
	}

	if got := script(`return (sdk.py.remove_tool())`); got != `{"result":"removed"}` {
		t.Fatalf("remove_tool: %s", got)
	}
	waitToolsChanged("sdk.py.say_hello(", false)
	if got := script(`return { sdk.py.say_hello == nil, sdk.py.added ~= nil }`); got != `[true,true]` {
		t.Errorf("after the removal: %s", got)
	}
	if d := description(); strings.Contains(d, "sdk.py.say_hello(") {
		t.Errorf("execute_script's description still has the removed tool")
	}
}

func TestHostedMetricsCountUpstreamCalls(t *testing.T) {
	// /metrics counts the calls scripts made, by source and status: an
	// API's responses by status class, an MCP tool's results as ok or
	// tool_error; calls refused before sending are not counted.
	api := testapi.New(t)
	dir := testconfig.Write(t, t.TempDir(), "[apis.pets]\nspec = "+testconfig.Quote(testapi.SpecPath())+"\nbase_url = "+testconfig.Quote(api.URL)+"\n")
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	p := startServe(t, dir, "--no-io", "--mcp=py="+testupstreams.Shell(testupstreams.Python(t)))
	c := connectURL(t, p.url)
	_, out := callScript(t, testwait.Context(t), c, map[string]any{"script": `
		sdk.get_pet({ petId = 7 })
		sdk.get_pet({ petId = 8 })
		pcall(sdk.get_pet, { petId = 404 })
		pcall(sdk.get_pet, {})                 -- refused: not counted
		sdk.py.say_hello({ name = "m" })
		pcall(sdk.py.fail, { reason = "x" })
		return true`})
	if out.Error != nil {
		t.Fatalf("%+v", out.Error)
	}
	_, body := get(t, p.base+"/metrics")
	for _, want := range []string{
		`toolscript_upstream_calls_total{source="pets",status="2xx"} 2`,
		`toolscript_upstream_calls_total{source="pets",status="4xx"} 1`,
		`toolscript_upstream_calls_total{source="py",status="ok"} 1`,
		`toolscript_upstream_calls_total{source="py",status="tool_error"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s:\n%s", want, grepLines(body, "upstream_calls"))
		}
	}
	if n := strings.Count(body, "toolscript_upstream_calls_total{"); n != 4 {
		t.Errorf("%d upstream series, want 4:\n%s", n, grepLines(body, "upstream_calls"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
