package tests

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/toolscript/toolscript/internal/testconfig"
	"github.com/toolscript/toolscript/internal/testfile"
	"github.com/toolscript/toolscript/internal/testtree"
	"github.com/toolscript/toolscript/internal/testupstreams"
)

// notesAPI is a real HTTP API with state (tests/testdata/notes.yaml): the
// notes of teams, which POST creates, PATCH edits and DELETE removes. It
// counts the requests of each method it received.
type notesAPI struct {
	*httptest.Server
	mu       sync.Mutex
	notes    map[string][]string
	requests map[string]int
	auth     []string
}

func newNotesAPI(t *testing.T) *notesAPI {
	a := &notesAPI{notes: map[string][]string{"core": {"first"}}, requests: map[string]int{}}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.requests[r.Method]++
		a.auth = append(a.auth, r.Header.Get("Authorization"))
		parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
		team := parts[0]
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodGet:
			out := []map[string]any{}
			for i, text := range a.notes[team] {
				out = append(out, map[string]any{"id": i + 1, "text": text, "created": "2024-01-01T00:00:00Z", "owner": "a@example.com", "state": "open"})
			}
			json.NewEncoder(w).Encode(out)
		case r.Method == http.MethodPost:
			var n struct{ Text string }
			json.NewDecoder(r.Body).Decode(&n)
			a.notes[team] = append(a.notes[team], n.Text)
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintf(w, `{"id":%d,"text":%q,"created":"2024-01-01T00:00:00Z","owner":"a@example.com","state":"open"}`, len(a.notes[team]), n.Text)
		case r.Method == http.MethodDelete:
			a.notes[team] = nil
			w.WriteHeader(http.StatusNoContent)
		default:
			w.WriteHeader(http.StatusOK)
			w.Write([]byte(`{}`))
		}
	}))
	t.Cleanup(a.Close)
	return a
}

func (a *notesAPI) count(method string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.requests[method]
}

func (a *notesAPI) state() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	b, _ := json.Marshal(a.notes)
	return string(b)
}

// effectsOpening lists the notes, appends to keep.txt, writes
// reports/new.txt, removes old.txt and creates a note: the effects that
// effectsScript and replayScript both begin with.
const effectsOpening = `
local before = sdk.notes.list_notes()
local f = io.open("keep.txt", "a")
f:write("line3\n")
f:close()
local out = io.open("reports/new.txt", "w")
out:write("hello\n")
out:close()
os.remove("old.txt")
local created, resp = sdk.notes.create_note({ text = "from the script" })
`

// effectsScript writes, appends, removes and calls, reading its own
// writes back between.
const effectsScript = effectsOpening + `local back = io.open("reports/new.txt"):read("*a")
local keep = io.open("keep.txt"):read("*a")
local gone = not pcall(io.open, "old.txt")
local deleted, dresp = sdk.notes.delete_note({ id = 1 })
local edited = sdk.notes.edit_note({ id = 1 }, { text = "edited" })
return { edited = edited, before = #before, created = created, dry = resp.dry_run == true, status = resp.status,
	deleted = deleted, ddry = dresp.dry_run == true, back = back, keep = keep, gone = gone,
	root = io.list("."), reports = io.list("reports") }
`

type effectsResult struct {
	Result struct {
		Before  int            `json:"before"`
		Created map[string]any `json:"created"`
		Edited  map[string]any `json:"edited"`
		Dry     bool           `json:"dry"`
		Status  int            `json:"status"`
		Deleted any            `json:"deleted"`
		DDry    bool           `json:"ddry"`
		Back    string         `json:"back"`
		Keep    string         `json:"keep"`
		Gone    bool           `json:"gone"`
		Root    []string       `json:"root"`
		Reports []string       `json:"reports"`
	} `json:"result"`
	FilesTouched []struct {
		Name   string `json:"name"`
		Op     string `json:"op"`
		Bytes  int64  `json:"bytes"`
		DryRun bool   `json:"dry_run"`
	} `json:"files_touched"`
	Effects []map[string]any `json:"effects"`
	Error   *struct{ Kind, Message string }
}

