//go:build unix

package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/contract/sdkcall"
	"github.com/toolscript/toolscript/internal/syncbuf"
	"github.com/toolscript/toolscript/internal/testupstreams"
	"github.com/toolscript/toolscript/internal/testwait"
)

func stdio(name string, argv []string) Config {
	return Config{Name: name, Command: argv[0], Args: argv[1:]}
}

func start(t *testing.T, opts Options, cfgs ...Config) *Set {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	set, err := Start(ctx, cfgs, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(set.Close)
	return set
}

// call calls tool (its MCP name) of server with the script's argument list.
func call(ctx context.Context, t *testing.T, set *Set, server, tool, args string) *sdkcall.Response {
	t.Helper()
	var api *catalog.API
	for _, a := range set.APIs() {
		if a.Name == server {
			api = a
		}
	}
	if api == nil {
		t.Fatalf("no server %s", server)
	}
	for _, f := range api.Functions {
		if f.Tool == tool {
			return set.CallTool(ctx, api, f, "sdk."+server+"."+f.Name, json.RawMessage(args))
		}
	}
	t.Fatalf("server %s has no tool %s", server, tool)
	return nil
}

func TestEverything(t *testing.T) {
	// server-everything over stdio and over streamable HTTP answer alike.
	for _, tc := range []struct {
		name string
		cfg  func(t *testing.T) Config
	}{
		{"stdio", func(t *testing.T) Config { return stdio("ev", testupstreams.Everything(t)) }},
		{"http", func(t *testing.T) Config { return Config{Name: "ev", URL: testupstreams.EverythingHTTP(t)} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stderr := &syncbuf.Buffer{}
			set := start(t, Options{Stderr: stderr}, tc.cfg(t))
			api := set.APIs()[0]
			if api.Kind != catalog.MCP || api.Function("get_sum") == nil || api.Function("get_sum").Tool != "get-sum" {
				t.Fatalf("tools %+v", api.Functions)
			}
			ctx := context.Background()
			for _, c := range []struct{ tool, args, json, text, fail string }{
				{tool: "echo", args: `[{"message":"hi"}]`, text: "Echo: hi"},
				{tool: "get-sum", args: `[{"a":2,"b":3}]`, text: "The sum of 2 and 3 is 5."},
				{tool: "get-structured-content", args: `[{"location":"Chicago"}]`, json: `"temperature"`},
				{tool: "get-tiny-image", args: `[]`, json: `"type":"image"`},
				{tool: "get-sum", args: `[{"a":2}]`, fail: "sdk.ev.get_sum: missing required argument 'b'"},
				{tool: "get-sum", args: `[{"a":"2","b":3}]`, fail: "sdk.ev.get_sum: argument 'a': got string, want number"},
				{tool: "echo", args: `[{"mesage":"hi"}]`, fail: "sdk.ev.echo: unknown argument 'mesage' (did you mean 'message'?)"},
				{tool: "echo", args: `[{"message":"a"},{"message":"b"}]`, fail: "takes one argument"},
				{tool: "get-structured-content", args: `[{"location":"Paris"}]`, fail: "argument 'location': value must be one of"},
			} {
				r := call(ctx, t, set, "ev", c.tool, c.args)
				switch {
				case c.fail != "":
					if r.Fail != sdkcall.Argument || !strings.Contains(r.Message, c.fail) {
						t.Errorf("%s %s: %+v, want argument error %q", c.tool, c.args, r, c.fail)
					}
				case c.text != "":
					if r.Fail != sdkcall.OK || string(r.Text) != c.text || r.JSON != nil {
						t.Errorf("%s: %+v, want text %q", c.tool, r, c.text)
					}
				default:
					if r.Fail != sdkcall.OK || !strings.Contains(string(r.JSON), c.json) {
						t.Errorf("%s: %+v %s, want JSON with %s", c.tool, r, r.JSON, c.json)
					}
				}
			}
			if strings.Contains(tc.name, "stdio") && !strings.Contains(stderr.String(), "[ev] ") {
				t.Errorf("the server's stderr is not prefixed with its name: %q", stderr.String())
			}
		})
	}
}

func TestFilesystem(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("alpha\nbeta"), 0o644); err != nil {
		t.Fatal(err)
	}
	set := start(t, Options{Stderr: &syncbuf.Buffer{}}, stdio("files", testupstreams.Filesystem(t, dir)))
	r := call(context.Background(), t, set, "files", "read_text_file", `[{"path":`+quote(filepath.Join(dir, "a.txt"))+`}]`)
	if r.Fail != sdkcall.OK || !strings.Contains(string(r.JSON)+string(r.Text), "alpha") {
		t.Fatalf("%+v %s", r, r.JSON)
	}
	// A path outside the allowed directory: the tool's error, raised with its content.
	r = call(context.Background(), t, set, "files", "read_text_file", `[{"path":"/etc/hostname"}]`)
	if r.Fail != sdkcall.Upstream || !strings.HasPrefix(r.Message, "sdk.files.read_text_file: ") || !strings.Contains(string(r.Content), `"type":"text"`) {
		t.Fatalf("%+v", r)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestPythonResults(t *testing.T) {
	set := start(t, Options{Stderr: &syncbuf.Buffer{}}, stdio("py", testupstreams.Python(t)))
	ctx := context.Background()
	for _, c := range []struct{ tool, args, json, text, fail string }{
		{tool: "weather", args: `[{"city":"Paris"}]`, json: `{"city":"Paris","celsius":21.5,"conditions":"sunny"}`},
		{tool: "say-hello", args: `[{"name":"Ada"}]`, text: "Hello, Ada!"},
		{tool: "two_lines", args: `[]`, text: "first\nsecond"},
		{tool: "picture", args: `[]`, json: `"mimeType":"image/png"`},
		{tool: "fail", args: `[{"reason":"because"}]`, fail: "sdk.py.fail: "},
	} {
		r := call(ctx, t, set, "py", c.tool, c.args)
		switch {
		case c.fail != "":
			if r.Fail != sdkcall.Upstream || !strings.HasPrefix(r.Message, c.fail) || !strings.Contains(r.Message, "because") || !strings.Contains(string(r.Content), "because") {
				t.Errorf("%s: %+v", c.tool, r)
			}
		case c.text != "":
			if r.Fail != sdkcall.OK || string(r.Text) != c.text {
				t.Errorf("%s: %+v", c.tool, r)
			}
		default:
			if r.Fail != sdkcall.OK || !strings.Contains(string(r.JSON), c.json) {
				t.Errorf("%s: %+v %s", c.tool, r, r.JSON)
			}
		}
	}
	api := set.APIs()[0]
	if f := api.Function("say_hello"); f == nil || f.Tool != "say-hello" || f.InputSchema == nil || f.InputSchema.Property("name") == nil {
		t.Errorf("say-hello is not sdk.py.say_hello with its schema: %+v", f)
	}
	if f := api.Function("weather"); f == nil || f.OutputSchema == nil {
		t.Errorf("weather has no output schema: %+v", f)
	}
}

func TestKilledMidCall(t *testing.T) {
	// The server exits during a call: the call fails clearly, the next one
	// restarts it.
	stderr := &syncbuf.Buffer{}
	set := start(t, Options{Stderr: stderr}, stdio("py", testupstreams.Python(t)))
	ctx := context.Background()
	first := set.byName["py"].conn.proc.proc.Pid
	r := call(ctx, t, set, "py", "crash", `[]`)
	if r.Fail != sdkcall.Upstream || !strings.Contains(r.Message, "sdk.py.crash: the MCP server py exited") || !strings.Contains(r.Message, "restarted on the next call") {
		t.Fatalf("%+v", r)
	}
	r = call(ctx, t, set, "py", "say-hello", `[{"name":"again"}]`)
	if r.Fail != sdkcall.OK || string(r.Text) != "Hello, again!" {
		t.Fatalf("after a restart: %+v", r)
	}
	if second := set.byName["py"].conn.proc.proc.Pid; second == first || testupstreams.Alive(first) {
		t.Errorf("not restarted: pid %d then %d", first, second)
	}
	if !strings.Contains(stderr.String(), "[py] pyserver: crashing on purpose") {
		t.Errorf("stderr %q", stderr.String())
	}
}

func TestHungCall(t *testing.T) {
	// A call the server never answers fails after the server's timeout.
	cfg := stdio("py", testupstreams.Python(t))
	cfg.Timeout = 500 * time.Millisecond
	set := start(t, Options{Stderr: &syncbuf.Buffer{}}, cfg)
	r := call(context.Background(), t, set, "py", "hang", `[]`)
	if r.Fail != sdkcall.Upstream || !strings.Contains(r.Message, "sdk.py.hang: the MCP server py did not answer within 500ms") {
		t.Fatalf("%+v", r)
	}
}

func TestNeverInitializes(t *testing.T) {
	// A server that never answers initialize is a start-up error naming it,
	// and its process (group) is gone afterwards.
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err := Start(ctx, []Config{{Name: "mute", Command: "sh", Args: []string{"-c", "sleep 300 & sleep 300"}}}, Options{Stderr: &syncbuf.Buffer{}})
	if err == nil || !strings.Contains(err.Error(), "mcp server mute") {
		t.Fatalf("err %v", err)
	}
	_, err = Start(context.Background(), []Config{{Name: "missing", Command: "/nonexistent/server"}}, Options{Stderr: &syncbuf.Buffer{}})
	if err == nil || !strings.Contains(err.Error(), "mcp server missing") {
		t.Fatalf("err %v", err)
	}
}

func TestListChanged(t *testing.T) {
	changed := make(chan string, 4)
	set := start(t, Options{Stderr: &syncbuf.Buffer{}, OnToolsChanged: func(s string) { changed <- s }}, stdio("py", testupstreams.Python(t)))
	if set.APIs()[0].Function("added") != nil {
		t.Fatal("added before add_tool")
	}
	if r := call(context.Background(), t, set, "py", "add_tool", `[]`); r.Fail != sdkcall.OK {
		t.Fatalf("%+v", r)
	}
	select {
	case s := <-changed:
		if s != "py" {
			t.Fatalf("changed %s", s)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no OnToolsChanged after notifications/tools/list_changed")
	}
	if set.APIs()[0].Function("added") == nil {
		t.Fatalf("tools after the change: %+v", set.APIs()[0].Functions)
	}
	if r := call(context.Background(), t, set, "py", "added", `[{"x":7}]`); r.Fail != sdkcall.OK || !strings.Contains(string(r.JSON)+string(r.Text), "added 7") {
		t.Fatalf("%+v", r)
	}
}

func TestCancelReachesUpstream(t *testing.T) {
	// A cancelled call sends notifications/cancelled: the tool sees it.
	log := filepath.Join(t.TempDir(), "log")
	cfg := stdio("py", testupstreams.Python(t))
	cfg.Env = map[string]string{"PYSERVER_LOG": log}
	set := start(t, Options{Stderr: &syncbuf.Buffer{}}, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *sdkcall.Response)
	go func() { done <- call(ctx, t, set, "py", "sleep", `[{"seconds":60,"tag":"c1"}]`) }()
	waitForLine(t, log, "started sleep c1")
	cancel()
	if r := <-done; r.Fail != sdkcall.Upstream || r.Message != "sdk.py.sleep: cancelled" {
		t.Fatalf("%+v", r)
	}
	waitForLine(t, log, "cancelled sleep c1")
}

// waitForLine waits until the file at path has line.
func waitForLine(t *testing.T, path, line string) {
	t.Helper()
	testwait.Until(t, fmt.Sprintf("%s with the line %q", path, line), func() bool {
		b, _ := os.ReadFile(path)
		return strings.Contains(string(b), line+"\n")
	})
}

func TestConcurrentCalls(t *testing.T) {
	// 8 calls on one connection are in flight at once: each waits for the
	// other 7, which a serialised connection would never deliver.
	set := start(t, Options{Stderr: &syncbuf.Buffer{}}, stdio("py", testupstreams.Python(t)))
	var wg sync.WaitGroup
	results := make([]*sdkcall.Response, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = call(context.Background(), t, set, "py", "gather", `[{"key":"k","n":8}]`)
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r.Fail != sdkcall.OK || string(r.Text) != "8 together" {
			t.Errorf("call %d: %+v", i, r)
		}
	}
}

func TestIdentifier(t *testing.T) {
	for in, want := range map[string]string{
		"read_file": "read_file", "read-file": "read_file", "get.sum": "get_sum", "2fa": "_2fa",
		"end": "end_", "": "_", "héllo": "h_llo",
	} {
		if got := Identifier(in); got != want || !catalog.IsIdentifier(got) {
			t.Errorf("Identifier(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzIdentifier(f *testing.F) {
	for _, s := range []string{"read-file", "2fa", "end", "", "a b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if id := Identifier(s); !catalog.IsIdentifier(id) {
			t.Fatalf("Identifier(%q) = %q is not an identifier", s, id)
		}
	})
}

func TestSlowStartingModernServer(t *testing.T) {
	// A modern-only server (the Python SDK's) that boots for longer than
	// mcp-go's default server/discover probe (5 s) is still recognised as
	// modern, not refused as a legacy one.
	cfg := stdio("py", testupstreams.Python(t))
	cfg.Env = map[string]string{"PYSERVER_BOOT_DELAY": "7"}
	set := start(t, Options{Stderr: &syncbuf.Buffer{}}, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if r := call(ctx, t, set, "py", "say-hello", `[{"name":"slow"}]`); r.Fail != sdkcall.OK || string(r.Text) != "Hello, slow!" {
		t.Fatalf("%+v", r)
	}
}
