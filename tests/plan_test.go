package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/internal/testfile"
	"github.com/toolscript/toolscript/internal/testtree"
	"github.com/toolscript/toolscript/internal/testupstreams"
)

// planResult is the part of a plan run's result these tests read.
type planResult struct {
	Result       json.RawMessage  `json:"result"`
	FilesTouched []map[string]any `json:"files_touched"`
	Effects      []map[string]any `json:"effects"`
	PlanUnused   []map[string]any `json:"plan_unused"`
	Error        *struct{ Kind, Message string }
}

// dryRunPlan dry-runs script.luau in dir and writes its JSON result to
// plan.json, as a person saves a plan to review.
func dryRunPlan(t *testing.T, dir string) string {
	t.Helper()
	out, errOut, status := toolscript(t, dir, "", "run", "--json", "--dry-run", "script.luau")
	if status != 0 {
		t.Fatalf("dry run: %d %s %s", status, out, errOut)
	}
	plan := filepath.Join(dir, "plan.json")
	testfile.Write(t, plan, out)
	return plan
}

func runPlan(t *testing.T, dir string, args ...string) (planResult, string) {
	t.Helper()
	out, errOut, status := toolscript(t, dir, "", append([]string{"run", "--json", "--plan", "plan.json"}, args...)...)
	var res planResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("plan run: %d %v: %s %s", status, err, out, errOut)
	}
	if (status == 0) != (res.Error == nil) {
		t.Errorf("exit status %d with error %+v", status, res.Error)
	}
	return res, out
}

// A dry run's effects, applied as a plan, change exactly what a real run
// of the script changes: the io directory and the server's state.
func TestPlanAppliesWhatARealRunDoes(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	realAPI, planAPI := newNotesAPI(t), newNotesAPI(t)
	realDir, realIO := setupEffects(t, realAPI)
	planDir, planIO := setupEffects(t, planAPI)

	if out, errOut, status := toolscript(t, realDir, "", "run", "--json", "script.luau"); status != 0 {
		t.Fatalf("real run: %s %s", out, errOut)
	}
	dryRunPlan(t, planDir)
	if planAPI.count("POST")+planAPI.count("DELETE")+planAPI.count("PATCH") != 0 {
		t.Fatalf("the dry run sent unsafe calls: %v", planAPI.requests)
	}
	res, out := runPlan(t, planDir, "script.luau")
	if res.Error != nil || res.PlanUnused != nil || strings.Contains(out, "plan_unused") {
		t.Fatalf("plan run: %s", out)
	}
	if got, want := testtree.Contents(t, planIO), testtree.Contents(t, realIO); got != want {
		t.Errorf("after the plan run:\n%s\nafter a real run:\n%s", got, want)
	}
	unsafe := func(a *notesAPI) string {
		return fmt.Sprint(a.count("POST"), a.count("DELETE"), a.count("PATCH"))
	}
	if planAPI.state() != realAPI.state() || unsafe(planAPI) != unsafe(realAPI) || unsafe(realAPI) != "1 1 1" {
		t.Errorf("server after the plan run: %s %v; after a real run: %s %v", planAPI.state(), planAPI.requests, realAPI.state(), realAPI.requests)
	}
	if len(res.Effects) != 7 || res.Effects[4]["function"] != "sdk.notes.create_note" || res.Effects[0]["diff"] != nil {
		t.Errorf("effects applied: %v", res.Effects)
	}
	if fmt.Sprint(res.FilesTouched) != "[map[bytes:18 name:keep.txt op:append] map[name:old.txt op:remove] map[bytes:6 name:reports/new.txt op:write]]" {
		t.Errorf("files_touched: %v", res.FilesTouched)
	}
	// The script saw real responses: the server's, not made-up ones.
	if !strings.Contains(string(res.Result), `"dry":false`) || !strings.Contains(string(res.Result), `"text":"from the script"`) {
		t.Errorf("result: %s", res.Result)
	}

	// In text mode, what was applied is listed on standard error. The
	// notes were deleted by the first plan run: this one runs against a
	// fresh directory and server.
	api := newNotesAPI(t)
	dir, _ := setupEffects(t, api)
	dryRunPlan(t, dir)
	_, errOut, status := toolscript(t, dir, "", "run", "--plan", "plan.json", "script.luau")
	if status != 0 || !strings.Contains(errOut, "plan: 7 effects applied:\n  1. write  keep.txt (18 bytes, sha256 ") ||
		!strings.Contains(errOut, "  5. call   sdk.notes.create_note: POST "+api.URL+"/{team}/notes headers {Content-Type: \"application/json\"} {\"text\":\"from the script\"}") {
		t.Errorf("text mode: %d %s", status, errOut)
	}
}