// setupEffects makes a real io directory and a configuration naming the
// notes API, with a credential and a frozen parameter.
func setupEffects(t *testing.T, api *notesAPI) (dir, ioDir string) {
	return setupNotes(t, api, notesCredential, effectsScript)
}

// notesCredential is the notes API's credential in the configurations
// setupEffects writes.
const notesCredential = `auth = "s3cret-token"`

// notesSection is the [apis.notes] section of a configuration: the notes
// spec served at url, extra (TOML lines, each ending in a newline, or "")
// and the frozen parameter team = "core".
func notesSection(url, extra string) string {
	spec, _ := filepath.Abs("testdata/notes.yaml")
	return "[apis.notes]\nspec = " + testconfig.Quote(spec) + "\nbase_url = " + testconfig.Quote(url) + "\n" + extra +
		"[apis.notes.frozen_params]\nteam = \"core\"\n"
}

// setupNotes makes a real io directory, script.luau holding script, and a
// configuration naming the notes API with credential (a TOML line) and a
// frozen parameter.
func setupNotes(t *testing.T, api *notesAPI, credential, script string) (dir, ioDir string) {
	dir = t.TempDir()
	ioDir = filepath.Join(dir, "files")
	testfile.Tree(t, ioDir, map[string]string{"keep.txt": "line1\nline2\n", "old.txt": "old\n", "sub/a.txt": "a\n"})
	testconfig.Write(t, dir, "[io]\ndir = "+testconfig.Quote(ioDir)+"\n"+notesSection(api.URL, credential+"\n"))
	testfile.Write(t, filepath.Join(dir, "script.luau"), script)
	return dir, ioDir
}

