package app_test

import (
	"bufio"
	"encoding/json"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolscript/toolscript/host/app"
	"github.com/toolscript/toolscript/host/config"
	"github.com/toolscript/toolscript/host/serve/auth"
	"github.com/toolscript/toolscript/host/serve/auth/authtest"
	"github.com/toolscript/toolscript/host/serve/mcpserver"
	"github.com/toolscript/toolscript/internal/syncbuf"
	"github.com/toolscript/toolscript/internal/testapi"
	"github.com/toolscript/toolscript/internal/testwait"
)

// served is a serve of a test's own: its stderr, and a client of it per
// user (hosted) or its one client (stdio).
type served struct {
	stderr *syncbuf.Buffer
	// connect returns a client for user ("" under stdio).
	connect func(user string) *client.Client
}

// serveRecording serves file in-process, with an io directory of its own
// (holding data.bin, 64 KiB), hosted behind a test issuer when hosted,
// else over stdio.
func serveRecording(t *testing.T, file *config.File, hosted bool) *served {
	t.Helper()
	ioDir := t.TempDir()
	data := func(dir string) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "data.bin"), []byte(strings.Repeat("d", 64<<10)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	data(ioDir)
	var flags config.ServerFlags
	var hostedFlags config.HostedFlags
	var ln net.Listener
	var iss *authtest.Issuer
	mode := config.Stdio
	if hosted {
		var err error
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		iss = authtest.NewIssuer(t, authtest.Options{PlainHTTP: true})
		flags.HTTP, mode = ln.Addr().String(), config.Hosted
		hostedFlags.Auth = config.Auth{Authority: iss.URL, Audience: iss.Audience}
	}
	server, err := config.ResolveServer(file, flags)
	if err != nil {
		t.Fatal(err)
	}
	settings, err := config.Resolve(file, config.Flags{IODir: ioDir}, os.Getenv, mode)
	if err != nil {
		t.Fatal(err)
	}
	s := &served{stderr: &syncbuf.Buffer{}}
	cfg := app.ServeConfig{File: file, Server: server, Settings: settings, Hosted: hostedFlags,
		SDK: app.SDKOptions{Stderr: io.Discard}, Version: "test", Stderr: s.stderr, Listener: ln}
	if !hosted {
		c, _ := serveStdio(t, cfg)
		s.connect = func(string) *client.Client { return c }
		return s
	}
	serveListening(t, cfg)
	s.connect = func(user string) *client.Client {
		data(filepath.Join(ioDir, auth.User{Issuer: iss.URL, Subject: user}.DirName()))
		return hostedClient(t, "http://"+ln.Addr().String(), iss.Token(t, "ES256", user))
	}
	return s
}

// call runs execute_script with args and returns its result.
func call(t *testing.T, c *client.Client, args map[string]any) map[string]json.RawMessage {
	t.Helper()
	res, err := c.CallTool(testwait.Context(t), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: mcpserver.ToolName, Arguments: args}})
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]json.RawMessage
	if err := json.Unmarshal(res.RawStructuredContent, &out); err != nil {
		t.Fatalf("structured content %s: %v", res.RawStructuredContent, err)
	}
	return out
}

// traces are the files under dir, by path, with their sizes.
func traces(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			out[path] = info.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// headerOf is the header line of the trace at path.
func headerOf(t *testing.T, path string) map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadBytes('\n')
	var h map[string]any
	if err := json.Unmarshal(line, &h); err != nil {
		t.Fatalf("header %q: %v", line, err)
	}
	return h
}

// TestServeRecordsEveryExecution: with record_dir set, a caller cannot
// escape the recording by passing a plan or asking for a dry run: each
// execution leaves a trace whose header names its mode, and the dry run,
// recorded, still holds its unsafe call.
func TestServeRecordsEveryExecution(t *testing.T) {
	api := testapi.New(t)
	records := t.TempDir()
	file := petsConfig(t, api, "[effects]\nrecord_dir = "+strconv.Quote(records)+"\n")
	c := serveRecording(t, file, false).connect("")
	script := `return sdk.pets.create_pet({name = "Rex"}).name`
	dry := call(t, c, map[string]any{"script": script, "dry_run": true})
	if api.Requests.Load() != 0 {
		t.Fatalf("the recorded dry run sent its unsafe call: %d requests", api.Requests.Load())
	}
	var effects []any
	if err := json.Unmarshal(dry["effects"], &effects); err != nil || len(effects) != 1 {
		t.Fatalf("dry run: %s", dry["effects"])
	}
	planned := call(t, c, map[string]any{"script": script, "plan": effects})
	if string(planned["result"]) != `"Rex"` || api.Requests.Load() != 1 {
		t.Fatalf("plan run: %v (%d requests)", planned, api.Requests.Load())
	}
	call(t, c, map[string]any{"script": `return 1`})
	modes := map[string]int{}
	for path := range traces(t, records) {
		mode, _ := headerOf(t, path)["mode"].(string)
		modes[mode]++
	}
	if want := map[string]int{"dry_run": 1, "plan": 1, "": 1}; len(modes) != 3 || modes["dry_run"] != 1 || modes["plan"] != 1 || modes[""] != 1 {
		t.Errorf("the traces' modes %v, want %v", modes, want)
	}
}

// readLoop reads data.bin (64 KiB) n times: a trace of about n × 64 KiB.
func readLoop(n int) string {
	return `for i = 1, ` + strconv.Itoa(n) + ` do local f = io.open("data.bin") f:read("a") f:close() end return "done"`
}

