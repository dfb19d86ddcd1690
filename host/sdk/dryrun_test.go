package sdk

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolscript/toolscript/host/effects"
	"github.com/toolscript/toolscript/host/sdkcall"
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
	c, err := Open(context.Background(), Config{APIs: []APIConfig{{Name: "sw", Spec: srv.URL + "/spec.yaml"}}})
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
