package sdk

import (
	"encoding/json"
	"fmt"
	"strings"
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
	text, _ := json.Marshal(log)
	plan, err := effects.ParsePlan(text)
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name  string
		calls [][2]string // function, arguments
		sent  int64       // requests the API receives
		stop  string      // "" when the run is not stopped, else a part of its reason
	}{
		{"the plan", [][2]string{{"create_pet", `[{"status":"sold","name":"Rex"}]`}, {"delete_pet", `[{"petId":7}]`}}, 2, ""},
		{"a safe call between", [][2]string{{"create_pet", `[{"name":"Rex","status":"sold"}]`}, {"get_pet", `[{"petId":7}]`}, {"delete_pet", `[{"petId":7}]`}}, 3, ""},
		{"another body", [][2]string{{"create_pet", `[{"name":"Max","status":"sold"}]`}, {"delete_pet", `[{"petId":7}]`}}, 0,
			`sdk.pets.create_pet: the script attempted call sdk.pets.create_pet (POST ` + a.srv.URL + `/pets) with body {"name":"Max","status":"sold"}, which the plan does not hold`},
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
