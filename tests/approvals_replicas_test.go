package tests

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/toolscript/toolscript/host/serve/auth/authtest"
	"github.com/toolscript/toolscript/internal/syncbuf"
	"github.com/toolscript/toolscript/internal/testconfig"
	"github.com/toolscript/toolscript/internal/testfile"
	"github.com/toolscript/toolscript/internal/testupstreams"
)

// A paused execution resumes on any replica. Two `serve --http
// --stateless` replicas share a state key and an io directory behind a
// real HAProxy (examples/haproxy's backend, balanced round robin here so
// that consecutive requests go to alternate replicas). A client on MCP
// 2026-07-28 calls execute_script; a rule asks a person, and the call
// ends with input_required on one replica; the retry with the answer
// reaches the other, which replays the prefix (no request sent again, no
// file written again) and runs on live. The notes API counts what it was
// sent; the io directory shows each write once.

// replicaScript reads, writes a file, creates a note (the rule asks),
// then writes another file after the answer.
const replicaScript = `
local before = #sdk.notes.list_notes()
io.open("before.txt", "w"):write("written before the ask"):close()
local made = sdk.notes.create_note({ text = "approved" })
io.open("after.txt", "w"):write("written after: " .. made.text):close()
return { before = before, made = made.text }
`

// modernCall is a tools/call of MCP 2026-07-28 (stateless: no session),
// declaring elicitation and sampling; state and answer (to the approval)
// make it a retry.
func modernCall(id int, script, state string, answer map[string]any) string {
	return modernCallOf(id, "replica-test", map[string]any{"script": script}, state, map[string]any{"approval": answer})
}

// modernCallOf is modernCall by the client named clientName, with
// arguments, its retry answering with responses (inputResponses).
func modernCallOf(id int, clientName string, arguments map[string]any, state string, responses map[string]any) string {
	params := map[string]any{
		"name":      "execute_script",
		"arguments": arguments,
		"_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": clientName, "version": "1"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{}, "sampling": map[string]any{}},
		},
	}
	if state != "" {
		params["requestState"] = state
		params["inputResponses"] = responses
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
	return string(b)
}

// postModern posts body to url as a 2026-07-28 request with token and
// returns the JSON-RPC result.
func postModern(t *testing.T, url, token, body string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "execute_script")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var msg map[string]any
	data, _ := readMessage(resp)
	if err := json.Unmarshal(data, &msg); err != nil {
		t.Fatalf("status %d: %v: %s", resp.StatusCode, err, data)
	}
	res, _ := msg["result"].(map[string]any)
	if res == nil {
		t.Fatalf("no result: %s", data)
	}
	return res
}

// readMessage reads the one JSON-RPC message of a response, plain JSON
// or the data of its event stream's first message.
func readMessage(resp *http.Response) ([]byte, error) {
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var b bytes.Buffer
		_, err := b.ReadFrom(resp.Body)
		return b.Bytes(), err
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && strings.Contains(data, `"result"`) {
			return []byte(data), nil
		}
	}
	return nil, fmt.Errorf("no message in the event stream: %v", sc.Err())
}

// startHAProxy runs a real HAProxy balancing round robin over backends
// (host:port) and returns its address.
func startHAProxy(t *testing.T, backends ...string) string {
	t.Helper()
	needProgram(t, "haproxy") // .ci/run installs it
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		t.Fatal(err)
	}
	// The listening socket is the test's, handed to HAProxy (bind fd@3):
	// it listens before HAProxy starts, so a request waits in its backlog
	// until HAProxy accepts it, and nobody can take the port meanwhile.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	socket, err := l.(*net.TCPListener).File()
	l.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer socket.Close() // the child's copy is the only one left once it runs
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "global\n    maxconn 256\ndefaults\n    mode http\n    timeout connect 5s\n    timeout client 60s\n    timeout server 60s\n")
	fmt.Fprintf(&cfg, "frontend mcp\n    bind fd@3\n    default_backend toolscript\nbackend toolscript\n    balance roundrobin\n")
	for i, b := range backends {
		fmt.Fprintf(&cfg, "    server replica%d %s\n", i+1, b)
	}
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	testfile.Write(t, path, cfg.String())
	// A configuration HAProxy refuses fails here, before any request.
	check := exec.Command(bin, "-c", "-f", path)
	check.ExtraFiles = []*os.File{socket}
	if out, err := check.CombinedOutput(); err != nil {
		t.Fatalf("haproxy -c: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-db", "-f", path)
	cmd.ExtraFiles = []*os.File{socket} // fd 3 in the child
	var out syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("haproxy:\n%s", out.String())
		}
	})
	return "http://" + addr
}