// The first effect the plan does not hold stops the script before it
// happens: a write of other content does not reach the real file, a call
// the plan does not hold is never sent, and a script that catches the
// error (pcall) does not run on.
func TestPlanStopsBeforeTheEffect(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	tests := []struct {
		name string
		// edit turns the reviewed script into the one run with the plan.
		edit    func(string) string
		message string
		// applied are the effects carried out before the stop.
		applied int
		touched string
		posts   int
	}{
		{
			name:    "a write of other content",
			edit:    func(s string) string { return strings.Replace(s, `out:write("hello\n")`, `out:write("HELLO\n")`, 1) },
			message: "the script attempted write reports/new.txt (6 bytes, sha256 ",
			applied: 2, touched: "[map[bytes:18 name:keep.txt op:append]]",
		},
		{
			name: "a call the plan does not hold, caught",
			edit: func(s string) string {
				return strings.Replace(s, `local created, resp =`, `pcall(sdk.notes.delete_note, { id = 7 })
					sdk.notes.list_notes()
					io.open("after.txt", "w"):close()
					local created, resp =`, 1)
			},
			message: "the script attempted call sdk.notes.delete_note (DELETE " + "URL/{team}/notes/7), which the plan does not hold: the plan's next entry (5 of 7) is call sdk.notes.create_note",
			applied: 4, touched: "[map[bytes:18 name:keep.txt op:append] map[name:old.txt op:remove] map[bytes:6 name:reports/new.txt op:write]]",
		},
		{
			name:    "a call with another body",
			edit:    func(s string) string { return strings.Replace(s, `"from the script"`, `"from another script"`, 1) },
			message: `with body {"text":"from another script"}, which the plan does not hold: the plan's next entry (5 of 7) is call sdk.notes.create_note (POST URL/{team}/notes, headers {Content-Type: "application/json"}) with body {"text":"from the script"}: another body`,
			applied: 4, touched: "[map[bytes:18 name:keep.txt op:append] map[name:old.txt op:remove] map[bytes:6 name:reports/new.txt op:write]]",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := newNotesAPI(t)
			dir, ioDir := setupEffects(t, api)
			dryRunPlan(t, dir)
			testfile.Write(t, filepath.Join(dir, "script.luau"), tt.edit(effectsScript))
			res, out := runPlan(t, dir, "script.luau")
			if res.Error == nil || res.Error.Kind != "plan" || !strings.Contains(res.Error.Message, strings.ReplaceAll(tt.message, "URL", api.URL)) {
				t.Fatalf("plan run: %s", out)
			}
			if len(res.Effects) != tt.applied || len(res.PlanUnused) != 7-tt.applied || fmt.Sprint(res.FilesTouched) != tt.touched {
				t.Errorf("applied %v\nunused %v\ntouched %v", res.Effects, res.PlanUnused, res.FilesTouched)
			}
			// Nothing past the stop: no unsafe request reached the server,
			// and the new file does not exist.
			// The script did not run on after the stop: no GET but the
			// dry run's and the plan run's first.
			if api.count("POST")+api.count("DELETE")+api.count("PATCH") != 0 || api.count("GET") != 2 {
				t.Errorf("requests at the server: %v", api.requests)
			}
			for _, name := range []string{"after.txt", "reports/new.txt"} {
				if _, err := os.Stat(filepath.Join(ioDir, name)); err == nil && tt.applied < 4 || name == "after.txt" && err == nil {
					t.Errorf("%s exists", name)
				}
			}
			if data, _ := os.ReadFile(filepath.Join(ioDir, "keep.txt")); string(data) != "line1\nline2\nline3\n" {
				t.Errorf("keep.txt: %q (its append was planned and applied)", data)
			}
		})
	}
}

