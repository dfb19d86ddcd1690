package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolscript/toolscript/internal/syncbuf"
	"github.com/toolscript/toolscript/internal/testclient"
	"github.com/toolscript/toolscript/internal/testfile"
	"github.com/toolscript/toolscript/internal/testwait"
)

// These tests drive `toolscript serve` as a subprocess: through mcp-go's
// client for the protocol's normal use, and through a raw pipe for
// malformed input, shutdown and the bytes on standard output.

const errorPrefix = "Script execution error: "

// mcpClient starts `toolscript serve ARGS` in dir and connects mcp-go's
// client to it. version pins the protocol revision ("" lets the client
// negotiate the newest).
func mcpClient(t testing.TB, dir, version string, args ...string) (*client.Client, *mcp.InitializeResult) {
	t.Helper()
	c, init, _ := mcpClientProcess(t, dir, version, args...)
	return c, init
}

// mcpClientProcess is mcpClient, and returns the server's process too.
func mcpClientProcess(t testing.TB, dir, version string, args ...string) (*client.Client, *mcp.InitializeResult, *exec.Cmd) {
	t.Helper()
	serve := newStdioServe(t, dir, nil, args...)
	var opts []client.ClientOption
	if version != "" {
		opts = append(opts, client.WithProtocolVersion(version))
	}
	c := client.NewClient(serve.transport, opts...)
	init, err := testclient.Start(t, c, version)
	if err != nil {
		t.Fatalf("toolscript serve: %v (stderr %s)", err, serve.stderr.String())
	}
	return c, init, serve.cmd
}

// stdioServe is `toolscript serve` over stdio, as a client's transport.
type stdioServe struct {
	transport *transport.Stdio
	// stderr is what the server writes on standard error, logged when
	// the test fails.
	stderr *syncbuf.Buffer
	// cmd is the server's process, once the transport has started it.
	cmd *exec.Cmd
}

// newStdioServe returns the transport that runs `toolscript serve ARGS`
// in dir, with env added to the environment (and no TOOLSCRIPT_IO_DIR
// from the test's own).
func newStdioServe(t testing.TB, dir string, env []string, args ...string) *stdioServe {
	s := &stdioServe{stderr: &syncbuf.Buffer{}}
	s.transport = transport.NewStdioWithOptions(binary, nil, append([]string{"serve"}, args...),
		transport.WithCommandFunc(func(ctx context.Context, command string, _ []string, args []string) (*exec.Cmd, error) {
			s.cmd = exec.CommandContext(ctx, command, args...)
			s.cmd.Dir = dir
			s.cmd.Env = append(append(os.Environ(), "TOOLSCRIPT_IO_DIR="), env...)
			return s.cmd, nil
		}),
		transport.WithCommandStderrWriter(s.stderr))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server stderr:\n%s", s.stderr.String())
		}
	})
	return s
}

// transports are those the suites that take one run over.
var transports = []string{"stdio", "http"}

// overEachTransport runs test, in parallel, with a client of a server in
// a new directory over each transport.
func overEachTransport(t *testing.T, test func(t *testing.T, c *client.Client)) {
	for _, over := range transports {
		t.Run(over, func(t *testing.T) {
			t.Parallel()
			test(t, mcpClientOver(t, over, t.TempDir()))
		})
	}
}

// mcpClientOver returns an initialized mcp-go client of `toolscript serve
// ARGS` in dir: over stdio, or over streamable HTTP (`serve --http` on a
// loopback address, without authentication).
func mcpClientOver(t *testing.T, over, dir string, args ...string) *client.Client {
	t.Helper()
	if over == "stdio" {
		c, _ := mcpClient(t, dir, "", args...)
		return c
	}
	return connectURL(t, startServe(t, dir, args...).url)
}

// connectURL returns an initialized mcp-go client of the hosted server at
// url, without a token (the server listens on loopback without auth).
func connectURL(t *testing.T, url string) *client.Client {
	t.Helper()
	return connectHTTP(t, url, "")
}

// execResult is the structured content of execute_script.
type execResult struct {
	Result       json.RawMessage `json:"result"`
	Logs         []string        `json:"logs"`
	FilesTouched []struct {
		Name  string `json:"name"`
		Op    string `json:"op"`
		Bytes int64  `json:"bytes"`
	} `json:"files_touched"`
	Error *struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
		Line    int    `json:"line"`
	} `json:"error"`
}

// callScript calls execute_script with the given arguments and checks the
// shape every result must have: structured content that validates against
// the declared output schema, the same JSON as text, and on failure the
// error text first. It reports problems with Errorf only, so that it can
// run on any goroutine.
func callScript(t *testing.T, ctx context.Context, c *client.Client, args map[string]any) (*mcp.CallToolResult, execResult) {
	t.Helper()
	var out execResult
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "execute_script", Arguments: args}})
	if err != nil {
		t.Errorf("tools/call: %v", err)
		return &mcp.CallToolResult{}, out
	}
	if len(res.RawStructuredContent) == 0 {
		t.Errorf("no structured content: %+v", res)
		return res, out
	}
	if err := json.Unmarshal(res.RawStructuredContent, &out); err != nil {
		t.Errorf("structured content %s: %v", res.RawStructuredContent, err)
		return res, out
	}
	validateOutput(t, c, res.RawStructuredContent)
	texts := textsOf(res)
	if len(texts) == 0 {
		t.Errorf("no text content: %+v", res)
		return res, out
	}
	jsonText := texts[len(texts)-1]
	if !jsonEqual(jsonText, string(res.RawStructuredContent)) {
		t.Errorf("text content %s differs from structured content %s", jsonText, res.RawStructuredContent)
	}
	if res.IsError != (out.Error != nil) {
		t.Errorf("isError %v but error %+v", res.IsError, out.Error)
	}
	if out.Error != nil && texts[0] != errorPrefix+out.Error.Message {
		t.Errorf("first text %q, want %q", texts[0], errorPrefix+out.Error.Message)
	}
	return res, out
}

