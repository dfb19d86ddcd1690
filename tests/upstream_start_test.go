//go:build unix

package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolscript/toolscript/host/sdk/upstream"
	"github.com/toolscript/toolscript/internal/testfile"
	"github.com/toolscript/toolscript/internal/testupstreams"
	"github.com/toolscript/toolscript/internal/testwait"
)

// controlledUpstream is the Python test upstream under the test's control
// (testupstreams.Controlled), and serve's flag naming it name; the test's
// cache directory is its own.
func controlledUpstream(t *testing.T, name string) (*testupstreams.Control, string) {
	t.Helper()
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	ctl := testupstreams.Controlled(t, testupstreams.Python(t))
	return ctl, "--mcp=" + name + "=" + testupstreams.Shell(ctl.Command)
}

func TestServeAnswersWhileUpstreamStarts(t *testing.T) {
	// An upstream held before it runs (standing for one that boots
	// slowly) does not hold serve's initialize: it is answered while the
	// upstream is provably still held. list_apis says the server is
	// starting; a script that does not name it runs at once, one that
	// names it waits within its own timeout; once the server runs, its
	// tools join the sdk and the client is told (tools and resources
	// list_changed).
	ctl, slow := controlledUpstream(t, "slow")
	ctl.Hold(t)
	c, _ := mcpClient(t, t.TempDir(), "", "--no-io", slow)
	ctx := testwait.Context(t)
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

// TestDocsToolsWaitForStartingUpstream: the docs tools and the sdk://
// resources asked while an upstream MCP server is held at its start (a
// real server, standing for one that boots slowly) wait for it, while the
// connection goes on answering (execute_script asked after them is
// answered first); once it is released their answers hold its tools.
// Ordered by events: the server reads the requests in order, and the
// server is released only after execute_script's answer.
func TestDocsToolsWaitForStartingUpstream(t *testing.T) {
	ctl, slow := controlledUpstream(t, "slow")
	ctl.Hold(t)
	r := startRaw(t, t.TempDir(), "--no-io", slow)
	r.initialize("2025-06-18")
	ctl.WaitHeld(t, 30*time.Second) // the upstream started, and waits at the gate

	docs := map[string]string{
		"list_functions":    `"method":"tools/call","params":{"name":"list_functions","arguments":{}}`,
		"get_function_docs": `"method":"tools/call","params":{"name":"get_function_docs","arguments":{"name":"say_hello"}}`,
		"search_docs":       `"method":"tools/call","params":{"name":"search_docs","arguments":{"query":"say hello to someone"}}`,
		"list_apis":         `"method":"tools/call","params":{"name":"list_apis","arguments":{}}`,
		"resource":          `"method":"resources/read","params":{"uri":"sdk://slow/functions/say_hello"}`,
	}
	for id, req := range docs {
		r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,%s}`, id, req))
	}
	r.send(`{"jsonrpc":"2.0","id":"script","method":"tools/call","params":{"name":"execute_script","arguments":{"script":"return 6 * 7"}}}`)
	if m := recvResponse(r); m["id"] != "script" {
		t.Fatalf("a docs tool answered while the server it waits for is held: %v", m)
	}

	ctl.Release(t)
	for n := len(docs); n > 0; n-- {
		m := recvResponse(r)
		id, _ := m["id"].(string)
		text := responseText(t, m)
		want := regexp.MustCompile(`say_hello`)
		if id == "list_apis" {
			want = regexp.MustCompile(`sdk\.slow \(MCP server, [1-9]\d* tools\)`)
		}
		if strings.Contains(text, "starting") || !want.MatchString(text) {
			t.Errorf("%s once the server runs: %s", id, text)
		}
		delete(docs, id)
	}
	if len(docs) != 0 {
		t.Errorf("no answer to %v", docs)
	}
}

// TestDocsToolsNameServerDown: a server that could not be started is
// not waited for; the docs say it is down, and a function not found
// while it is down names it.
func TestDocsToolsNameServerDown(t *testing.T) {
	ctl, broken := controlledUpstream(t, "broken")
	ctl.Break(t)
	c, _ := mcpClient(t, t.TempDir(), "", "--no-io", broken)
	ctx := testwait.Context(t)
	for _, q := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"list_functions", map[string]any{}, "-- not listed: the tools of the MCP server broken, which is down: The MCP server broken could not be started"},
		{"search_docs", map[string]any{"query": "say hello"}, "the MCP server broken, which is down"},
		{"get_function_docs", map[string]any{"name": "say_hello"}, `no function named "say_hello"; not listed are the tools of the MCP server broken, which is down`},
	} {
		text, _ := toolText(t, ctx, c, q.tool, q.args)
		if !strings.Contains(text, q.want) {
			t.Errorf("%s: %s\nwant it to contain %q", q.tool, text, q.want)
		}
	}
}

// recvResponse is the next response of r, skipping notifications.
func recvResponse(r *rawServer) map[string]any {
	for {
		m := r.recv()
		if _, ok := m["id"]; ok {
			return m
		}
	}
}

// responseText is the text of a tools/call or resources/read response.
func responseText(t *testing.T, m map[string]any) string {
	t.Helper()
	raw, _ := json.Marshal(m["result"])
	var res struct {
		Content  []struct{ Text string }
		Contents []struct{ Text string }
		IsError  bool
	}
	if err := json.Unmarshal(raw, &res); err != nil || m["result"] == nil {
		t.Fatalf("response %v", m)
	}
	var b strings.Builder
	for _, c := range append(res.Content, res.Contents...) {
		b.WriteString(c.Text)
	}
	return b.String()
}

// toolText calls a tool and returns its text and whether it is an error.
func toolText(t *testing.T, ctx context.Context, c *client.Client, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return strings.Join(textsOf(res), ""), res.IsError
}

func TestHostedStderrIsJSONLines(t *testing.T) {
	// Hosted mode's standard error is JSON lines only: an upstream's
	// banners, a line of 100 KB and a 20 MB flood of its standard error,
	// a spec's warning and an unusable io directory's, each come out as a
	// record (the upstream's
	// lines naming it), the long line cut, the flood dropped past the
	// rate and counted.
	dir := t.TempDir()
	spec := filepath.Join(dir, "empty.yaml")
	testfile.Write(t, spec, "openapi: 3.0.0\ninfo: {title: Empty, version: '1'}\nservers: [{url: 'http://127.0.0.1:9'}]\npaths: {}\n")
	banners := `echo "banner one" >&2; echo "banner two" >&2
head -c 100000 /dev/zero | tr '\0' 'x' >&2; echo >&2
yes flood | head -c 20000000 >&2
exec "$@"`
	server := append([]string{"sh", "-c", banners, "sh"}, testupstreams.Python(t)...)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	start := time.Now()
	notDir := filepath.Join(dir, "not-a-dir")
	testfile.Write(t, notDir, "")
	p := startServe(t, dir, "--io-dir="+notDir, "--api=empty="+spec, "--mcp=py="+testupstreams.Shell(server))
	p.stderr.wait(t, "banner two", p.exited)
	p.stderr.wait(t, fmt.Sprintf("dropping lines of its standard error: more than %d bytes a second (how many follows)", upstream.StderrRate), p.exited)
	// The count of dropped lines is said when the next line passes, or
	// when the server stops: stop serve and read everything.
	p.cmd.Process.Signal(syscall.SIGTERM)
	<-p.exited
	elapsed := time.Since(start)

	out := p.stderr.String()
	if bound := upstream.StderrBurst + int(upstream.StderrRate*elapsed.Seconds()) + 1<<20; len(out) > bound {
		t.Errorf("%d bytes of standard error in %s, more than %d", len(out), elapsed, bound)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("not a JSON line: %.200q", line)
		}
		msg, _ := rec["msg"].(string)
		if rec["time"] == nil || rec["level"] == nil || msg == "" {
			t.Errorf("a record without time, level or msg: %.200s", line)
		}
		py := rec["upstream"] == "py"
		switch {
		case py && rec["stream"] == "stderr" && (msg == "banner one" || msg == "banner two" || msg == "pyserver: ready"):
			seen[msg] = true
		case py && rec["stream"] == "stderr" && strings.HasPrefix(msg, "xxxx"):
			if !strings.HasSuffix(msg, "... (83616 more bytes of this line dropped)") {
				t.Errorf("the long line: ...%s", msg[len(msg)-60:])
			}
			seen["long"] = true
		case py && rec["stream"] == "stderr" && msg == "flood":
		case py && rec["level"] == "WARN" && strings.HasPrefix(msg, "dropped ") && strings.Contains(msg, " lines ("):
			seen["dropped"] = true
		case rec["api"] == "empty" && rec["level"] == "WARN" && msg == "the spec defines no operations":
			seen["spec warning"] = true
		case rec["level"] == "WARN" && strings.Contains(msg, "not-a-dir") && strings.Contains(msg, "is not a directory"):
			seen["io warning"] = true
		}
	}
	for _, want := range []string{"banner one", "banner two", "long", "dropped", "spec warning", "io warning"} {
		if !seen[want] {
			t.Errorf("no record of %s", want)
		}
	}
	if t.Failed() {
		t.Logf("standard error (%d bytes), its start:\n%.3000s", len(out), out)
	}
}

func TestHostedStartFailureIsJSON(t *testing.T) {
	// The error that stops serve --http at start-up is a JSON record too,
	// with the usual exit status.
	_, stderr, status := toolscript(t, t.TempDir(), "", "serve", "--http", "127.0.0.1:0", "--no-io", "--api=ghost=/nonexistent/ghost.yaml")
	if status != 2 {
		t.Errorf("status %d", status)
	}
	found := false
	for _, line := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("not a JSON line: %q", line)
		}
		if msg, _ := rec["msg"].(string); rec["level"] == "ERROR" && strings.Contains(msg, "api ghost") {
			found = true
		}
	}
	if !found {
		t.Errorf("no ERROR record naming the API: %s", stderr)
	}
}
