package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/contract/effects/effectstest"
	"github.com/toolscript/toolscript/host/contract/effects/trace"
	"github.com/toolscript/toolscript/host/contract/sdkcall"
	"github.com/toolscript/toolscript/host/sdk/openapi/openapitest"
	"github.com/toolscript/toolscript/host/sdk/upstream"
	"github.com/toolscript/toolscript/internal/testupstreams"
)

// accountsAPI is a real API (testdata/accounts.yaml) whose one operation,
// unsafe, takes a header, a frozen header, a cookie and a text/plain
// body; it keeps every request it receives.
type accountsAPI struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []accountsRequest
}

// accountsRequest is what the accounts API received.
type accountsRequest struct {
	target, tenant, session, contentType, auth, body string
}

func (a *accountsAPI) received() []accountsRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]accountsRequest(nil), a.got...)
}

// newAccounts starts the accounts API and a client of it (as "acct", its
// X-Tenant header frozen, a bearer credential).
func newAccounts(t *testing.T) (*accountsAPI, *Client) {
	t.Helper()
	a := &accountsAPI{}
	a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		session := ""
		if c, err := r.Cookie("session"); err == nil {
			session = c.Value
		}
		a.mu.Lock()
		a.got = append(a.got, accountsRequest{target: r.Header.Get("X-Target-Account"), tenant: r.Header.Get("X-Tenant"),
			session: session, contentType: r.Header.Get("Content-Type"), auth: r.Header.Get("Authorization"), body: string(body)})
		a.mu.Unlock()
	}))
	t.Cleanup(a.srv.Close)
	api := openapitest.Load(t, "acct", "testdata/accounts.yaml")
	c := clientOf(t, Config{APIs: []APIConfig{{Name: "acct", BaseURL: a.srv.URL,
		Auth: &Credential{Token: "sekrit-token"}, Frozen: map[string]any{"X-Tenant": "tenant-7"}}}}, api)
	return a, c
}

// runCommand calls sdk.acct.run_command with a params table and a body.
func runCommand(t *testing.T, s *Session, params map[string]any, body string) *sdkcall.Response {
	t.Helper()
	args, err := json.Marshal([]any{params, body})
	if err != nil {
		t.Fatal(err)
	}
	return call(t, s, "run_command", string(args))
}

var (
	reviewedParams = map[string]any{"id": "1", "X-Target-Account": "reviewed-account", "session": "s-reviewed"}
	reviewedBody   = `{"cmd":"ls"}`
)

// withParam is reviewedParams with name set to v (left out when v is nil).
func withParam(name string, v any) map[string]any {
	out := map[string]any{}
	for k, x := range reviewedParams {
		out[k] = x
	}
	if v == nil {
		delete(out, name)
	} else {
		out[name] = v
	}
	return out
}

// The calls that differ from the reviewed one in a byte the script
// controls: a header, the cookie, the body.
var planBindCases = []struct {
	name   string
	params map[string]any
	body   string
	want   string // "" when the call is the reviewed one, else a part of the refusal
}{
	{"the reviewed call", reviewedParams, reviewedBody, ""},
	{"another header", withParam("X-Target-Account", "attacker-account"), reviewedBody,
		`another value of header X-Target-Account: "attacker-account", not "reviewed-account"`},
	{"another cookie", withParam("session", "s-attacker"), reviewedBody, `another value of header Cookie: "session=s-attacker", not "session=s-reviewed"`},
	{"a header left out", withParam("X-Target-Account", nil), reviewedBody, `no header X-Target-Account (expected "reviewed-account")`},
	{"a duplicate key in a text body", reviewedParams, `{"cmd":"rm -rf /","cmd":"ls"}`, "another body"},
	{"the same JSON spaced otherwise", reviewedParams, `{"cmd": "ls"}`, "another body"},
}