// writeApprovalConfig writes a configuration of the notes API (with its
// extra lines) whose rule asks a person about every POST, with effects as
// its [effects] keys.
func writeApprovalConfig(t *testing.T, dir string, api *notesAPI, extra, effects string) {
	t.Helper()
	testconfig.Write(t, dir, notesSection(api.URL, extra)+
		"[[policy]]\nname = \"new notes need a person\"\nwhen = 'effect.method == \"POST\"'\naction = \"ask\"\n"+
		"[effects]\n"+effects)
}

// startApprovalReplicas starts two `serve --http --stateless` replicas (with
// more args) of writeApprovalConfig's configuration, sharing its state key
// and an io directory and, when shareStates, a state_dir. It returns them,
// their issuer and the io directory.
func startApprovalReplicas(t *testing.T, api *notesAPI, extra string, shareStates bool, args ...string) ([]*hostedProcess, *authtest.Issuer, string) {
	t.Helper()
	dir := t.TempDir()
	ioDir := filepath.Join(dir, "files")
	if err := os.MkdirAll(ioDir, 0o755); err != nil {
		t.Fatal(err)
	}
	effects := "state_key = \"${TOOLSCRIPT_STATE_KEY}\"\n"
	if shareStates {
		stateDir := filepath.Join(dir, "states") // the replicas' shared memory of resumed states
		if err := os.MkdirAll(stateDir, 0o755); err != nil {
			t.Fatal(err)
		}
		effects += "state_dir = " + testconfig.Quote(stateDir) + "\n"
	}
	writeApprovalConfig(t, dir, api, extra, effects)
	iss, auth := issuerArgs(t)
	t.Setenv("TOOLSCRIPT_STATE_KEY", strings.Repeat("5e", 32)) // 32 bytes, hex
	var replicas []*hostedProcess
	for range 2 {
		replicas = append(replicas, startServe(t, dir, append(append([]string{"--stateless", "--io-dir", ioDir}, args...), auth...)...))
	}
	return replicas, iss, ioDir
}