// warnings are a result's warnings.
func warnings(t *testing.T, res map[string]json.RawMessage) []string {
	t.Helper()
	var w []string
	if raw, ok := res["warnings"]; ok {
		if err := json.Unmarshal(raw, &w); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// TestServeRecordBoundPerUser: two executions of one user that read past
// record_max_bytes_per_user leave the directory within the bound; the
// second one's result says so, once, and its trace ends at a whole line;
// standard error says so once too. What the directory held at start
// counts.
func TestServeRecordBoundPerUser(t *testing.T) {
	api := testapi.New(t)
	records := t.TempDir()
	const perUser = 2 << 20
	if err := os.WriteFile(filepath.Join(records, "old.trace.jsonl"), []byte(strings.Repeat("o\n", 256<<10)), 0o600); err != nil {
		t.Fatal(err)
	}
	file := petsConfig(t, api, "[effects]\nrecord_dir = "+strconv.Quote(records)+"\nrecord_max_bytes_per_user = "+strconv.Itoa(perUser)+"\n")
	s := serveRecording(t, file, false)
	c := s.connect("")
	first := call(t, c, map[string]any{"script": readLoop(16)}) // about 1 MiB
	if w := warnings(t, first); len(w) != 0 || string(first["result"]) != `"done"` {
		t.Fatalf("the first execution, within the bound: %s %v", first["result"], w)
	}
	second := call(t, c, map[string]any{"script": readLoop(64)}) // about 4 MiB
	w := warnings(t, second)
	if string(second["result"]) != `"done"` || len(w) != 1 || !strings.Contains(w[0], "record_max_bytes_per_user") {
		t.Fatalf("the second execution: %s, warnings %q, want one naming record_max_bytes_per_user", second["result"], w)
	}
	within := func() {
		t.Helper()
		var total int64
		for path, size := range traces(t, records) {
			total += size
			if data, _ := os.ReadFile(path); size > 0 && data[len(data)-1] != '\n' {
				t.Errorf("%s does not end at a whole line", path)
			}
		}
		if total > perUser {
			t.Errorf("the directory holds %d bytes, more than its bound of %d", total, perUser)
		}
	}
	within()
	if n := strings.Count(s.stderr.String(), "record_max_bytes_per_user"); n != 1 {
		t.Errorf("standard error says so %d times:\n%s", n, s.stderr.String())
	}
	// At the bound: the next execution runs all the same, and says so.
	third := call(t, c, map[string]any{"script": readLoop(64)})
	if w := warnings(t, third); string(third["result"]) != `"done"` || len(w) != 1 {
		t.Errorf("the third execution: %s, warnings %q", third["result"], w)
	}
	within()
}

// TestServeRecordBoundTotal: hosted, each user's traces are in a
// directory of their own, and record_max_bytes bounds all of them
// together: users within their own bound are cut once the total is
// reached.
func TestServeRecordBoundTotal(t *testing.T) {
	api := testapi.New(t)
	records := t.TempDir()
	const total = 3 << 20
	file := petsConfig(t, api, "[effects]\nrecord_dir = "+strconv.Quote(records)+"\nrecord_max_bytes = "+strconv.Itoa(total)+
		"\nrecord_max_bytes_per_user = "+strconv.Itoa(2<<20)+"\n")
	s := serveRecording(t, file, true)
	var cut []string
	for _, user := range []string{"alice", "bob", "carol"} {
		res := call(t, s.connect(user), map[string]any{"script": readLoop(24)}) // about 1.5 MiB
		if string(res["result"]) != `"done"` {
			t.Fatalf("%s: %s", user, res["result"])
		}
		if w := warnings(t, res); len(w) > 0 {
			if len(w) != 1 || !strings.Contains(w[0], "record_max_bytes)") {
				t.Errorf("%s: warnings %q, want one naming record_max_bytes", user, w)
			}
			cut = append(cut, user)
		}
	}
	if len(cut) != 2 || cut[0] != "bob" {
		t.Errorf("cut: %v, want bob's and carol's", cut)
	}
	var sum int64
	dirs := map[string]bool{}
	for path, size := range traces(t, records) {
		sum += size
		dirs[filepath.Base(filepath.Dir(path))] = true
	}
	if sum > total {
		t.Errorf("the directory holds %d bytes, more than its bound of %d", sum, total)
	}
	if len(dirs) < 2 || dirs[filepath.Base(records)] {
		t.Errorf("the traces are in %v, want a directory per user", dirs)
	}
}

// TestServeRecordRefusedCallsTakeNothing: a call refused before it runs
// (its _meta.auth is not an object) leaves no trace, and what its trace
// took is given back: many of them do not use up a user's bound.
func TestServeRecordRefusedCallsTakeNothing(t *testing.T) {
	api := testapi.New(t)
	records := t.TempDir()
	file := petsConfig(t, api, "[effects]\nrecord_dir = "+strconv.Quote(records)+"\nrecord_max_bytes_per_user = 4096\n")
	c := serveRecording(t, file, false).connect("")
	for range 40 {
		req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: mcpserver.ToolName, Arguments: map[string]any{"script": "return 1"}}}
		req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{"auth": "not an object"}}
		if res, err := c.CallTool(testwait.Context(t), req); err != nil || !res.IsError {
			t.Fatalf("a bad _meta.auth: %+v %v", res, err)
		}
	}
	if n := len(traces(t, records)); n != 0 {
		t.Fatalf("%d traces of refused calls", n)
	}
	res := call(t, c, map[string]any{"script": "return 1"})
	if w := warnings(t, res); string(res["result"]) != "1" || len(w) != 0 {
		t.Errorf("a call within the bound: %s, warnings %q", res["result"], w)
	}
}
