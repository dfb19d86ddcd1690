package tests

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolscript/toolscript/host/contract/effects/trace"
	"github.com/toolscript/toolscript/internal/testconfig"
	"github.com/toolscript/toolscript/internal/testfile"
	"github.com/toolscript/toolscript/internal/testupstreams"
	"github.com/toolscript/toolscript/internal/testwait"
)

// replayScript reads, writes, appends, removes, lists, calls (a parallel
// batch of safe and unsafe calls included), fails a call on purpose, and
// reads the clocks and the random generator: everything a replay
// substitutes.
const replayScript = `
local t0 = os.clock()` + effectsOpening + `local batch = parallel({
	function() return sdk.notes.create_note({ text = "p1" }).id end,
	function() return #sdk.notes.list_notes() end,
	function() return sdk.notes.create_note({ text = "p2" }).id end,
	function() return sdk.notes.create_note({ text = "p3" }).id end,
})
local keep = io.open("keep.txt"):read("*a")
local ok, err = pcall(io.open, "old.txt")
local edited = sdk.notes.edit_note({ id = 1 }, { text = "edited" })
return { before = #before, created = created, status = resp.status, batch = batch, keep = keep,
	gone = tostring(ok) .. " " .. tostring(err), edited = edited, root = io.list("."),
	time = os.time(), date = os.date("!%c"), clock = os.clock() - t0, random = math.random(1, 1000000000),
	random2 = math.random() }
`

// setupReplay is a real io directory and a configuration naming the notes
// API, whose credential comes from NOTES_TOKEN, with a frozen parameter.
func setupReplay(t *testing.T, api *notesAPI) (dir, ioDir string) {
	return setupNotes(t, api, `auth_env = "NOTES_TOKEN"`, replayScript)
}

// traceLine is the number of the first line of the trace at path holding
// every one of parts.
func traceLine(t *testing.T, path string, parts ...string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(sc.Text(), p)
		}
		if all {
			return n
		}
	}
	t.Fatalf("no line of %s holds %q", path, parts)
	return 0
}

// TestRecordThenReplay: a run recorded against a real API and a real io
// directory replays with the server stopped, the io directory removed and
// the credential's variable unset, and gives the same result byte for
// byte (the clocks and the random numbers included); the trace holds no
// credential.
func TestRecordThenReplay(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	api := newNotesAPI(t)
	dir, ioDir := setupReplay(t, api)
	env := []string{"NOTES_TOKEN=s3cret-token"}

	recorded, errOut, status := toolscriptEnv(t, dir, env, "run", "--json", "--record", "run.trace", "script.luau")
	if status != 0 || errOut != "" {
		t.Fatalf("recording: %d %s %s", status, recorded, errOut)
	}
	if api.count("POST") != 4 || api.count("PATCH") != 1 {
		t.Fatalf("the recording did not run for real: %v", api.requests)
	}
	data, err := os.ReadFile(filepath.Join(dir, "run.trace"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "s3cret-token") || strings.Contains(string(data), `"core"`) {
		t.Errorf("the trace holds the credential or a frozen value:\n%s", data)
	}
	var h trace.Header
	if err := json.Unmarshal([]byte(strings.SplitN(string(data), "\n", 2)[0]), &h); err != nil || h.Trace != trace.Version ||
		len(h.ScriptSHA256) != 64 || len(h.ConfigSHA256) != 64 || h.Toolscript == "" {
		t.Errorf("header %+v (%v)", h, err)
	}
	// The parallel batch is in the trace in the script's order.
	if p1, p3 := traceLine(t, filepath.Join(dir, "run.trace"), `"text":"p1"`), traceLine(t, filepath.Join(dir, "run.trace"), `"text":"p3"`); p1 > p3 {
		t.Errorf("the batch's calls are out of order: p1 at line %d, p3 at %d", p1, p3)
	}

	// Nothing of the world is left: no server, no io directory, no token.
	api.Close()
	if err := os.RemoveAll(ioDir); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		replayed, errOut, status := toolscript(t, dir, "", "run", "--json", "--replay", "run.trace", "script.luau")
		if status != 0 || replayed != recorded {
			t.Fatalf("replay %d: %d %s\n%s\nrecording:\n%s", i, status, errOut, replayed, recorded)
		}
	}
	if _, err := os.Stat(ioDir); !os.IsNotExist(err) {
		t.Errorf("the replay wrote the io directory: %v", err)
	}
	// A real run now fails: the replay's success is not the world's.
	if out, _, status := toolscriptEnv(t, dir, env, "run", "--json", "script.luau"); status == 0 {
		t.Errorf("a real run without the server succeeded: %s", out)
	}
}