func textsOf(res *mcp.CallToolResult) []string {
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	return texts
}

func jsonEqual(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

var outputSchemas sync.Map // *client.Client -> *jsonschema.Schema

// validateOutput checks structured content against execute_script's
// declared output schema.
func validateOutput(t *testing.T, c *client.Client, content json.RawMessage) {
	t.Helper()
	schema, ok := outputSchemas.Load(c)
	if !ok {
		tools, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
		if err != nil {
			t.Errorf("tools/list: %v", err)
			return
		}
		i := slices.IndexFunc(tools.Tools, func(tool mcp.Tool) bool { return tool.Name == "execute_script" })
		if i < 0 {
			t.Errorf("tools/list has no execute_script: %+v", tools)
			return
		}
		raw, err := json.Marshal(tools.Tools[i].OutputSchema)
		if len(tools.Tools[i].RawOutputSchema) > 0 {
			raw = tools.Tools[i].RawOutputSchema
		}
		if err != nil {
			t.Error(err)
			return
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			t.Errorf("output schema %s: %v", raw, err)
			return
		}
		compiler := jsonschema.NewCompiler()
		if err := compiler.AddResource("output.json", doc); err != nil {
			t.Error(err)
			return
		}
		compiled, err := compiler.Compile("output.json")
		if err != nil {
			t.Errorf("output schema %s: %v", raw, err)
			return
		}
		schema, _ = outputSchemas.LoadOrStore(c, compiled)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(content))
	if err != nil {
		t.Error(err)
		return
	}
	if err := schema.(*jsonschema.Schema).Validate(inst); err != nil {
		t.Errorf("structured content %s does not match the output schema: %v", content, err)
	}
}

func TestMCPInitialize(t *testing.T) {
	t.Parallel()
	for _, version := range []string{"", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"} {
		t.Run("version "+version, func(t *testing.T) {
			t.Parallel()
			c, init := mcpClient(t, t.TempDir(), version)
			want := version
			if want == "" {
				want = mcp.LATEST_PROTOCOL_VERSION // the newest mcp-go speaks, through server/discover
			}
			if init.ProtocolVersion != want || c.ProtocolVersion() != want {
				t.Errorf("protocol version %q (client %q), want %q", init.ProtocolVersion, c.ProtocolVersion(), want)
			}
			if init.ServerInfo.Name != "toolscript" {
				t.Errorf("server name %q", init.ServerInfo.Name)
			}
			if init.Capabilities.Tools == nil || init.Capabilities.Resources == nil {
				t.Errorf("capabilities %+v: want tools and resources", init.Capabilities)
			}
			if !strings.Contains(init.Instructions, "execute_script") || !strings.Contains(init.Instructions, "toolscript://docs/luau") {
				t.Errorf("instructions %q", init.Instructions)
			}
			// Every revision can run a script.
			_, out := callScript(t, testwait.Context(t), c, map[string]any{"script": "return 6 * 7"})
			if string(out.Result) != "42" {
				t.Errorf("result %s, want 42", out.Result)
			}
		})
	}
}

func TestMCPToolsList(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		over string
		io   bool
	}{{"stdio", true}, {"stdio", false}, {"http", true}, {"http", false}} {
		over, io := c.over, c.io
		t.Run(fmt.Sprintf("%s io %v", over, io), func(t *testing.T) {
			t.Parallel()
			var args []string
			if !io {
				args = append(args, "--no-io")
			} else if over == "http" {
				args = append(args, "--io-dir", "files") // off by default in hosted mode
			}
			c := mcpClientOver(t, over, t.TempDir(), append(args, "--timeout", "20s", "--max-timeout", "2m")...)
			tools, err := c.ListTools(testwait.Context(t), mcp.ListToolsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if len(tools.Tools) != 1 || tools.Tools[0].Name != "execute_script" {
				t.Fatalf("tools %+v, want execute_script only", tools.Tools)
			}
			tool := tools.Tools[0]
			raw, _ := json.Marshal(tool)
			var decoded struct {
				InputSchema struct {
					Type       string                    `json:"type"`
					Properties map[string]map[string]any `json:"properties"`
					Required   []string                  `json:"required"`
				} `json:"inputSchema"`
				OutputSchema struct {
					Type     string         `json:"type"`
					Props    map[string]any `json:"properties"`
					Required []string       `json:"required"`
				} `json:"outputSchema"`
				Annotations map[string]any `json:"annotations"`
			}
			if err := json.Unmarshal(raw, &decoded); err != nil {
				t.Fatal(err)
			}
			in := decoded.InputSchema
			if in.Type != "object" || in.Properties["script"]["type"] != "string" || in.Properties["timeout_ms"]["type"] != "integer" ||
				!slices.Equal(in.Required, []string{"script"}) {
				t.Errorf("input schema %+v", in)
			}
			out := decoded.OutputSchema
			if out.Type != "object" || out.Props["result"] == nil || out.Props["logs"] == nil || out.Props["files_touched"] == nil ||
				out.Props["error"] == nil || !slices.Equal(out.Required, []string{"result", "logs", "files_touched"}) {
				t.Errorf("output schema %+v", out)
			}
			wantAnnotations := map[string]any{"readOnlyHint": !io, "destructiveHint": io, "idempotentHint": !io, "openWorldHint": false}
			for k, v := range wantAnnotations {
				if decoded.Annotations[k] != v {
					t.Errorf("annotation %s = %v, want %v", k, decoded.Annotations[k], v)
				}
			}
			d := tool.Description
			for _, want := range []string{"json.encode", "json.decode", "print(", "progress(done: number, total: number?, message: string?)",
				"Example:", "files_touched", errorPrefix, "Limits per call: 20s", "up to 2 min", "64 MB", "string table math"} {
				if !strings.Contains(d, want) {
					t.Errorf("description lacks %q:\n%s", want, d)
				}
			}
			for _, ioWord := range []string{"io.open(path, mode?)", "io.lines(path)", "io.list(path?)", "os.remove(path)", "relative to that directory", "50 MiB written"} {
				if strings.Contains(d, ioWord) != io {
					t.Errorf("description with io %v: contains %q is %v", io, ioWord, !io)
				}
			}
		})
	}
}

func TestMCPResources(t *testing.T) {
	t.Parallel()
	for _, io := range []bool{true, false} {
		t.Run(fmt.Sprintf("io %v", io), func(t *testing.T) {
			t.Parallel()
			var args []string
			if !io {
				args = append(args, "--no-io")
			}
			c, _ := mcpClient(t, t.TempDir(), "", args...)
			ctx := testwait.Context(t)
			list, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, r := range list.Resources {
				names = append(names, r.Name)
				if r.URI != "toolscript://docs/"+r.Name || r.MIMEType != "text/markdown" || r.Description == "" {
					t.Errorf("resource %+v", r)
				}
				read, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: r.URI}})
				if err != nil {
					t.Fatalf("reading %s: %v", r.URI, err)
				}
				text := read.Contents[0].(mcp.TextResourceContents).Text
				if !strings.Contains(text, "```luau") || strings.Contains(text, "<no value>") {
					t.Errorf("%s has no Luau block or an unfilled value:\n%s", r.URI, text)
				}
				if r.Name != "luau" && !strings.Contains(text, r.Name+"(") {
					t.Errorf("%s lacks its signature:\n%s", r.URI, text)
				}
				if !io && strings.Contains(text, "io.open") {
					t.Errorf("%s documents io, which is off:\n%s", r.URI, text)
				}
			}
			sort.Strings(names)
			want := []string{"json.decode", "json.encode", "luau", "parallel", "print", "progress"}
			if io {
				want = append(want, "io.edit", "io.glob", "io.grep", "io.lines", "io.list", "io.open", "io.stat", "io.type", "os.remove", "os.rename")
				sort.Strings(want)
			}
			if !slices.Equal(names, want) {
				t.Errorf("resources %v, want %v", names, want)
			}
			if _, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "toolscript://docs/nope"}}); err == nil {
				t.Error("reading an unknown resource succeeded")
			}
		})
	}
}

