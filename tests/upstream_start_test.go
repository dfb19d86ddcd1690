//go:build unix

package tests

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolscript/toolscript/internal/testupstreams"
)

func TestServeAnswersWhileUpstreamStarts(t *testing.T) {
	// An upstream held before it runs (standing for one that boots
	// slowly) does not hold serve's initialize: it is answered while the
	// upstream is provably still held. list_apis says the server is
	// starting; a script that does not name it runs at once, one that
	// names it waits within its own timeout; once the server runs, its
	// tools join the sdk and the client is told (tools and resources
	// list_changed).
	ctl := testupstreams.Controlled(t, testupstreams.Python(t))
	ctl.Hold(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	c, _ := mcpClient(t, t.TempDir(), "", "--no-io", "--mcp=slow="+testupstreams.Shell(ctl.Command))
	ctx := testContext(t)
	notified := make(chan string, 16)
	c.OnNotification(func(n mcp.JSONRPCNotification) { notified <- n.Method })
	ctl.WaitHeld(t, 30*time.Second) // the upstream started, and waits at the gate
	tool := func(name string, args map[string]any) (string, bool) {
		t.Helper()
		res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return strings.Join(textsOf(res), ""), res.IsError
	}

	listAPIs := func() string {
		t.Helper()
		text, _ := tool("list_apis", nil)
		return text
	}
	// The docs tools wait for it, at most 10 s (MaxDocsWait), then say it
	// is still starting.
	type answer struct {
		text    string
		isError bool
	}
	docs := make(chan answer, 3)
	go func() { docs <- answer{listAPIs(), false} }()
	go func() {
		text, isError := tool("list_functions", map[string]any{"api": "slow"})
		docs <- answer{text, isError}
	}()
	go func() {
		text, isError := tool("list_functions", nil)
		docs <- answer{text, isError}
	}()
	if _, out := callScript(t, ctx, c, map[string]any{"script": "return 6 * 7"}); string(out.Result) != "42" {
		t.Errorf("a script that does not name it: %+v", out)
	}
	text, isError := tool("execute_script", map[string]any{"script": `return sdk.slow.say_hello({ name = "early" })`, "timeout_ms": 300})
	if !isError || !strings.Contains(text, "the MCP server slow was not ready within the script's timeout") {
		t.Errorf("a script that names it, with a short timeout: %v %s", isError, text)
	}

	for range 3 {
		a := <-docs
		switch {
		case strings.Contains(a.text, "sdk.slow (MCP server, starting, 0 tools) -- The MCP server slow is starting"): // list_apis
		case a.isError && strings.HasPrefix(a.text, "starting: The MCP server slow is starting"): // of sdk.slow
		case !a.isError && strings.HasSuffix(a.text, "-- not listed: the tools of the MCP server slow, which is still starting (they are listed once it answers)"):
		default:
			t.Errorf("a docs tool while it starts: %v %s", a.isError, a.text)
		}
	}

	waited := make(chan string, 1)
	go func() {
		_, out := callScript(t, ctx, c, map[string]any{"script": `return sdk.slow.say_hello({ name = "late" })`})
		waited <- string(out.Result)
	}()
	ctl.Release(t)
	if got := <-waited; got != `"Hello, late!"` {
		t.Errorf("a script that names it, once it runs: %s", got)
	}
	seen := map[string]bool{}
	for !seen[string(mcp.MethodNotificationToolsListChanged)] || !seen[string(mcp.MethodNotificationResourcesListChanged)] {
		select {
		case m := <-notified:
			seen[m] = true
		case <-ctx.Done():
			t.Fatalf("notifications: %v", seen)
		}
	}
	if apis := listAPIs(); !regexp.MustCompile(`sdk\.slow \(MCP server, [1-9]\d* tools\)`).MatchString(apis) || strings.Contains(apis, "starting") {
		t.Errorf("list_apis once it runs: %+v", apis)
	}
	if fns, _ := tool("list_functions", map[string]any{"api": "slow"}); !strings.Contains(fns, "sdk.slow.say_hello") {
		t.Errorf("list_functions once it runs: %s", fns)
	}
	if ctl.Starts() != 1 {
		t.Errorf("%d starts", ctl.Starts())
	}
}