func TestApprovalResumesOnTheOtherReplica(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	api := newNotesAPI(t)
	replicas, iss, ioDir := startApprovalReplicas(t, api, "", true)
	var backends []string
	for _, p := range replicas {
		backends = append(backends, strings.TrimPrefix(p.base, "http://"))
	}
	url := startHAProxy(t, backends...) + "/mcp"
	token := iss.Token(t, "RS256", "alice")

	first := postModern(t, url, token, modernCall(1, replicaScript, "", nil))
	if first["resultType"] != "input_required" {
		t.Fatalf("the first call: %v", first)
	}
	state, _ := first["requestState"].(string)
	if state == "" {
		t.Fatalf("no requestState: %v", first)
	}
	if got := api.count(http.MethodPost); got != 0 {
		t.Fatalf("%d POSTs before the answer", got)
	}
	retry := postModern(t, url, token, modernCall(2, replicaScript, state, map[string]any{"action": "accept", "content": map[string]any{}}))
	sc, _ := retry["structuredContent"].(map[string]any)
	if sc == nil || sc["error"] != nil {
		t.Fatalf("the retry: %v", retry)
	}
	if got := fmt.Sprint(sc["result"]); got != "map[before:1 made:approved]" {
		t.Errorf("result %s", got)
	}
	if gets, posts := api.count(http.MethodGet), api.count(http.MethodPost); gets != 1 || posts != 1 {
		t.Errorf("the API got %d GETs and %d POSTs, want each once", gets, posts)
	}
	// The io directory the replicas share holds each write once.
	userDirs, _ := filepath.Glob(filepath.Join(ioDir, "u.alice.*"))
	if len(userDirs) != 1 {
		t.Fatalf("alice's directories: %v", userDirs)
	}
	for name, want := range map[string]string{"before.txt": "written before the ask", "after.txt": "written after: approved"} {
		if b, err := os.ReadFile(filepath.Join(userDirs[0], name)); err != nil || string(b) != want {
			t.Errorf("%s: %q %v, want %q", name, b, err, want)
		}
	}
	// The state resumes once: sent again, it is refused and nothing runs.
	again := postModern(t, url, token, modernCall(3, replicaScript, state, map[string]any{"action": "accept", "content": map[string]any{}}))
	if again["isError"] != true || !strings.Contains(fmt.Sprint(again["content"]), "requestState") {
		t.Errorf("a state resumed twice: %v", again)
	}
	if posts := api.count(http.MethodPost); posts != 1 {
		t.Errorf("%d POSTs after a replayed state", posts)
	}
	// Which replica served which: the pause on one, the resume on the
	// other. (Stopped first: a request's access log line is written by
	// the time its server has shut down.)
	for _, p := range replicas {
		p.cmd.Process.Signal(syscall.SIGTERM)
		<-p.exited
	}
	paused, resumed := -1, -1
	for i, p := range replicas {
		log := p.stderr.String()
		if strings.Contains(log, `"outcome":"input_required"`) {
			paused = i
		}
		if strings.Contains(log, `"outcome":"ok"`) {
			resumed = i
			// The execution's decisions, counted once: the write before
			// the ask (replayed) and the approved POST.
			if !strings.Contains(log, `"outcome":"ok","decisions":{"allowed":1,"approved":1}`) {
				t.Errorf("the resuming replica's access log lacks the execution's decisions:\n%s", log)
			}
		}
	}
	if paused < 0 || resumed < 0 || paused == resumed {
		t.Errorf("paused on replica %d, resumed on %d: want two different replicas", paused, resumed)
	}
}