func TestMCPExecute(t *testing.T) {
	t.Parallel()
	overEachTransport(t, testExecute)
}

func testExecute(t *testing.T, c *client.Client) {
	ctx := testwait.Context(t)

	t.Run("success", func(t *testing.T) {
		res, out := callScript(t, ctx, c, map[string]any{"script": `
			local sum = 0
			for i = 1, 10 do sum += i end
			print("sum", sum)
			print(1.5, nil, true)
			return {sum = sum, big = 3000000000, list = {1, 2, 3}, empty = {}, obj = json.object()}`})
		if res.IsError || out.Error != nil {
			t.Fatalf("failed: %+v", out.Error)
		}
		if !jsonEqual(string(out.Result), `{"big":3000000000,"empty":[],"list":[1,2,3],"obj":{},"sum":55}`) {
			t.Errorf("result %s", out.Result)
		}
		if !slices.Equal(out.Logs, []string{"sum\t55", "1.5\tnil\ttrue"}) {
			t.Errorf("logs %q", out.Logs)
		}
		if len(textsOf(res)) != 1 {
			t.Errorf("content %+v: want one text", res.Content)
		}
	})
	t.Run("no result", func(t *testing.T) {
		_, out := callScript(t, ctx, c, map[string]any{"script": `print("only")`})
		if string(out.Result) != "null" || out.Error != nil {
			t.Errorf("%+v", out)
		}
	})
	t.Run("runtime error", func(t *testing.T) {
		res, out := callScript(t, ctx, c, map[string]any{"script": "print('before')\nerror('boom')"})
		if !res.IsError || out.Error == nil || out.Error.Kind != "runtime" || out.Error.Message != "script:2: boom" || out.Error.Line != 2 {
			t.Fatalf("%+v %+v", res, out.Error)
		}
		if !slices.Equal(out.Logs, []string{"before"}) || string(out.Result) != "null" {
			t.Errorf("logs %q result %s", out.Logs, out.Result)
		}
		if texts := textsOf(res); texts[0] != "Script execution error: script:2: boom" {
			t.Errorf("text %q", texts[0])
		}
	})
	t.Run("syntax error", func(t *testing.T) {
		_, out := callScript(t, ctx, c, map[string]any{"script": "local = 1"})
		if out.Error == nil || out.Error.Kind != "syntax" || !strings.HasPrefix(out.Error.Message, "script:1:") {
			t.Errorf("%+v", out.Error)
		}
	})
	t.Run("memory", func(t *testing.T) {
		_, out := callScript(t, ctx, c, map[string]any{"script": "local t = {} for i = 1, 1e9 do t[i] = i end"})
		if out.Error == nil || out.Error.Kind != "memory" {
			t.Errorf("%+v", out.Error)
		}
	})
	t.Run("sandbox", func(t *testing.T) {
		_, out := callScript(t, ctx, c, map[string]any{"script": "return {require == nil, load == nil, os.execute == nil, os.getenv == nil}"})
		if string(out.Result) != "[true,true,true,true]" {
			t.Errorf("result %s", out.Result)
		}
	})
	t.Run("isolation", func(t *testing.T) {
		callScript(t, ctx, c, map[string]any{"script": "leaked = 1"})
		_, out := callScript(t, ctx, c, map[string]any{"script": "return leaked == nil"})
		if string(out.Result) != "true" {
			t.Errorf("a global survived: %s", out.Result)
		}
	})
}