// A run that does less than its plan succeeds, and says what was not
// carried out.
func TestPlanUnused(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	api := newNotesAPI(t)
	dir, ioDir := setupEffects(t, api)
	dryRunPlan(t, dir)
	short := effectsScript[:strings.Index(effectsScript, "os.remove")] + "return 1\n"
	testfile.Write(t, filepath.Join(dir, "script.luau"), short)
	res, out := runPlan(t, dir, "script.luau")
	if res.Error != nil || len(res.Effects) != 3 || len(res.PlanUnused) != 4 || res.PlanUnused[0]["op"] != "remove" || res.PlanUnused[3]["function"] != "sdk.notes.edit_note" {
		t.Fatalf("plan run: %s", out)
	}
	if _, err := os.Stat(filepath.Join(ioDir, "old.txt")); err != nil {
		t.Errorf("old.txt: %v", err)
	}
	// Applied again to the directory as it was, in text mode.
	os.WriteFile(filepath.Join(ioDir, "keep.txt"), []byte("line1\nline2\n"), 0o644)
	os.RemoveAll(filepath.Join(ioDir, "reports"))
	_, errOut, status := toolscript(t, dir, "", "run", "--plan", "plan.json", "script.luau")
	if status != 0 || !strings.Contains(errOut, "plan: 4 entries not carried out:\n  4. remove old.txt\n") {
		t.Errorf("text mode: %d %s", status, errOut)
	}
}

// A plan that cannot be read is a usage error, before anything runs.
func TestPlanUsage(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "script.luau"), []byte(`io.open("x.txt", "w"):close()`), 0o644)
	for _, tt := range []struct {
		plan string
		args []string
		want string
	}{
		{`{"effects": [{"op": "chmod", "path": "x"}]}`, nil, `reading the plan plan.json: the plan's entry 1: unknown op "chmod"`},
		{`[{"op": "write", "path": "x.txt"}]`, nil, `the plan's entry 1: a write effect needs "sha256"`},
		{`{"result": 1`, nil, "the plan is not valid JSON"},
		{`[]`, []string{"--dry-run"}, "--plan and --dry-run cannot be given together"},
		{"", nil, "reading the plan plan.json: open plan.json: no such file or directory"},
	} {
		os.Remove(filepath.Join(dir, "plan.json"))
		if tt.plan != "" {
			os.WriteFile(filepath.Join(dir, "plan.json"), []byte(tt.plan), 0o644)
		}
		args := append(append([]string{"run", "--io-dir", "files", "--plan", "plan.json"}, tt.args...), "script.luau")
		out, errOut, status := toolscript(t, dir, "", args...)
		if status != 2 || !strings.Contains(errOut, tt.want) {
			t.Errorf("plan %q: %d %s %s; want %q", tt.plan, status, out, errOut, tt.want)
		}
		if _, err := os.Stat(filepath.Join(dir, "files")); err == nil {
			t.Fatalf("plan %q: the script ran", tt.plan)
		}
	}
}

// A plan of parallel calls applies: the calls of a batch are checked
// against the plan in the order the script made them, whatever order
// they are sent in, so the same plan holds run after run.
func TestPlanParallel(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	api := newNotesAPI(t)
	dir, ioDir := setupNotes(t, api, notesCredential, noteBatchScript)
	dryRunPlan(t, dir)
	for round := 1; round <= 3; round++ {
		res, out := runPlan(t, dir, "script.luau")
		if res.Error != nil || string(res.Result) != "24" || len(res.Effects) != 26 || res.PlanUnused != nil {
			t.Fatalf("round %d: %s", round, out)
		}
		if api.count("POST") != 24*round {
			t.Fatalf("round %d: %d POSTs at the server", round, api.count("POST"))
		}
	}
	if data, err := os.ReadFile(filepath.Join(ioDir, "after.txt")); err != nil || string(data) != "y" {
		t.Errorf("after.txt: %q %v", data, err)
	}
	// One note more in the batch is a call the plan does not hold: the
	// script stops there, before it is sent (the planned calls of the
	// batch not sent yet by then are cancelled with the script).
	os.WriteFile(filepath.Join(dir, "script.luau"), []byte(strings.Replace(noteBatchScript, "for i = 1, 24", "for i = 1, 25", 1)), 0o644)
	before := api.count("POST")
	res, out := runPlan(t, dir, "script.luau")
	if res.Error == nil || res.Error.Kind != "plan" || !strings.Contains(res.Error.Message, `{"text":"note 25"}, which the plan does not hold`) {
		t.Fatalf("25 notes: %s", out)
	}
	if got := api.count("POST") - before; got > 24 || strings.Contains(api.state(), "note 25") {
		t.Errorf("%d POSTs reached the server, at most the 24 planned: %s", got, api.state())
	}
}

