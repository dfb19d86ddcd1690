package sdk

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/contract/effects/effectstest"
	"github.com/toolscript/toolscript/host/contract/sdkcall"
)

// In a dry run, a safe call reaches the test API and an unsafe one does
// not: it is logged (method, URL, body; never the credential) and answered
// with a response made up from the spec. Calls still count against
// max_calls, and a bad argument is the same error as in a real run.
func TestDryRunSession(t *testing.T) {
	a := newTestAPI(t)
	c := newClient(t, a, Config{MaxCalls: 5}, APIConfig{Auth: &Credential{Token: "sekrit-token"}})
	run := effects.New(effects.DryRun)
	s := c.Session(nil).WithEffects(run)

	before := a.requests.Load()
	if r := call(t, s, "get_pet", `[{"petId":7}]`); r.Fail != sdkcall.OK || r.DryRun || a.requests.Load() != before+1 {
		t.Fatalf("a safe call: %+v, %d requests", r, a.requests.Load()-before)
	}
	big := strings.Repeat("n", effects.MaxBodyBytes)
	for _, tc := range []struct {
		fn, args string
		status   int
		body     string
	}{
		{"create_pet", `[{"name":"Rex","status":"sold"}]`, 201, `{"name":"","id":0}`},
		{"delete_pet", `[{"petId":7}]`, 204, ``},
		{"update_pet", `[{"petId":7},{"name":"` + big + `"}]`, 200, ``},
	} {
		r := call(t, s, tc.fn, tc.args)
		if r.Fail != sdkcall.OK || !r.DryRun || r.Status != tc.status || string(r.JSON) != tc.body {
			t.Errorf("%s: %+v %s", tc.fn, r, r.JSON)
		}
	}
	if got := a.requests.Load() - before; got != 1 {
		t.Errorf("%d requests reached the API, want the one GET", got)
	}
	if r := call(t, s, "create_pet", `[{"nam":"Rex"}]`); r.Fail != sdkcall.Argument {
		t.Errorf("a bad argument: %+v", r)
	}
	if r := call(t, s, "create_pet", `[{"name":"Rex"}]`); r.Fail != sdkcall.OK || !r.DryRun {
		t.Errorf("the fifth call: %+v", r)
	}
	if r := call(t, s, "create_pet", `[{"name":"Rex"}]`); r.Fail != sdkcall.Limit {
		t.Errorf("the sixth call: %+v", r)
	}

	log, _ := run.Effects()
	text, _ := json.Marshal(log)
	if strings.Contains(string(text), "sekrit") {
		t.Errorf("the credential is in the effects: %s", text)
	}
	if len(log) != 4 {
		t.Fatalf("effects: %s", text)
	}
	url := a.srv.URL
	if e := log[0]; e.Function != "sdk.pets.create_pet" || e.Method != "POST" || e.URL != url+"/pets" || string(e.Body) != `{"name":"Rex","status":"sold"}` {
		t.Errorf("create_pet: %+v", e)
	}
	if e := log[1]; e.Method != "DELETE" || e.URL != url+"/pets/7" || e.Body != nil {
		t.Errorf("delete_pet: %+v", e)
	}
	if e := log[2]; e.Method != "PUT" || e.Body != nil || e.BodyBytes != int64(len(big)+len(`{"name":""}`)) || len(e.BodySHA256) != 64 {
		t.Errorf("update_pet: %+v", e)
	}
}

// A real run (no effects layer, or a real one) sends every call.
func TestRealRunSession(t *testing.T) {
	a := newTestAPI(t)
	c := newClient(t, a, Config{}, APIConfig{})
	for _, s := range []*Session{c.Session(nil), c.Session(nil).WithEffects(effects.New(effects.Real))} {
		before := a.requests.Load()
		if r := call(t, s, "delete_pet", `[{"petId":7}]`); r.DryRun || a.requests.Load() != before+1 {
			t.Errorf("a real run: %+v", r)
		}
	}
}