func TestMCPIO(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c, _ := mcpClient(t, dir, "")
	ctx := testwait.Context(t)
	_, probe := callScript(t, ctx, c, map[string]any{"script": "return io ~= nil and io.open ~= nil"})
	if string(probe.Result) != "true" {
		t.Skip("the io global is absent from this build: the io library has not landed")
	}
	testfile.Tree(t, filepath.Join(dir, "toolscript-files"), map[string]string{"in.csv": "a,1\nb,2\nc,3\n", "old.txt": "x"})
	_, out := callScript(t, ctx, c, map[string]any{"script": `
		local total = 0
		for line in io.lines("in.csv") do total += tonumber(line:match(",(%d+)")) end
		io.open("out/total.txt", "w"):write("total=", total):close()
		local log = io.open("log.txt", "a") log:write("ran\n") log:close()
		os.remove("old.txt")
		print(table.concat(io.list(), ","))
		return total`})
	if out.Error != nil || string(out.Result) != "6" {
		t.Fatalf("result %s error %+v", out.Result, out.Error)
	}
	got, _ := json.Marshal(out.FilesTouched)
	if want := `[{"name":"log.txt","op":"append","bytes":4},{"name":"old.txt","op":"remove","bytes":0},{"name":"out/total.txt","op":"write","bytes":7}]`; string(got) != want {
		t.Errorf("files_touched %s, want %s", got, want)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "toolscript-files", "out", "total.txt")); err != nil || string(b) != "total=6" {
		t.Errorf("out/total.txt: %q %v", b, err)
	}

	// A failed script still reports what it wrote.
	res, out := callScript(t, ctx, c, map[string]any{"script": `io.open("partial.txt", "w"):write("12345"):close() error("after writing")`})
	if !res.IsError || len(out.FilesTouched) != 1 || out.FilesTouched[0].Name != "partial.txt" || out.FilesTouched[0].Bytes != 5 {
		t.Errorf("failure lost files_touched: %+v", out)
	}
	// Confinement holds over MCP too.
	_, out = callScript(t, ctx, c, map[string]any{"script": `io.open("../escape.txt", "w")`})
	if out.Error == nil || !strings.Contains(out.Error.Message, "../escape.txt") {
		t.Errorf("escape: %+v", out.Error)
	}
	if _, err := os.Stat(filepath.Join(dir, "escape.txt")); err == nil {
		t.Error("a script wrote outside the io directory")
	}
}

func TestMCPTimeout(t *testing.T) {
	t.Parallel()
	c, _ := mcpClient(t, t.TempDir(), "", "--max-timeout", "1s")
	ctx := testwait.Context(t)

	// The message names the limit that stopped the script; ctx's minute is
	// the watchdog for a limit not kept.
	_, out := callScript(t, ctx, c, map[string]any{"script": "while true do end", "timeout_ms": 200})
	if out.Error == nil || out.Error.Kind != "timeout" || !strings.Contains(out.Error.Message, "200ms") {
		t.Errorf("timeout_ms 200: %+v", out.Error)
	}

	// timeout_ms above the maximum is capped to it, and so is the default.
	for _, args := range []map[string]any{{"script": "while true do end", "timeout_ms": 3600000}, {"script": "while true do end"}} {
		_, out = callScript(t, ctx, c, args)
		if out.Error == nil || out.Error.Kind != "timeout" || !strings.Contains(out.Error.Message, "time limit of 1s") {
			t.Errorf("%v: %+v", args, out.Error)
		}
	}
}

// busy is a script that runs until its timeout.
const busy = "while true do end"

// callRunning starts a call of a script that reports progress before it
// runs on (a progress token goes with the call), and returns once the
// client has that notification: the script is then running on the server.
// The call's error, once it ends, arrives on the channel.
func callRunning(t *testing.T, ctx context.Context, c *client.Client, args map[string]any) <-chan error {
	t.Helper()
	token := fmt.Sprintf("running-%d", time.Now().UnixNano())
	running := make(chan struct{})
	var once sync.Once
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/progress" && n.Params.AdditionalFields["progressToken"] == token {
			once.Do(func() { close(running) })
		}
	})
	args = maps.Clone(args)
	args["script"] = "progress(1) " + args["script"].(string)
	done := make(chan error, 1)
	go func() {
		_, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{
			Name: "execute_script", Arguments: args, Meta: &mcp.Meta{ProgressToken: token}}})
		done <- err
	}()
	select {
	case <-running:
	case err := <-done:
		t.Fatalf("the call ended before its script reported progress: %v", err)
	case <-ctx.Done():
		t.Fatal("the script did not report progress")
	}
	return done
}