func TestDryRunChangesNothing(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	api := newNotesAPI(t)
	dir, ioDir := setupEffects(t, api)
	files, state := testtree.Snapshot(t, ioDir), api.state()

	out, errOut, status := toolscript(t, dir, "", "run", "--json", "--dry-run", "script.luau")
	if status != 0 {
		t.Fatalf("dry run: %d %s %s", status, out, errOut)
	}
	var res effectsResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}

	// Nothing changed: the files, their times, the directories', the
	// server's state; only the safe GET reached the server.
	if after := testtree.Snapshot(t, ioDir); after != files {
		t.Errorf("the io directory changed:\nbefore\n%s\nafter\n%s", files, after)
	}
	if got := api.state(); got != state {
		t.Errorf("the server's state changed: %s, was %s", got, state)
	}
	if api.count("GET") != 1 || api.count("POST") != 0 || api.count("DELETE") != 0 {
		t.Errorf("requests at the server: %v, want one GET only", api.requests)
	}

	// The script read its own writes and saw its removal; listings merge.
	r := res.Result
	if r.Before != 1 || r.Back != "hello\n" || r.Keep != "line1\nline2\nline3\n" || !r.Gone {
		t.Errorf("the script's view: %+v", r)
	}
	if fmt.Sprint(r.Root) != "[keep.txt reports sub]" || fmt.Sprint(r.Reports) != "[new.txt]" {
		t.Errorf("listings: %v %v", r.Root, r.Reports)
	}
	// The unsafe calls got made-up responses: the spec's example, and no
	// body for a 204.
	if !r.Dry || !r.DDry || r.Status != 201 || r.Created["text"] != "an example note" || r.Deleted != nil {
		t.Errorf("made-up responses: %+v", r)
	}
	// Without an example, the minimal value valid against the schema.
	if fmt.Sprint(r.Edited) != "map[created:1970-01-01T00:00:00Z id:1 owner:user@example.com state:open text:]" {
		t.Errorf("synthesised response: %v", r.Edited)
	}

	// The effects, in order, with sizes, digests, a diff, and calls
	// without the credential or the frozen value.
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	want := []map[string]any{
		{"op": "write", "path": "keep.txt", "bytes": 18.0, "sha256": sum("line1\nline2\nline3\n")},
		{"op": "mkdir", "path": "reports"},
		{"op": "write", "path": "reports/new.txt", "bytes": 6.0, "sha256": sum("hello\n")},
		{"op": "remove", "path": "old.txt"},
		{"op": "call", "function": "sdk.notes.create_note", "method": "POST", "url": api.URL + "/{team}/notes", "headers": map[string]any{"Content-Type": "application/json"}, "body": map[string]any{"text": "from the script"}},
		{"op": "call", "function": "sdk.notes.delete_note", "method": "DELETE", "url": api.URL + "/{team}/notes/1", "headers": map[string]any{}},
		{"op": "call", "function": "sdk.notes.edit_note", "method": "PATCH", "url": api.URL + "/{team}/notes/1", "headers": map[string]any{"Content-Type": "application/json"}, "body": map[string]any{"text": "edited"}},
	}
	if len(res.Effects) != len(want) {
		t.Fatalf("effects: %v", res.Effects)
	}
	for i, w := range want {
		got := res.Effects[i]
		for k, v := range w {
			if fmt.Sprint(got[k]) != fmt.Sprint(v) {
				t.Errorf("effect %d: %s = %v, want %v (%v)", i, k, got[k], v, got)
			}
		}
	}
	if diff, _ := res.Effects[0]["diff"].(string); !strings.HasPrefix(diff, "--- a/keep.txt\n+++ b/keep.txt\n") || !strings.Contains(diff, "\n+line3\n") {
		t.Errorf("keep.txt's diff: %q", diff)
	}
	if diff, _ := res.Effects[2]["diff"].(string); !strings.HasPrefix(diff, "--- /dev/null\n+++ b/reports/new.txt\n") {
		t.Errorf("new.txt's diff: %q", diff)
	}
	if strings.Contains(out, "s3cret-token") || strings.Contains(out, "core") {
		t.Errorf("a credential or a frozen value in the result: %s", out)
	}
	touched := fmt.Sprint(res.FilesTouched)
	if touched != "[{keep.txt append 18 true} {old.txt remove 0 true} {reports/new.txt write 6 true}]" {
		t.Errorf("files_touched: %s", touched)
	}

	// In text mode the effects are listed on standard error.
	out, errOut, status = toolscript(t, dir, "", "run", "--dry-run", "script.luau")
	if status != 0 || !strings.Contains(errOut, "dry run: 7 effects (nothing was changed):") ||
		!strings.Contains(errOut, "  5. call   sdk.notes.create_note: POST "+api.URL+"/{team}/notes headers {Content-Type: \"application/json\"} {\"text\":\"from the script\"}") ||
		!strings.Contains(errOut, "       +line3") {
		t.Errorf("text mode: %d %s %s", status, out, errOut)
	}
	if after := testtree.Snapshot(t, ioDir); after != files {
		t.Errorf("the io directory changed in text mode")
	}

	// The same script for real does change them: the test can see it.
	out, errOut, status = toolscript(t, dir, "", "run", "--json", "script.luau")
	if status != 0 || strings.Contains(out, `"effects"`) {
		t.Fatalf("real run: %d %s %s", status, out, errOut)
	}
	if testtree.Snapshot(t, ioDir) == files || api.state() == state || api.count("POST") != 1 || api.count("DELETE") != 1 || api.count("PATCH") != 1 {
		t.Errorf("the real run changed nothing: %v", api.requests)
	}
}