// A plan binds every byte of a call the script controls: each header and
// cookie its parameters set (a frozen one by name), the content type and
// the exact body. A call that differs in any of them is refused, names
// what differs and never reaches the API; the reviewed call is sent.
func TestPlanBindsTheRequest(t *testing.T) {
	a, c := newAccounts(t)
	dry := effects.New(effects.DryRun)
	if r := runCommand(t, c.Session(nil).WithEffects(dry), reviewedParams, reviewedBody); r.Fail != sdkcall.OK || !r.DryRun {
		t.Fatalf("the dry run: %+v", r)
	}
	log, _ := dry.Effects()
	if len(log) != 1 {
		t.Fatalf("effects %+v", log)
	}
	want := map[string]string{"X-Target-Account": "reviewed-account", "X-Tenant": "{X-Tenant}", "Cookie": "session=s-reviewed", "Content-Type": "text/plain"}
	if e := log[0]; !equalHeaders(e.Headers, want) || string(e.Body) != reviewedBody {
		t.Errorf("the effect's headers %v and body %s, want %v and %s", e.Headers, e.Body, want, reviewedBody)
	}
	result, _ := json.Marshal(map[string]any{"result": nil, "effects": log})
	if strings.Contains(string(result), "sekrit") || strings.Contains(string(result), "tenant-7") {
		t.Errorf("the dry run shows the credential or a frozen value: %s", result)
	}
	if n := len(a.received()); n != 0 {
		t.Fatalf("the dry run sent %d requests", n)
	}
	var indented bytes.Buffer // a plan a person reformatted holds the same
	if err := json.Indent(&indented, result, "", "  "); err != nil {
		t.Fatal(err)
	}
	plan, err := effects.ParsePlan(indented.Bytes())
	if err != nil {
		t.Fatal(err)
	}

	for _, tt := range planBindCases {
		t.Run(tt.name, func(t *testing.T) {
			before := len(a.received())
			run := effects.NewPlan(plan)
			r := runCommand(t, c.Session(nil).WithEffects(run), tt.params, tt.body)
			got := a.received()[before:]
			if tt.want == "" {
				if r.Fail != sdkcall.OK || run.Err() != nil || len(got) != 1 {
					t.Fatalf("the reviewed call: %+v, %v, %d sent", r, run.Err(), len(got))
				}
				sent := got[0]
				if sent.target != "reviewed-account" || sent.tenant != "tenant-7" || sent.session != "s-reviewed" ||
					sent.body != reviewedBody || sent.auth != "Bearer sekrit-token" {
					t.Errorf("sent %+v", sent)
				}
				return
			}
			if len(got) != 0 {
				t.Errorf("the refused call reached the API: %+v", got)
			}
			if run.Err() == nil || r.Fail == sdkcall.OK || !strings.Contains(r.Message, tt.want) || !strings.Contains(r.Message, "which the plan does not hold") {
				t.Errorf("%+v, stop %v; want a refusal with %q", r, run.Err(), tt.want)
			}
		})
	}
}

// A replay compares every byte of a call the script controls with its
// trace, as a plan does: a call that differs stops the replay, and
// nothing is sent either way.
func TestReplayBindsTheRequest(t *testing.T) {
	a, c := newAccounts(t)
	var buf bytes.Buffer
	w, err := trace.NewWriter(&buf, trace.Header{Toolscript: "test"})
	if err != nil {
		t.Fatal(err)
	}
	rec := effects.NewRecording(w)
	if r := runCommand(t, c.Session(nil).WithEffects(rec), reviewedParams, reviewedBody); r.Fail != sdkcall.OK {
		t.Fatalf("the recorded call: %+v", r)
	}
	if _, _, err := rec.End([]byte(`[]`), 0); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "sekrit") || strings.Contains(buf.String(), "tenant-7") {
		t.Errorf("the trace holds the credential or a frozen value: %s", buf.String())
	}
	recorded := len(a.received())
	for _, tt := range planBindCases {
		t.Run(tt.name, func(t *testing.T) {
			tr, _, err := trace.NewReader(bytes.NewReader(buf.Bytes()), 0)
			if err != nil {
				t.Fatal(err)
			}
			run := effects.NewReplay(tr)
			r := runCommand(t, c.Session(nil).WithEffects(run), tt.params, tt.body)
			if n := len(a.received()); n != recorded {
				t.Errorf("the replay sent %d requests", n-recorded)
			}
			if tt.want == "" {
				if r.Fail != sdkcall.OK || run.Err() != nil {
					t.Errorf("the recorded call: %+v, %v", r, run.Err())
				}
				return
			}
			if run.Err() == nil || r.Fail == sdkcall.OK || !strings.Contains(r.Message, tt.want) || !strings.Contains(r.Message, "diverged from the trace") {
				t.Errorf("%+v, stop %v; want a divergence with %q", r, run.Err(), tt.want)
			}
		})
	}
}