// busyServer serves with args, one call running a busy script until
// stopBusy (or the test's end) cancels it; the client, the test's context,
// and where the busy call's error arrives.
func busyServer(t *testing.T, args ...string) (c *client.Client, ctx context.Context, stopBusy context.CancelFunc, busyDone <-chan error) {
	t.Helper()
	c, _ = mcpClient(t, t.TempDir(), "", args...)
	ctx = testwait.Context(t)
	busyCtx, stopBusy := context.WithCancel(ctx)
	t.Cleanup(stopBusy)
	return c, ctx, stopBusy, callRunning(t, busyCtx, c, map[string]any{"script": busy, "timeout_ms": 60000})
}

func TestMCPConcurrency(t *testing.T) {
	t.Parallel()
	t.Run("calls run concurrently", func(t *testing.T) {
		t.Parallel()
		// The busy call runs until it is cancelled: the quick one can
		// only end while it runs if it took the free slot.
		c, ctx, _, busyDone := busyServer(t, "--max-concurrent", "2")
		_, out := callScript(t, ctx, c, map[string]any{"script": "return 1"})
		if string(out.Result) != "1" {
			t.Errorf("result %s", out.Result)
		}
		select {
		case err := <-busyDone:
			t.Errorf("the busy call ended (%v) before the quick one could run beside it", err)
		default:
		}
	})
	t.Run("the limit makes calls wait", func(t *testing.T) {
		t.Parallel()
		c, ctx, stopBusy, busyDone := busyServer(t, "--max-concurrent", "1")
		quick := make(chan execResult, 1)
		go func() {
			_, out := callScript(t, ctx, c, map[string]any{"script": "return 1"})
			quick <- out
		}()
		// While the busy call holds the only slot the quick one gets no
		// answer. This window can only miss a broken limit on a slow
		// machine, never fail a kept one.
		select {
		case out := <-quick:
			t.Fatalf("the second call finished (%s) while the first held the only slot", out.Result)
		case <-time.After(300 * time.Millisecond):
		}
		stopBusy() // the client cancels the busy call: its slot frees
		if err := <-busyDone; !errors.Is(err, context.Canceled) {
			t.Errorf("busy call: %v", err)
		}
		if out := <-quick; string(out.Result) != "1" {
			t.Errorf("result %s", out.Result)
		}
	})
	t.Run("many in flight", func(t *testing.T) {
		t.Parallel()
		c, _ := mcpClient(t, t.TempDir(), "")
		ctx := testwait.Context(t)
		var wg sync.WaitGroup
		for i := range 24 {
			wg.Go(func() {
				_, out := callScript(t, ctx, c, map[string]any{"script": fmt.Sprintf("print(%d) return %d * 2", i, i)})
				if string(out.Result) != fmt.Sprint(i*2) || !slices.Equal(out.Logs, []string{fmt.Sprint(i)}) {
					t.Errorf("call %d got %s %q", i, out.Result, out.Logs)
				}
			})
		}
		wg.Wait()
	})
}

func TestMCPCancellation(t *testing.T) {
	t.Parallel()
	// One slot: the next call can only run once the cancelled script stopped.
	c, _ := mcpClient(t, t.TempDir(), "", "--max-concurrent", "1")
	ctx := testwait.Context(t)

	callCtx, cancel := context.WithCancel(ctx)
	errc := callRunning(t, callCtx, c, map[string]any{"script": busy, "timeout_ms": 60000})
	cancel() // the client sends notifications/cancelled
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call returned %v", err)
	}
	// The cancelled script had a minute left: the next call gets its
	// answer within 30 seconds only if the cancellation freed the slot.
	next, cancelNext := context.WithTimeout(ctx, 30*time.Second)
	defer cancelNext()
	_, out := callScript(t, next, c, map[string]any{"script": "return 'next'"})
	if string(out.Result) != `"next"` {
		t.Errorf("result %s: the cancelled script kept its slot", out.Result)
	}

	// A call cancelled while it waits for a slot never runs.
	blocker, stopBlocker := context.WithCancel(ctx)
	defer stopBlocker()
	callRunning(t, blocker, c, map[string]any{"script": busy, "timeout_ms": 60000})
	waiting, cancelWaiting := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancelWaiting()
	if _, err := c.CallTool(waiting, mcp.CallToolRequest{Params: mcp.CallToolParams{
		Name: "execute_script", Arguments: map[string]any{"script": "return 1"}}}); err == nil {
		t.Error("a call waiting for the busy slot returned a result")
	}
	stopBlocker()
	_, out = callScript(t, ctx, c, map[string]any{"script": "return 2"})
	if string(out.Result) != "2" {
		t.Errorf("result %s", out.Result)
	}
}

func TestMCPProgress(t *testing.T) {
	t.Parallel()
	overEachTransport(t, testProgress)
}