// A file left open is written when the script ends: a write the plan does
// not hold fails the execution then, though the script returned, and the
// file is not written.
func TestPlanStopsAtTheEnd(t *testing.T) {
	dir := t.TempDir()
	write := func(content string) {
		os.WriteFile(filepath.Join(dir, "script.luau"), []byte(`local f = io.open("a.txt", "w") f:write("`+content+`") return "returned"`), 0o644)
	}
	write("planned")
	out, errOut, status := toolscript(t, dir, "", "run", "--io-dir", "files", "--json", "--dry-run", "script.luau")
	if status != 0 {
		t.Fatalf("dry run: %s %s", out, errOut)
	}
	os.WriteFile(filepath.Join(dir, "plan.json"), []byte(out), 0o644)
	write("changed")
	res, out := runPlan(t, dir, "--io-dir", "files", "script.luau")
	if res.Error == nil || res.Error.Kind != "plan" || !strings.Contains(res.Error.Message, "the script attempted write a.txt (7 bytes") ||
		string(res.Result) != "null" || len(res.PlanUnused) != 1 {
		t.Fatalf("plan run: %s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "files", "a.txt")); err == nil {
		t.Error("a.txt was written")
	}
	write("planned")
	if res, out := runPlan(t, dir, "--io-dir", "files", "script.luau"); res.Error != nil || string(res.Result) != `"returned"` {
		t.Fatalf("plan run: %s", out)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "files", "a.txt")); string(data) != "planned" {
		t.Errorf("a.txt: %q", data)
	}
}

// An MCP tool's call the plan holds is made; one with other arguments is
// not (the filesystem server would write the file).
func TestPlanMCPTool(t *testing.T) {
	shared := t.TempDir()
	fsServer := "--mcp=files=" + testupstreams.Shell(testupstreams.Filesystem(t, shared))
	target := filepath.Join(shared, "new.txt")
	source := func(content string) string {
		return `local out, resp = sdk.files.write_file({ path = ` + luauString(target) + `, content = "` + content + `" })
			return resp.dry_run == true`
	}
	res, stderr := runUpstreamScript(t, source("hi"), "", nil, fsServer, "--dry-run")
	if res.Error != nil || len(res.Effects) != 1 {
		t.Fatalf("dry run: %+v %s", res, stderr)
	}
	plan := filepath.Join(t.TempDir(), "plan.json")
	if text, err := json.Marshal(res.Effects); err != nil || os.WriteFile(plan, text, 0o644) != nil {
		t.Fatal(err)
	}
	res, stderr = runUpstreamScript(t, source("bye"), "", nil, fsServer, "--plan", plan)
	if res.Error == nil || res.Error.Kind != "plan" || !strings.Contains(res.Error.Message, `attempted call sdk.files.write_file with body {"content":"bye"`) {
		t.Fatalf("another content: %+v %s", res, stderr)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Fatalf("the tool ran: %v", err)
	}
	res, stderr = runUpstreamScript(t, source("hi"), "", nil, fsServer, "--plan", plan)
	if res.Error != nil || string(res.Value) != "false" || len(res.Effects) != 1 {
		t.Fatalf("plan run: %+v %s", res, stderr)
	}
	if data, err := os.ReadFile(target); err != nil || string(data) != "hi" {
		t.Errorf("new.txt: %q %v", data, err)
	}
}

// A script that fails otherwise with a file open keeps its error, which
// also says that the file's write was stopped.
func TestPlanStopAfterAnError(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "script.luau"), []byte(`local f = io.open("a.txt", "w") f:write("planned") return 1`), 0o644)
	out, errOut, status := toolscript(t, dir, "", "run", "--io-dir", "files", "--json", "--dry-run", "script.luau")
	if status != 0 {
		t.Fatalf("dry run: %s %s", out, errOut)
	}
	os.WriteFile(filepath.Join(dir, "plan.json"), []byte(out), 0o644)
	os.WriteFile(filepath.Join(dir, "script.luau"), []byte(`local f = io.open("a.txt", "w") f:write("changed") error("boom")`), 0o644)
	res, out := runPlan(t, dir, "--io-dir", "files", "script.luau")
	if res.Error == nil || res.Error.Kind != "runtime" || !strings.HasPrefix(res.Error.Message, "script.luau:1: boom; then, as its files were closed: the script attempted write a.txt (7 bytes") {
		t.Fatalf("plan run: %s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "files", "a.txt")); err == nil {
		t.Error("a.txt was written")
	}
}