// An MCP tool's call in a dry run is not made: the script gets
// { dry_run = true } and the effect lists the tool and its arguments. The
// filesystem server's write_file would create the file.
func TestDryRunMCPTool(t *testing.T) {
	shared := t.TempDir()
	fsServer := "--mcp=files=" + testupstreams.Shell(testupstreams.Filesystem(t, shared))
	testfile.Write(t, filepath.Join(shared, "old.txt"), "from before")
	// read_text_file is annotated readOnlyHint: true, so it runs for real
	// in a dry run; write_file is not, so it is held.
	source := `local old = sdk.files.read_text_file({ path = ` + luauString(filepath.Join(shared, "old.txt")) + ` })
		local out, resp = sdk.files.write_file({ path = ` + luauString(filepath.Join(shared, "new.txt")) + `, content = "hi" })
		return { out = out, dry = resp.dry_run == true, read = string.find(json.encode(old), "from before", 1, true) ~= nil }`
	res, stderr := runUpstreamScript(t, source, "", nil, fsServer, "--dry-run")
	if res.Error != nil || string(res.Value) != `{"dry":true,"out":{"dry_run":true},"read":true}` {
		t.Fatalf("result %s error %+v\nstderr %s", res.Value, res.Error, stderr)
	}
	wantBody, _ := json.Marshal(map[string]string{"content": "hi", "path": filepath.Join(shared, "new.txt")})
	if len(res.Effects) != 1 || res.Effects[0].Function != "sdk.files.write_file" || res.Effects[0].Method != "" ||
		string(res.Effects[0].Body) != string(wantBody) {
		t.Errorf("effects: %+v", res.Effects)
	}
	if _, err := os.Stat(filepath.Join(shared, "new.txt")); !os.IsNotExist(err) {
		t.Errorf("the tool ran: %v", err)
	}
	// For real, it does.
	res, stderr = runUpstreamScript(t, source, "", nil, fsServer)
	if _, err := os.Stat(filepath.Join(shared, "new.txt")); err != nil || res.Effects != nil {
		t.Errorf("real run: %v %+v %s", err, res, stderr)
	}
}

// noteBatchScript writes a file, creates 24 notes in one parallel batch,
// then writes another file.
const noteBatchScript = `
local f = io.open("before.txt", "w"); f:write("x"); f:close()
local fns = {}
for i = 1, 24 do
	fns[i] = function() return sdk.notes.create_note({ text = "note " .. i }) end
end
local out = parallel(fns, 24)
local g = io.open("after.txt", "w"); g:write("y"); g:close()
return #out
`