func testProgress(t *testing.T, c *client.Client) {
	ctx := testwait.Context(t)
	var mu sync.Mutex
	var got []map[string]any
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/progress" {
			mu.Lock()
			got = append(got, n.Params.AdditionalFields)
			mu.Unlock()
		}
	})
	// About 600 progress calls over 0.6s of wall-clock time.
	script := progressSteps(600, 0.001) + `
		progress(n - 1) -- not an increase: skipped
		return n`
	start := time.Now()
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{
		Name: "execute_script", Arguments: map[string]any{"script": script}, Meta: &mcp.Meta{ProgressToken: "tok-1"}}})
	elapsed := time.Since(start)
	if err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	mu.Lock()
	notes := slices.Clone(got)
	mu.Unlock()
	if len(notes) == 0 {
		t.Fatal("no progress notification")
	}
	// Rate limited: at most one per 100ms, plus the first and the last.
	// The server's timer keeps them apart, so the bound holds however
	// loaded the machine is (a slower run only has more room).
	if max := int(elapsed/(100*time.Millisecond)) + 2; len(notes) > max {
		t.Errorf("%d notifications in %s: more than %d", len(notes), elapsed, max)
	}
	last := -1.0
	for _, n := range notes {
		p := n["progress"].(float64)
		if n["progressToken"] != "tok-1" || p <= last || n["total"] != 600.0 {
			t.Errorf("notification %v (after progress %v)", n, last)
		}
		last = p
	}
	// The final one is sent, and before the result.
	if final := notes[len(notes)-1]; final["progress"] != 600.0 || final["message"] != "step 600" {
		t.Errorf("last notification %v, want progress 600", final)
	}

	// Without a progress token, progress() sends nothing.
	mu.Lock()
	got = nil
	mu.Unlock()
	// A call's notifications come before its response, and both
	// transports hand notifications to the client as they read them: any
	// sent for this call is in got once callScript returns.
	callScript(t, ctx, c, map[string]any{"script": "for i = 1, 10 do progress(i, 10) end return 1"})
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 0 {
		t.Errorf("notifications without a progress token: %v", got)
	}
}

// rawServer is `toolscript serve` on a raw pipe.
type rawServer struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan []byte
	stderr *syncbuf.Buffer
	exited chan struct{} // closed when the process has exited
	err    error         // its exit error, set before exited is closed
}

func startRaw(t *testing.T, dir string, args ...string) *rawServer {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"serve"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TOOLSCRIPT_IO_DIR=")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	r := &rawServer{t: t, cmd: cmd, stdin: stdin, lines: make(chan []byte, 100), stderr: &syncbuf.Buffer{}, exited: make(chan struct{})}
	cmd.Stderr = r.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			r.lines <- slices.Clone(sc.Bytes())
		}
		close(r.lines)
		r.err = cmd.Wait()
		close(r.exited)
	}()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-r.exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
		}
		if t.Failed() {
			t.Logf("server stderr:\n%s", r.stderr.String())
		}
	})
	return r
}

func (r *rawServer) send(line string) {
	r.t.Helper()
	if _, err := io.WriteString(r.stdin, line+"\n"); err != nil {
		r.t.Fatalf("writing to the server: %v", err)
	}
}

// recv returns the next message on standard output, which must be one JSON
// object per line.
func (r *rawServer) recv() map[string]any {
	r.t.Helper()
	select {
	case line, ok := <-r.lines:
		if !ok {
			r.t.Fatalf("the server closed its output (stderr %s)", r.stderr.String())
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil || m["jsonrpc"] != "2.0" {
			r.t.Fatalf("standard output holds a line that is not a JSON-RPC message: %q", line)
		}
		return m
	case <-time.After(30 * time.Second):
		r.t.Fatalf("no message from the server (stderr %s)", r.stderr.String())
	}
	return nil
}

// initialize performs the handshake.
func (r *rawServer) initialize(version string) map[string]any {
	r.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"` + version +
		`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	m := r.recv()
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return m
}

// TestMCPMalformedInput checks, through the binary, that the size limits
// of --max-script-bytes reach the server: a script larger than the limit
// is the tool's error, a message larger than the largest request is an
// Invalid Request with its id; the server keeps serving. The protocol's
// edge cases themselves (malformed lines, ids, arguments, numbers,
// methods, resources) are the cases of host/serve/mcpserver/testdata/conformance,
// run against the server on both transports.
func TestMCPMalformedInput(t *testing.T) {
	t.Parallel()
	r := startRaw(t, t.TempDir(), "--max-script-bytes", "1000")
	r.initialize("2025-11-25")
	r.send(`{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"execute_script","arguments":{"script":"` + strings.Repeat("x", 2000) + `"}}}`)
	m := r.recv()
	res, _ := m["result"].(map[string]any)
	if m["id"] != 14.0 || res == nil || res["isError"] != true {
		t.Fatalf("a script too large: %v", m)
	}
	text := res["content"].([]any)[0].(map[string]any)["text"].(string)
	sc := res["structuredContent"].(map[string]any)
	if text != errorPrefix+"the script is 2000 bytes, more than the 1000 bytes this server accepts" || sc["error"].(map[string]any)["kind"] != "limit" {
		t.Errorf("a script too large: %v", res)
	}

	r.send(`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"execute_script","arguments":{"script":"` +
		strings.Repeat("y", 1100000) + `"}},"id":"huge"}`)
	m = r.recv()
	e, _ := m["error"].(map[string]any)
	if m["id"] != "huge" || e == nil || e["code"] != -32600.0 ||
		e["message"] != "request too large: more than 1054576 bytes (a script may be at most 1000 bytes)" {
		t.Errorf("a message too large: %v", m)
	}

	r.send(`{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"execute_script","arguments":{"script":"return 'ok'"}}}`)
	m = r.recv()
	if m["id"] != 99.0 || m["result"].(map[string]any)["structuredContent"].(map[string]any)["result"] != "ok" {
		t.Errorf("after the malformed input: %v", m)
	}
}