// TestApprovalRecorded: with [effects] record_dir, a paused execution
// resumed in place is one execution, recorded whole: the trace holds the
// effect asked about, approved, and what came after it.
func TestApprovalRecorded(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	api := newNotesAPI(t)
	dir := t.TempDir()
	records := filepath.Join(dir, "records")
	if err := os.MkdirAll(records, 0o755); err != nil {
		t.Fatal(err)
	}
	writeApprovalConfig(t, dir, api, "", "record_dir = "+testconfig.Quote(records)+"\n")
	iss, auth := issuerArgs(t)
	p := startServe(t, dir, append([]string{"--stateless", "--io-dir", filepath.Join(dir, "files")}, auth...)...)
	token := iss.Token(t, "RS256", "alice")
	first := postModern(t, p.url, token, modernCall(1, replicaScript, "", nil))
	state, _ := first["requestState"].(string)
	if first["resultType"] != "input_required" || state == "" {
		t.Fatalf("the first call: %v", first)
	}
	retry := postModern(t, p.url, token, modernCall(2, replicaScript, state, map[string]any{"action": "accept", "content": map[string]any{}}))
	if sc, _ := retry["structuredContent"].(map[string]any); sc == nil || sc["error"] != nil {
		t.Fatalf("the retry: %v", retry)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	<-p.exited
	traces, _ := filepath.Glob(filepath.Join(records, "*", "*"))
	if len(traces) != 1 {
		t.Fatalf("traces %v, want the one execution's", traces)
	}
	b, err := os.ReadFile(traces[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"decision":"approved"`, `"op":"end"`, `"path":"after.txt"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the trace lacks %s:\n%s", want, b)
		}
	}
	if posts := api.count(http.MethodPost); posts != 1 {
		t.Errorf("%d POSTs", posts)
	}
}

// TestApprovalRetryRefused: over the wire, a retry whose requestState
// fails a check is refused with an error that says what was wrong, and
// nothing runs: the state of another user or another client, for another
// script or other arguments, altered, cut short or too large; and, on the
// replica that resumes by replay, a state whose prefix read a file that
// changed before the retry. The effect the person was asked about is
// never made.
func TestApprovalRetryRefused(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	api := newNotesAPI(t)
	replicas, iss, ioDir := startApprovalReplicas(t, api, notesCredential+"\n", false)
	pausing, resuming := replicas[0].url, replicas[1].url
	alice, bob := iss.Token(t, "RS256", "alice"), iss.Token(t, "RS256", "bob")

	// Alice's in.txt, which the script reads before its ask.
	if res := postModern(t, pausing, alice, modernCall(1, `io.open("in.txt", "w"):write("s3cret-token"):close()`, "", nil)); res["isError"] == true {
		t.Fatalf("writing in.txt: %v", res)
	}
	script := `local f = io.open("in.txt") local input = f:read("a") f:close() return sdk.notes.create_note({ text = input }).text`
	first := postModern(t, pausing, alice, modernCall(2, script, "", nil))
	state, _ := first["requestState"].(string)
	if first["resultType"] != "input_required" || state == "" {
		t.Fatalf("the first call: %v", first)
	}
	// The question shows the effect as a dry run does, and the rule; the
	// credential the script read from in.txt is redacted, the frozen
	// parameter shown by name.
	question := fmt.Sprint(first["inputRequests"])
	for _, want := range []string{`the rule "new notes need a person" asks`, "call sdk.notes.create_note (POST " + api.URL + "/{team}/notes"} {
		if !strings.Contains(question, want) {
			t.Errorf("the question lacks %q: %s", want, question)
		}
	}
	if strings.Contains(question, "s3cret-token") || strings.Contains(question, "/core/") {
		t.Errorf("the question shows the credential or the frozen parameter: %s", question)
	}
	altered := []byte(state) // one base64url character in the middle, another
	if altered[len(altered)/2] = 'A'; state[len(state)/2] == 'A' {
		altered[len(altered)/2] = 'B'
	}
	accept := map[string]any{"action": "accept", "content": map[string]any{}}
	args := map[string]any{"script": script}
	for i, tc := range []struct {
		name, token, client string
		args                map[string]any
		state, want         string
	}{
		{"another user", bob, "replica-test", args, state, "belongs to another user"},
		{"another client", alice, "other-client", args, state, "belongs to another client"},
		{"another script", alice, "replica-test", map[string]any{"script": script + " "}, state, "is for another script"},
		{"other arguments", alice, "replica-test", map[string]any{"script": script, "timeout_ms": 5000}, state, "is for other arguments"},
		{"altered", alice, "replica-test", args, string(altered), "was modified"},
		{"truncated", alice, "replica-test", args, state[:len(state)-8], "is cut short"},
		{"too large", alice, "replica-test", args, strings.Repeat("A", 2<<20), "is too large"},
	} {
		for _, url := range []string{pausing, resuming} {
			res := postModern(t, url, tc.token, modernCallOf(10+i, tc.client, tc.args, tc.state, map[string]any{"approval": accept}))
			if text := fmt.Sprint(res["content"]); res["isError"] != true || !strings.Contains(text, "Invalid requestState: ") ||
				!strings.Contains(text, tc.want) || !strings.Contains(text, "nothing ran") {
				t.Errorf("%s: %v; want an error saying the requestState %s", tc.name, res, tc.want)
			}
		}
	}
	// 100 MB: the body is refused before it is read whole.
	req, _ := http.NewRequest(http.MethodPost, resuming, io.MultiReader(strings.NewReader(modernCall(20, script, "", nil)[:40]), io.LimitReader(zeroes{}, 100<<20)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+alice)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("a 100 MB retry: status %d", resp.StatusCode)
		}
	}
	if posts := api.count(http.MethodPost); posts != 0 {
		t.Fatalf("%d POSTs after refused retries", posts)
	}

	// A file the prefix read changed: the replica that replays refuses.
	userDirs, _ := filepath.Glob(filepath.Join(ioDir, "u.alice.*"))
	if len(userDirs) != 1 {
		t.Fatalf("alice's directories: %v", userDirs)
	}
	testfile.Write(t, filepath.Join(userDirs[0], "in.txt"), "Tom")
	res := postModern(t, resuming, alice, modernCall(30, script, state, accept))
	sc, _ := res["structuredContent"].(map[string]any)
	errObj, _ := sc["error"].(map[string]any)
	if msg := fmt.Sprint(errObj["message"]); errObj["kind"] != "replay" || !strings.Contains(msg, "in.txt changed since the pause") || !strings.Contains(msg, "nothing ran") {
		t.Errorf("a changed file: %v", res)
	}
	if posts := api.count(http.MethodPost); posts != 0 {
		t.Errorf("%d POSTs after a refused resume", posts)
	}
}