// The calls of a parallel batch are decided in the batch's order, before
// any is sent: a dry run lists them in the order the script made them,
// whatever order their goroutines run in, and between the io effects the
// script caused before and after the batch.
func TestDryRunParallelOrder(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	api := newNotesAPI(t)
	dir, _ := setupNotes(t, api, notesCredential, noteBatchScript)
	for round := range 3 {
		out, errOut, status := toolscript(t, dir, "", "run", "--json", "--dry-run", "script.luau")
		if status != 0 {
			t.Fatalf("dry run: %d %s %s", status, out, errOut)
		}
		var res struct {
			Effects []map[string]any `json:"effects"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if len(res.Effects) != 26 {
			t.Fatalf("effects: %v", res.Effects)
		}
		var got []string
		for _, e := range res.Effects {
			if body, ok := e["body"].(map[string]any); ok {
				got = append(got, fmt.Sprint(body["text"]))
			} else {
				got = append(got, fmt.Sprint(e["path"]))
			}
		}
		want := []string{"before.txt"}
		for i := 1; i <= 24; i++ {
			want = append(want, fmt.Sprintf("note %d", i))
		}
		want = append(want, "after.txt")
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("round %d: effects in the order %v, want %v", round, got, want)
		}
	}
	if api.count("POST") != 0 {
		t.Errorf("a held call reached the server: %v", api.requests)
	}
}

// TestDryRunOverrides: `toolscript run --dry-run` with [apis.notes] safe
// and unsafe: the POST declared safe reaches the real API and is no
// effect; the GET declared unsafe does not reach it, is an effect, and the
// script gets a made-up list.
func TestDryRunOverrides(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	api := newNotesAPI(t)
	dir := t.TempDir()
	testconfig.Write(t, dir, "[io]\nenabled = false\n"+notesSection(api.URL, "safe = [\"createNote\"]\nunsafe = [\"list_notes\"]\n"))
	script := `
local created, cresp = sdk.notes.create_note({ text = "searched" })
local list, lresp = sdk.notes.list_notes()
return { created = created.text, cdry = cresp.dry_run == true, n = #list, ldry = lresp.dry_run == true }
`
	testfile.Write(t, filepath.Join(dir, "o.luau"), script)
	out, errOut, status := toolscript(t, dir, "", "run", "--json", "--dry-run", "o.luau")
	if status != 0 {
		t.Fatalf("dry run: %d %s %s", status, out, errOut)
	}
	var res struct {
		Result struct {
			Created string `json:"created"`
			CDry    bool   `json:"cdry"`
			N       int    `json:"n"`
			LDry    bool   `json:"ldry"`
		} `json:"result"`
		Effects []map[string]any `json:"effects"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if res.Result.Created != "searched" || res.Result.CDry || !res.Result.LDry || res.Result.N != 0 {
		t.Errorf("result %+v", res.Result)
	}
	if len(res.Effects) != 1 || res.Effects[0]["function"] != "sdk.notes.list_notes" || res.Effects[0]["method"] != "GET" {
		t.Errorf("effects %v", res.Effects)
	}
	if api.count("POST") != 1 || api.count("GET") != 0 {
		t.Errorf("requests %v: want the POST declared safe, not the GET declared unsafe", api.requests)
	}

	// A name the spec does not have stops the run before the script.
	testconfig.Write(t, dir, "[io]\nenabled = false\n"+notesSection(api.URL, "safe = [\"createNotes\"]\n"))
	out, errOut, status = toolscript(t, dir, "", "run", "--dry-run", "o.luau")
	if status != 2 || !strings.Contains(errOut, `api notes: [apis.notes] safe: "createNotes" is not an operation of notes (close: "createNote", "create_note")`) {
		t.Errorf("an unknown name: %d %s %s", status, out, errOut)
	}
}

// TestDryRunMCPToolOverrides: [mcp_servers.NAME] safe and unsafe, with
// the filesystem server: in a dry run the write_file declared safe runs for
// real (the file exists after), the read_text_file declared unsafe is held.
func TestDryRunMCPToolOverrides(t *testing.T) {
	shared := t.TempDir()
	args := testupstreams.Filesystem(t, shared)
	list, _ := json.Marshal(args[1:])
	config := "[mcp_servers.files]\ncommand = " + testconfig.Quote(args[0]) + "\nargs = " + string(list) +
		"\nsafe = [\"write_file\"]\nunsafe = [\"read_text_file\"]\n"
	testfile.Write(t, filepath.Join(shared, "old.txt"), "from before")
	source := `local old, oresp = sdk.files.read_text_file({ path = ` + luauString(filepath.Join(shared, "old.txt")) + ` })
		local _, wresp = sdk.files.write_file({ path = ` + luauString(filepath.Join(shared, "new.txt")) + `, content = "hi" })
		return { old = old, odry = oresp.dry_run == true, wdry = wresp.dry_run == true }`
	res, stderr := runUpstreamScript(t, source, config, nil, "--dry-run")
	if res.Error != nil || string(res.Value) != `{"odry":true,"old":{"dry_run":true},"wdry":false}` {
		t.Fatalf("result %s error %+v\nstderr %s", res.Value, res.Error, stderr)
	}
	if len(res.Effects) != 1 || res.Effects[0].Function != "sdk.files.read_text_file" {
		t.Errorf("effects: %+v", res.Effects)
	}
	if data, err := os.ReadFile(filepath.Join(shared, "new.txt")); err != nil || string(data) != "hi" {
		t.Errorf("write_file, declared safe, did not run: %q %v", data, err)
	}
}