func TestMCPStdoutCarriesProtocolOnly(t *testing.T) {
	t.Parallel()
	r := startRaw(t, t.TempDir(), "--max-concurrent", "1")
	r.initialize("2025-06-18")
	r.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_script","arguments":{"script":"for i = 1, 100 do print('line', i) end return 1"}}}`)
	m := r.recv() // recv fails on any line that is not a JSON-RPC message
	logs := m["result"].(map[string]any)["structuredContent"].(map[string]any)["logs"].([]any)
	if len(logs) != 100 || logs[99] != "line\t100" {
		t.Errorf("logs %v", logs)
	}
	r.stdin.Close()
	for line := range r.lines {
		t.Errorf("unexpected output after the answer: %q", line)
	}
	<-r.exited
	if r.err != nil {
		t.Errorf("exit: %v", r.err)
	}
	if !strings.Contains(r.stderr.String(), "toolscript serve: ready (io directory: ") || !strings.Contains(r.stderr.String(), "; 1 script at once)") {
		t.Errorf("stderr %q", r.stderr.String())
	}
}

func TestMCPShutdown(t *testing.T) {
	t.Parallel()
	stops := []struct {
		name string
		stop func(*rawServer)
	}{
		{"SIGTERM", func(r *rawServer) { r.cmd.Process.Signal(syscall.SIGTERM) }},
		{"SIGINT", func(r *rawServer) { r.cmd.Process.Signal(os.Interrupt) }},
		// After the end of input the server finishes its calls, but a
		// signal still stops them at once.
		{"SIGTERM after the end of input", func(r *rawServer) { r.stdin.Close(); r.cmd.Process.Signal(syscall.SIGTERM) }},
	}
	for _, s := range stops {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			r := startRaw(t, dir)
			r.initialize("2025-11-25")
			// A running script holding an open file with buffered bytes:
			// its progress notification tells it is in its loop.
			r.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_script","arguments":{"script":"local f = io.open('held.txt', 'w') f:write('written before the stop') progress(1) while true do end","timeout_ms":60000},"_meta":{"progressToken":"held"}}}`)
			if m := r.recv(); m["method"] != "notifications/progress" {
				t.Fatalf("want the script's progress, got %v", m)
			}
			s.stop(r)
			// The server keeps running after a script's timeout: only the
			// signal ends it. The minute is a watchdog, not a target.
			select {
			case <-r.exited:
				if r.err != nil {
					t.Errorf("exit: %v (stderr %s)", r.err, r.stderr.String())
				}
			case <-time.After(time.Minute):
				t.Fatal("the server did not stop")
			}
			// The script was stopped and its file closed, with its bytes.
			if b, err := os.ReadFile(filepath.Join(dir, "toolscript-files", "held.txt")); err != nil || string(b) != "written before the stop" {
				t.Errorf("held.txt: %q %v", b, err)
			}
		})
	}
}

// TestMCPEndOfInput feeds a server its requests and closes its input at
// once, as `toolscript serve < requests.jsonl` does: every call already
// read runs to its end, with one slot for three, and is answered before the
// server exits.
func TestMCPEndOfInput(t *testing.T) {
	t.Parallel()
	r := startRaw(t, t.TempDir(), "--max-concurrent", "1")
	var input strings.Builder
	input.WriteString(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}` + "\n")
	input.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	for i := 1; i <= 3; i++ {
		fmt.Fprintf(&input, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"execute_script","arguments":{"script":"local t = os.clock() while os.clock() - t < 0.2 do end io.open('f%d.txt', 'w'):write('%d'):close() return %d"}}}`+"\n", i, i, i, i)
	}
	input.WriteString(`{"jsonrpc":"2.0","id":"last","method":"ping"}`) // no final newline
	r.send(input.String())
	r.stdin.Close()
	answered := map[string]bool{}
	for line := range r.lines {
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("output %q", line)
		}
		id := fmt.Sprint(m["id"])
		answered[id] = true
		if res, ok := m["result"].(map[string]any); ok && res["structuredContent"] != nil {
			sc := res["structuredContent"].(map[string]any)
			if sc["error"] != nil || fmt.Sprint(sc["result"]) != id {
				t.Errorf("call %s: %v", id, sc)
			}
		}
	}
	<-r.exited
	if r.err != nil {
		t.Errorf("exit: %v", r.err)
	}
	for _, id := range []string{"init", "1", "2", "3", "last"} {
		if !answered[id] {
			t.Errorf("request %s was not answered", id)
		}
	}
}