// TestReplayDiverges: a changed script (another body, URL or path) stops
// at its first difference, kind replay, naming the trace's line, what it
// expected and what came; a truncated, garbage or oversized trace is a
// clear error naming its line.
func TestReplayDiverges(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	api := newNotesAPI(t)
	dir, _ := setupReplay(t, api)
	path := filepath.Join(dir, "run.trace")
	if out, errOut, status := toolscriptEnv(t, dir, []string{"NOTES_TOKEN=t"}, "run", "--json", "--record", "run.trace", "script.luau"); status != 0 {
		t.Fatalf("recording: %d %s %s", status, out, errOut)
	}
	api.Close()
	data, _ := os.ReadFile(path)
	lines := strings.SplitAfter(string(data), "\n")
	write := func(name, content string) string {
		testfile.Write(t, filepath.Join(dir, name), content)
		return name
	}
	big := filepath.Join(dir, "big.trace")
	testfile.Write(t, big, lines[0])
	if err := os.Truncate(big, trace.MaxBytes+1); err != nil { // sparse
		t.Fatal(err)
	}

	cases := []struct {
		name, script, trace string
		want                []string
	}{
		{"another body", strings.Replace(replayScript, `{ text = "edited" }`, `{ text = "EDITED" }`, 1), "run.trace", []string{
			"diverged from the trace at line " + lineNo(traceLine(t, path, `"text":"edited"`)),
			`expected call sdk.notes.edit_note PATCH http://`, `body {"text":"edited"}`, `got call sdk.notes.edit_note PATCH`, `body {"text":"EDITED"}`,
			"(the script is not the one the trace recorded: its sha256 is "}},
		{"another URL", strings.Replace(replayScript, `edit_note({ id = 1 }`, `edit_note({ id = 2 }`, 1), "run.trace", []string{
			"at line " + lineNo(traceLine(t, path, `"text":"edited"`)), "/{team}/notes/1", "got call sdk.notes.edit_note PATCH http://", "/{team}/notes/2"}},
		{"another path", strings.Replace(replayScript, `io.open("keep.txt", "a")`, `io.open("other.txt", "a")`, 1), "run.trace", []string{
			"at line " + lineNo(traceLine(t, path, `"path":"keep.txt","mode":"a"`)), `expected io.open("keep.txt", "a"), got io.open("other.txt", "a")`}},
		{"another parallel batch", strings.Replace(replayScript, `text = "p3"`, `text = "p4"`, 1), "run.trace", []string{
			"at line " + lineNo(traceLine(t, path, `"text":"p3"`)), `body {"text":"p3"}`, `body {"text":"p4"}`}},
		{"truncated", replayScript, write("cut.trace", strings.Join(lines[:6], "")+lines[6][:len(lines[6])/2]), []string{
			"the trace cannot be replayed: line 7: the line has no end (the trace was cut short)"}},
		{"garbage", replayScript, write("garbage.trace", "\x7fELF\x00\x01 not a trace\n"), []string{
			"the trace cannot be replayed: line 1: not a trace header"}},
		{"garbage entry", replayScript, write("entry.trace", lines[0]+`{"op":"seed","seed":-1}`+"\n"), []string{
			"line 2: not a trace entry"}},
		{"empty", replayScript, write("empty.trace", ""), []string{"line 1: the trace is empty"}},
		{"oversized", replayScript, "big.trace", []string{"more than 268435456"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			write("changed.luau", c.script)
			out, errOut, status := toolscript(t, dir, "", "run", "--json", "--replay", c.trace, "changed.luau")
			var res struct {
				Error *struct{ Kind, Message string }
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil || status != 1 || res.Error == nil || res.Error.Kind != "replay" {
				t.Fatalf("%d %s %s", status, out, errOut)
			}
			for _, w := range c.want {
				if !strings.Contains(res.Error.Message, w) {
					t.Errorf("message %q lacks %q", res.Error.Message, w)
				}
			}
			if c.script == replayScript && strings.Contains(res.Error.Message, "not the one the trace recorded") {
				t.Errorf("the recorded script is said to differ: %s", res.Error.Message)
			}
		})
	}
	// In text mode the error is named on standard error.
	write("changed.luau", strings.Replace(replayScript, `"edited"`, `"EDITED"`, 1))
	if _, errOut, status := toolscript(t, dir, "", "run", "--replay", "run.trace", "changed.luau"); status != 1 || !strings.HasPrefix(errOut, "replay error: the script diverged from the trace at line") {
		t.Errorf("text mode: %d %s", status, errOut)
	}
}

func lineNo(n int) string { return strconv.Itoa(n) }

// TestHostedRecordDir: under hosted serve, [effects] record_dir records
// every execution to a file of its own (per-user io included), with no
// credential; each trace replays with `toolscript run --replay` to the
// result its caller got.
func TestHostedRecordDir(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	api := newNotesAPI(t)
	iss, args := issuerArgs(t)
	dir := t.TempDir()
	testconfig.Write(t, dir, "[effects]\nrecord_dir = \"traces\"\n"+notesSection(api.URL, notesCredential+"\n"))
	script := `local f = io.open("mine.txt", "w") f:write("written at ", os.time()) f:close()
		local created = sdk.notes.create_note({ text = "hosted" })
		return { id = created.id, back = io.open("mine.txt"):read("a"), r = math.random(1, 1e9), files = io.list() }`
	testfile.Write(t, filepath.Join(dir, "script.luau"), script)
	p := startServe(t, dir, append(args, "--io-dir", "files")...)
	ctx := testwait.Context(t)
	got := map[string]bool{}
	for _, user := range []string{"alice", "bob"} {
		c := connectHTTP(t, p.url, iss.Token(t, "ES256", user))
		_, out := callScript(t, ctx, c, map[string]any{"script": script})
		if out.Error != nil {
			t.Fatalf("%s: %+v", user, out.Error)
		}
		got[string(out.Result)] = true
		// A call refused before it runs (its _meta.auth is not an object)
		// leaves no trace behind.
		req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "execute_script", Arguments: map[string]any{"script": script}}}
		req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{"auth": "not an object"}}
		if res, err := c.CallTool(ctx, req); err != nil || !res.IsError || !strings.Contains(fmt.Sprint(res.Content), "_meta.auth must be an object") {
			t.Fatalf("%s: a bad _meta.auth: %+v %v", user, res, err)
		}
	}
	// Each user's traces are in a directory of their own.
	entries, err := filepath.Glob(filepath.Join(dir, "traces", "*", "*"))
	if err != nil || len(entries) != 2 || filepath.Dir(entries[0]) == filepath.Dir(entries[1]) {
		t.Fatalf("traces: %v %v", entries, err)
	}
	api.Close()
	for _, path := range entries {
		name := filepath.Base(path)
		if !strings.HasSuffix(name, ".trace.jsonl") || !strings.HasPrefix(filepath.Base(filepath.Dir(path)), "u.") {
			t.Errorf("trace %s", path)
		}
		data, _ := os.ReadFile(path)
		if strings.Contains(string(data), "s3cret-token") {
			t.Errorf("%s holds the credential", name)
		}
		out, errOut, status := toolscript(t, dir, "", "run", "--json", "--replay", path, "script.luau")
		var res execResult
		if err := json.Unmarshal([]byte(out), &res); err != nil || status != 0 || res.Error != nil {
			t.Fatalf("replay of %s: %d %s %s", name, status, out, errOut)
		}
		if !got[string(res.Result)] {
			t.Errorf("replay of %s gave %s, which no caller got (%v)", name, res.Result, got)
		}
		delete(got, string(res.Result))
		if len(res.FilesTouched) != 1 || res.FilesTouched[0].Name != "mine.txt" {
			t.Errorf("files touched %+v", res.FilesTouched)
		}
	}
}