func equalHeaders(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// A multipart body is the same bytes for the same arguments (its boundary
// comes from its content), so a plan and a replay hold it; other
// arguments are another body.
func TestPlanBindsAMultipartBody(t *testing.T) {
	a := newTestAPI(t)
	c := newClient(t, a, Config{}, APIConfig{Auth: &Credential{Token: "sekrit-token"}})
	const args = `[{"file":"hello","caption":"reviewed"}]`
	dry := effects.New(effects.DryRun)
	call(t, c.Session(nil).WithEffects(dry), "upload", args)
	log, _ := dry.Effects()
	plan := effectstest.Plan(t, log)
	for _, tt := range []struct {
		args string
		want string
	}{
		{args, ""},
		{`[{"file":"hello","caption":"other"}]`, "another"},
	} {
		before := a.requests.Load()
		run := effects.NewPlan(plan)
		r := call(t, c.Session(nil).WithEffects(run), "upload", tt.args)
		sent := a.requests.Load() - before
		switch {
		case tt.want == "" && (r.Fail != sdkcall.OK || run.Err() != nil || sent != 1):
			t.Errorf("the reviewed upload: %+v, %v, %d sent", r, run.Err(), sent)
		case tt.want != "" && (run.Err() == nil || !strings.Contains(r.Message, tt.want) || sent != 0):
			t.Errorf("another upload: %+v, %v, %d sent", r, run.Err(), sent)
		}
	}
}

// An MCP tool's call is bound by the value of its arguments, the value
// the tool gets: a plan holds the reviewed arguments in any key order,
// and refuses others before the real server (server-memory) sees them.
func TestPlanBindsAToolsArguments(t *testing.T) {
	file := t.TempDir() + "/memory.jsonl"
	argv, env := testupstreams.Memory(t, file)
	c, err := open(context.Background(), Config{}, testSources{upstreams: []upstream.Config{{Name: "mem", Command: argv[0], Args: argv[1:], Env: env}}, stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const reviewed = `[{"entities":[{"name":"alice","entityType":"person","observations":["reviewed"]}]}]`
	dry := effects.New(effects.DryRun)
	if r := call(t, c.Session(nil).WithEffects(dry), "create_entities", reviewed); r.Fail != sdkcall.OK || !r.DryRun {
		t.Fatalf("the dry run: %+v", r)
	}
	// A duplicate key is shown as the tool gets it: the last one.
	call(t, c.Session(nil).WithEffects(dry), "create_entities", `[{"entities":[{"name":"alice","entityType":"person","name":"mallory"}]}]`)
	log, _ := dry.Effects()
	if len(log) != 2 || string(log[1].Body) != `{"entities":[{"entityType":"person","name":"mallory"}]}` {
		t.Fatalf("effects %+v", log)
	}
	plan := effectstest.Plan(t, log[:1])
	for _, tt := range []struct {
		name, args, want string
	}{
		{"another name", `[{"entities":[{"name":"mallory","entityType":"person","observations":["reviewed"]}]}]`, "another body"},
		{"a duplicate key", `[{"entities":[{"name":"alice","entityType":"person","observations":["reviewed"],"name":"mallory"}]}]`, "another body"},
		{"the reviewed arguments, keys in another order", `[{"entities":[{"observations":["reviewed"],"entityType":"person","name":"alice"}]}]`, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			run := effects.NewPlan(plan)
			r := call(t, c.Session(nil).WithEffects(run), "create_entities", tt.args)
			graph, _ := os.ReadFile(file)
			if tt.want == "" {
				if r.Fail != sdkcall.OK || run.Err() != nil || !strings.Contains(string(graph), `"alice"`) {
					t.Errorf("the reviewed call: %+v, %v; graph %s", r, run.Err(), graph)
				}
				return
			}
			if run.Err() == nil || !strings.Contains(r.Message, tt.want) || strings.Contains(string(graph), "mallory") {
				t.Errorf("%+v, %v; graph %s; want a refusal with %q", r, run.Err(), graph, tt.want)
			}
		})
	}
}

// A header is held as the bytes sent: a value that reads like a frozen
// parameter's placeholder, escaped or not, is itself.
func TestEffectHeadersAreExact(t *testing.T) {
	_, c := newAccounts(t)
	dry := effects.New(effects.DryRun)
	for _, v := range []string{"{X-Tenant}", "%7BX-Tenant%7D"} {
		runCommand(t, c.Session(nil).WithEffects(dry), withParam("X-Target-Account", v), reviewedBody)
	}
	log, _ := dry.Effects()
	if len(log) != 2 || log[0].Headers["X-Target-Account"] != "{X-Tenant}" || log[1].Headers["X-Target-Account"] != "%7BX-Tenant%7D" {
		t.Errorf("effects %+v", log)
	}
}