// TestMCPIODisabled checks that using io on a server without it says so.
func TestMCPIODisabled(t *testing.T) {
	t.Parallel()
	c, _ := mcpClient(t, t.TempDir(), "", "--no-io")
	ctx := testwait.Context(t)
	for script, want := range map[string]string{
		`local f = io.open("x.txt", "w")`: "script:1: attempt to index nil with 'open' (file access is disabled on this server: io, os.remove, os.rename and file are not available)",
		"print(1)\nos.remove('x.txt')":    "script:2: attempt to call a nil value (file access is disabled on this server: io, os.remove, os.rename and file are not available)",
		`local t = nil return t.open`:     "script:1: attempt to index nil with 'open'",
	} {
		_, out := callScript(t, ctx, c, map[string]any{"script": script})
		if out.Error == nil || out.Error.Message != want {
			t.Errorf("%s: %+v, want %q", script, out.Error, want)
		}
	}
}

// TestMCPClientGone closes the server's standard output while a script
// runs and reports progress, as a client that exits without closing its
// end of the input does: the server stops the script and exits instead of
// running it for its whole minute.
func TestMCPClientGone(t *testing.T) {
	t.Parallel()
	clientHangsUp(t, hangUp{
		// Progress notifications go to initialized clients only.
		before: []string{
			rawInitialize,
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_script","arguments":{"script":"local i = 0 while true do i += 1 if i % 100000 == 0 then progress(i) end end","timeout_ms":60000},"_meta":{"progressToken":"p"}}}`,
		},
		// The two lines read: the handshake's response and a first notification.
		watchdog: 30 * time.Second,
		stderr:   "the client is gone",
	})
}

// TestMCPClientKilledMidCall: a client that goes away while a call runs
// and writes nothing (no progress, so no write fails) is noticed by the
// hang-up of standard output: the server stops the script and exits, long
// before the script's own timeout.
func TestMCPClientKilledMidCall(t *testing.T) {
	t.Parallel()
	clientHangsUp(t, hangUp{
		before: []string{rawInitialize, `{"jsonrpc":"2.0","id":"ping","method":"ping"}`},
		// A call that runs for five minutes and writes nothing meanwhile;
		// standard input stays open.
		after:    []string{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_script","arguments":{"script":"while true do end","timeout_ms":300000}}}`},
		watchdog: 2 * time.Minute, // the script runs for 5
		stderr:   "the client is gone (its end of standard output is closed)",
	})
}

// rawInitialize is an initialize request written by hand.
const rawInitialize = `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// hangUp is a client of `serve --no-io` over its pipes that goes away
// (closes the server's standard output) with its standard input open.
type hangUp struct {
	before   []string      // lines written before the server's first two lines are read
	after    []string      // lines written after them, just before the hang-up
	watchdog time.Duration // how long the server may take to exit after it
	stderr   string        // what the server's standard error says
}

// clientHangsUp runs h: the server exits without error within the watchdog
// and says h.stderr.
func clientHangsUp(t *testing.T, h hangUp) {
	t.Helper()
	cmd := exec.Command(binary, "serve", "--no-io")
	cmd.Dir = t.TempDir()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &syncbuf.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	for _, line := range h.before {
		io.WriteString(stdin, line+"\n")
	}
	out := bufio.NewReader(stdout)
	for range 2 {
		if _, err := out.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	for _, line := range h.after {
		io.WriteString(stdin, line+"\n")
	}
	stdout.Close()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("exit: %v (stderr %s)", err, stderr.String())
		}
	case <-time.After(h.watchdog):
		cmd.Process.Kill()
		t.Fatalf("the server kept running without a client (stderr %s)", stderr.String())
	}
	if !strings.Contains(stderr.String(), h.stderr) {
		t.Errorf("stderr %q", stderr.String())
	}
}

// TestMCPDocumentedExamplesRun runs the example of the tool description and
// of every documentation resource, so that what the model is shown works.
func TestMCPDocumentedExamplesRun(t *testing.T) {
	t.Parallel()
	for _, io := range []bool{true, false} {
		t.Run(fmt.Sprintf("io %v", io), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			files := filepath.Join(dir, "toolscript-files")
			testfile.Tree(t, files, map[string]string{
				"sales.csv":      "id,amount\n1,2.5\n2,4\n",
				"log.txt":        "INFO start\nWARN slow\nINFO done\n",
				"data/words.txt": "a\nlongest\nmid\n",
				"reports/x.csv":  "x\n",
				"config.ini":     "debug = false\n",
				"notes.md":       "TODO one\nTODO two\n",
				"logs/app.log":   "INFO up\nERROR down\n",
			})
			var args []string
			if !io {
				args = append(args, "--no-io")
			}
			c, _ := mcpClient(t, dir, "", args...)
			ctx := testwait.Context(t)

			examples := map[string]string{}
			tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			desc := tools.Tools[0].Description
			i := strings.Index(desc, "Example:\n")
			if i < 0 {
				t.Fatalf("no example in the description:\n%s", desc)
			}
			examples["tool description"] = desc[i+len("Example:\n"):]
			list, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range list.Resources {
				read, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: r.URI}})
				if err != nil {
					t.Fatal(err)
				}
				text := read.Contents[0].(mcp.TextResourceContents).Text
				// The last Luau block is the example; the first of a
				// function's page is its signature.
				blocks := strings.Split(text, "```luau\n")
				example := blocks[len(blocks)-1]
				examples[r.URI] = example[:strings.Index(example, "```")]
			}
			for name, script := range examples {
				_, out := callScript(t, ctx, c, map[string]any{"script": script})
				if out.Error != nil {
					t.Errorf("the example of %s fails: %+v\n%s", name, out.Error, script)
				}
			}
		})
	}
}