// TestRecordReplayParallelOutOfOrder: a parallel batch whose responses
// come back in the reverse of the script's order (the server answers the
// first call only once it has answered the last) is recorded in the
// script's order, and replays to the same result.
func TestRecordReplayParallelOutOfOrder(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	const n = 4
	last := make(chan struct{})
	var mu sync.Mutex
	created := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var note struct{ Text string }
		json.NewDecoder(r.Body).Decode(&note)
		if note.Text == "note 1" {
			<-last // answered after the last one
		}
		mu.Lock()
		created++
		id := created
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":%d,"text":%q,"created":"2024-01-01T00:00:00Z","owner":"a@example.com","state":"open"}`, id, note.Text)
		if note.Text == fmt.Sprintf("note %d", n) {
			close(last)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	testconfig.Write(t, dir, notesSection(srv.URL, ""))
	script := `local fns = {}
		for i = 1, ` + strconv.Itoa(n) + ` do fns[i] = function() return sdk.notes.create_note({ text = "note " .. i }).id end end
		return parallel(fns)`
	os.WriteFile(filepath.Join(dir, "par.luau"), []byte(script), 0o644)
	recorded, errOut, status := toolscript(t, dir, "", "run", "--json", "--record", "par.trace", "par.luau")
	if status != 0 {
		t.Fatalf("recording: %d %s %s", status, recorded, errOut)
	}
	var res struct{ Result []int }
	if err := json.Unmarshal([]byte(recorded), &res); err != nil || len(res.Result) != n || res.Result[0] < res.Result[n-1] {
		t.Fatalf("the first call was not answered after the last: %s", recorded)
	}
	path := filepath.Join(dir, "par.trace")
	for i := 1; i < n; i++ {
		if a, b := traceLine(t, path, fmt.Sprintf(`"text":"note %d"`, i)), traceLine(t, path, fmt.Sprintf(`"text":"note %d"`, i+1)); a > b {
			t.Errorf("note %d at line %d, after note %d at line %d", i, a, i+1, b)
		}
	}
	srv.Close()
	replayed, errOut, status := toolscript(t, dir, "", "run", "--json", "--replay", "par.trace", "par.luau")
	if status != 0 || replayed != recorded {
		t.Fatalf("replay: %d %s\n%s\nrecording:\n%s", status, errOut, replayed, recorded)
	}
}

// TestRecordReplayMCPTool: calls of an upstream MCP server's tools (the
// filesystem reference server's) are recorded with their results and
// replayed without being made: the file the tool wrote is removed before
// the replay and stays removed, and the result is the recording's.
func TestRecordReplayMCPTool(t *testing.T) {
	shared := t.TempDir()
	fsServer := "--mcp=files=" + testupstreams.Shell(testupstreams.Filesystem(t, shared))
	testfile.Write(t, filepath.Join(shared, "old.txt"), "from before")
	dir := t.TempDir()
	source := `local old = sdk.files.read_text_file({ path = ` + luauString(filepath.Join(shared, "old.txt")) + ` })
		local out = sdk.files.write_file({ path = ` + luauString(filepath.Join(shared, "new.txt")) + `, content = "hi" })
		return { old = old, out = out }`
	os.WriteFile(filepath.Join(dir, "mcp.luau"), []byte(source), 0o644)
	recorded, errOut, status := toolscript(t, dir, "", "run", "--json", "--no-io", fsServer, "--record", "mcp.trace", "mcp.luau")
	if status != 0 || !strings.Contains(recorded, "from before") {
		t.Fatalf("recording: %d %s %s", status, recorded, errOut)
	}
	if b, err := os.ReadFile(filepath.Join(shared, "new.txt")); err != nil || string(b) != "hi" {
		t.Fatalf("the recording's tool call did not write: %q %v", b, err)
	}
	os.Remove(filepath.Join(shared, "new.txt"))
	os.WriteFile(filepath.Join(shared, "old.txt"), []byte("changed since"), 0o644)
	replayed, errOut, status := toolscript(t, dir, "", "run", "--json", "--no-io", fsServer, "--replay", "mcp.trace", "mcp.luau")
	if status != 0 || replayed != recorded {
		t.Fatalf("replay: %d %s\n%s\nrecording:\n%s", status, errOut, replayed, recorded)
	}
	if _, err := os.Stat(filepath.Join(shared, "new.txt")); !os.IsNotExist(err) {
		t.Errorf("the replay called write_file: %v", err)
	}
}

// TestReplayHoldsResponsesToTheLimit: a trace is untrusted, and a replayed
// response is held to max_response_bytes as a real one is: one larger
// than the configuration allows fails the call with kind limit.
func TestReplayHoldsResponsesToTheLimit(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	api := newNotesAPI(t)
	dir, ioDir := setupReplay(t, api)
	script := `local ok, err = pcall(sdk.notes.list_notes) return ok and "ok" or tostring(err)`
	testfile.Write(t, filepath.Join(dir, "small.luau"), script)
	env := []string{"NOTES_TOKEN=s3cret-token"}
	if out, errOut, status := toolscriptEnv(t, dir, env, "run", "--record", "run.trace", "small.luau"); status != 0 || out != "\"ok\"\n" {
		t.Fatalf("recording: %d %q %s", status, out, errOut)
	}
	if out, errOut, status := toolscript(t, dir, "", "run", "--replay", "run.trace", "small.luau"); status != 0 || out != "\"ok\"\n" {
		t.Fatalf("replay: %d %q %s", status, out, errOut)
	}
	testconfig.Write(t, dir, "[sdk]\nmax_response_bytes = 16\n[io]\ndir = "+testconfig.Quote(ioDir)+"\n"+notesSection(api.URL, "auth_env = \"NOTES_TOKEN\"\n"))
	out, errOut, status := toolscript(t, dir, "", "run", "--replay", "run.trace", "small.luau")
	if status != 0 || !strings.Contains(out, "sdk.notes.list_notes: the response is larger than max_response_bytes (16;") {
		t.Errorf("replay past max_response_bytes: %d %q %s", status, out, errOut)
	}
}