// zeroes reads as an endless run of '0'.
type zeroes struct{}

func (zeroes) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = '0'
	}
	return len(p), nil
}

// TestApprovalResumesOnlyInPlace: a pause that resumes only in the
// process that paused it (a file open at the pause; an upstream server
// waiting for its request's answer). Its retry reaching the other replica
// is refused, saying why, and nothing runs; the same retry then reaching
// the replica that holds the execution resumes it there: the refusal did
// not use the state up, though the replicas share their memory of
// resumed states.
func TestApprovalResumesOnlyInPlace(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	api := newNotesAPI(t)
	replicas, iss, ioDir := startApprovalReplicas(t, api, "", true, "--mcp=ev="+testupstreams.Shell(testupstreams.Everything(t)))
	holder, other := replicas[0].url, replicas[1].url
	token := iss.Token(t, "RS256", "alice")
	for i, tc := range []struct {
		name, script string
		answer       func(id string) any // the client's answer to the input request id
		why, want    string
	}{
		{"a file open", `local f = io.open("kept.txt", "w") f:write("opened before the ask")
			local made = sdk.notes.create_note({ text = "approved" }) f:close() return made.text`,
			func(string) any { return map[string]any{"action": "accept", "content": map[string]any{}} },
			"file(s) open", "approved"},
		{"an upstream waiting", `return sdk.ev.trigger_sampling_request({ prompt = "hi" })`,
			func(string) any {
				return map[string]any{"role": "assistant", "model": "m", "content": map[string]any{"type": "text", "text": "sampled by the test"}}
			},
			"an upstream MCP server waits in it", "sampled by the test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			first := postModern(t, holder, token, modernCall(100*i+1, tc.script, "", nil))
			state, _ := first["requestState"].(string)
			requests, _ := first["inputRequests"].(map[string]any)
			if first["resultType"] != "input_required" || state == "" || len(requests) != 1 {
				t.Fatalf("the first call: %v", first)
			}
			responses := map[string]any{}
			for id := range requests {
				responses[id] = tc.answer(id)
			}
			retry := func(id int) string {
				return modernCallOf(id, "replica-test", map[string]any{"script": tc.script}, state, responses)
			}
			refused := postModern(t, other, token, retry(100*i+2))
			if text := fmt.Sprint(refused["structuredContent"]); refused["isError"] != true || !strings.Contains(text, "resumes only in the process that paused it") ||
				!strings.Contains(text, tc.why) || !strings.Contains(text, "nothing ran") {
				t.Errorf("the retry on the other replica: %v", refused)
			}
			resumed := postModern(t, holder, token, retry(100*i+3))
			if sc, _ := resumed["structuredContent"].(map[string]any); sc == nil || sc["error"] != nil || !strings.Contains(fmt.Sprint(sc["result"]), tc.want) {
				t.Errorf("the retry on the replica that holds it: %v", resumed)
			}
		})
	}
	if posts := api.count(http.MethodPost); posts != 1 {
		t.Errorf("%d POSTs, want the one approved", posts)
	}
	userDirs, _ := filepath.Glob(filepath.Join(ioDir, "u.alice.*", "kept.txt"))
	if len(userDirs) != 1 {
		t.Fatalf("kept.txt: %v", userDirs)
	}
	if b, _ := os.ReadFile(userDirs[0]); string(b) != "opened before the ask" {
		t.Errorf("kept.txt holds %q", b)
	}
}