// A Swagger 2.0 spec read over HTTP: a dry run of its POST is not sent,
// and answers with the example its response gives for application/json;
// its GET is sent.
func TestDryRunSwagger2Example(t *testing.T) {
	const spec = `swagger: "2.0"
info: { title: things, version: "1" }
basePath: /v1
produces: [application/json]
consumes: [application/json]
paths:
  /things:
    get:
      operationId: listThings
      responses:
        "200": { description: ok, schema: { type: array, items: { type: object } } }
    post:
      operationId: createThing
      parameters:
        - { name: body, in: body, required: true, schema: { type: object, properties: { name: { type: string } } } }
      responses:
        "201":
          description: created
          schema:
            type: object
            required: [id, name]
            properties: { id: { type: integer }, name: { type: string } }
          examples:
            application/json: { id: 42, name: "the example" }
`
	var sent atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/spec.yaml":
			w.Write([]byte(spec))
		case "/v1/things":
			sent.Add(1)
			w.Header().Set("Content-Type", "application/json")
			if r.Method == http.MethodPost {
				w.WriteHeader(http.StatusCreated)
				w.Write([]byte(`{"id":1,"name":"real"}`))
				return
			}
			w.Write([]byte(`[]`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	c, err := open(context.Background(), Config{APIs: []APIConfig{{Name: "sw", Spec: srv.URL + "/spec.yaml"}}}, testSources{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	s := c.Session(nil).WithEffects(effects.New(effects.DryRun))
	r := call(t, s, "create_thing", `[{"name":"x"}]`)
	if r.Fail != sdkcall.OK || !r.DryRun || r.Status != 201 || string(r.JSON) != `{"id":42,"name":"the example"}` {
		t.Errorf("the dry run's POST: %+v %s", r, r.JSON)
	}
	if n := sent.Load(); n != 0 {
		t.Errorf("%d requests reached the API in a dry run of a POST", n)
	}
	if r := call(t, s, "list_things", `[]`); r.Fail != sdkcall.OK || r.DryRun || sent.Load() != 1 {
		t.Errorf("the dry run's GET: %+v, %d requests", r, sent.Load())
	}
}

// [apis.NAME] safe and unsafe classify operations against their method:
// in a dry run a POST declared safe reaches the API, a GET declared unsafe
// is held; names are operationIds or sdk function names.
func TestDryRunOverrides(t *testing.T) {
	a := newTestAPI(t)
	c := newClient(t, a, Config{}, APIConfig{Safety: Safety{Safe: []string{"createPet"}, Unsafe: []string{"get_pet", "listPets"}}})
	s := c.Session(nil).WithEffects(effects.New(effects.DryRun))
	for _, tc := range []struct {
		fn, args string
		sent     bool
	}{
		{"create_pet", `[{"name":"Rex"}]`, true},
		{"get_pet", `[{"petId":7}]`, false},
		{"list_pets", `[]`, false},
		{"delete_pet", `[{"petId":7}]`, false},
		{"public_info", `[]`, true},
	} {
		before := a.requests.Load()
		r := call(t, s, tc.fn, tc.args)
		if sent := a.requests.Load() != before; sent != tc.sent || r.DryRun == tc.sent {
			t.Errorf("%s: sent %v, dry_run %v (%+v), want sent %v", tc.fn, sent, r.DryRun, r, tc.sent)
		}
	}
}

// A name the spec does not have is an error naming the API, the list and
// the closest names; a function named in both lists (by its operationId and
// its sdk name) is one too.
func TestOverrideErrors(t *testing.T) {
	a := newTestAPI(t)
	for _, tc := range []struct {
		name   string
		safety Safety
		want   []string
	}{
		{"misspelt", Safety{Safe: []string{"createPett"}}, []string{`api pets: [apis.pets] safe: "createPett" is not an operation of pets (close: "createPet", "create_pet")`, "checked when the spec is loaded"}},
		{"unsafe", Safety{Unsafe: []string{"nothing_like_it"}}, []string{`[apis.pets] unsafe: "nothing_like_it" is not an operation of pets;`}},
		{"both names", Safety{Safe: []string{"createPet"}, Unsafe: []string{"create_pet"}}, []string{`function create_pet (createPet) is both safe (as "createPet") and unsafe (as "create_pet")`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(&catalog.Catalog{APIs: []*catalog.API{loadTestAPI(t, "pets")}},
				Config{APIs: []APIConfig{{Name: "pets", BaseURL: a.srv.URL, Safety: tc.safety}}})
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v, want %q", err, w)
				}
			}
		})
	}
}

// In a plan run, an unsafe call the plan holds is sent, and one it does
// not hold is not: the test API never receives it, the session answers
// with the plan's reason, and every later unsafe call is refused too.
func TestPlanSession(t *testing.T) {
	a := newTestAPI(t)
	c := newClient(t, a, Config{}, APIConfig{Auth: &Credential{Token: "sekrit-token"}})
	dry := effects.New(effects.DryRun)
	ds := c.Session(nil).WithEffects(dry)
	call(t, ds, "create_pet", `[{"name":"Rex","status":"sold"}]`)
	call(t, ds, "delete_pet", `[{"petId":7}]`)
	log, _ := dry.Effects()
	plan := effectstest.Plan(t, log)

	tests := []struct {
		name  string
		calls [][2]string // function, arguments
		sent  int64       // requests the API receives
		stop  string      // "" when the run is not stopped, else a part of its reason
	}{
		{"the plan", [][2]string{{"create_pet", `[{"status":"sold","name":"Rex"}]`}, {"delete_pet", `[{"petId":7}]`}}, 2, ""},
		{"a safe call between", [][2]string{{"create_pet", `[{"name":"Rex","status":"sold"}]`}, {"get_pet", `[{"petId":7}]`}, {"delete_pet", `[{"petId":7}]`}}, 3, ""},
		{"another body", [][2]string{{"create_pet", `[{"name":"Max","status":"sold"}]`}, {"delete_pet", `[{"petId":7}]`}}, 0,
			`sdk.pets.create_pet: the script attempted call sdk.pets.create_pet (POST ` + a.srv.URL + `/pets, headers {Content-Type: "application/json"}) with body {"name":"Max","status":"sold"}, which the plan does not hold`},
		{"another URL", [][2]string{{"create_pet", `[{"name":"Rex","status":"sold"}]`}, {"delete_pet", `[{"petId":8}]`}}, 1, "another URL"},
		{"past the plan", [][2]string{{"create_pet", `[{"name":"Rex","status":"sold"}]`}, {"delete_pet", `[{"petId":7}]`}, {"delete_pet", `[{"petId":7}]`}}, 2,
			"the plan has no more entries (all 2 were applied)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := effects.NewPlan(plan)
			s := c.Session(nil).WithEffects(run)
			before := a.requests.Load()
			var last *sdkcall.Response
			for _, fc := range tt.calls {
				last = call(t, s, fc[0], fc[1])
				if run.Err() != nil {
					break
				}
				if last.Fail != sdkcall.OK || last.DryRun {
					t.Fatalf("%s: %+v", fc[0], last)
				}
			}
			if got := a.requests.Load() - before; got != tt.sent {
				t.Errorf("%d requests reached the API, want %d", got, tt.sent)
			}
			switch {
			case tt.stop == "" && run.Err() != nil:
				t.Errorf("stopped: %v", run.Err())
			case tt.stop != "" && (run.Err() == nil || last.Fail == sdkcall.OK || !strings.Contains(last.Message, tt.stop)):
				t.Errorf("stop %v; last response %+v; want %q", run.Err(), last, tt.stop)
			}
			if tt.stop != "" {
				// Nothing unsafe after the stop is sent, even the plan's.
				if r := call(t, s, "create_pet", `[{"name":"Rex","status":"sold"}]`); r.Fail == sdkcall.OK {
					t.Errorf("a call after the stop: %+v", r)
				}
				if got := a.requests.Load() - before; got != tt.sent {
					t.Errorf("%d requests reached the API after the stop, want %d", got, tt.sent)
				}
			}
			if strings.Contains(fmt.Sprint(run.Err()), "sekrit") {
				t.Errorf("the credential is in the reason: %v", run.Err())
			}
		})
	}
}

// [mcp_servers.NAME] safe and unsafe classify tools against their
// readOnlyHint; a tool name the server does not list is an error when the
// tools are listed at start, and waits for the tool under serve (servers
// started in the background, whose tools may come later).
func TestToolOverrides(t *testing.T) {
	yes := true
	mcpAPI := func() *catalog.API {
		return &catalog.API{Name: "notes", Kind: catalog.MCP, Functions: []*catalog.Function{
			{Name: "read_note", Kind: catalog.MCP, Tool: "read-note", Hints: &catalog.Hints{ReadOnly: &yes}},
			{Name: "write_note", Kind: catalog.MCP, Tool: "write_note"},
			{Name: "search", Kind: catalog.MCP, Tool: "search"},
		}}
	}
	c := clientOf(t, Config{ToolSafety: map[string]Safety{"notes": {Safe: []string{"search"}, Unsafe: []string{"read-note"}}}}, mcpAPI())
	got := map[string]effects.Safety{}
	for _, f := range c.ordered {
		got[f.fn.Name] = f.safety
	}
	if got["read_note"] != effects.Unsafe || got["write_note"] != effects.Unsafe || got["search"] != effects.Safe {
		t.Errorf("safety %v", got)
	}
	bad := Config{ToolSafety: map[string]Safety{"notes": {Safe: []string{"serch"}}}}
	if _, err := New(&catalog.Catalog{APIs: []*catalog.API{mcpAPI()}}, bad); err == nil ||
		!strings.Contains(err.Error(), `mcp server notes: [mcp_servers.notes] safe: "serch" is not a tool of notes (close: "search")`) {
		t.Errorf("an unknown tool: %v", err)
	}
	bad.StartUpstreamsInBackground = true
	if _, err := New(&catalog.Catalog{APIs: []*catalog.API{mcpAPI()}}, bad); err != nil {
		t.Errorf("an unknown tool under serve: %v", err)
	}
}
