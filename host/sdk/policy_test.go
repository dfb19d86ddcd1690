package sdk

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/contract/policy"
	"github.com/toolscript/toolscript/host/contract/sdkcall"
)

// person answers every question with one answer and keeps the questions.
type person struct {
	answer    effects.Answer
	questions []effects.Question
}

func (p *person) Ask(q effects.Question) (effects.Answer, error) {
	p.questions = append(p.questions, q)
	return p.answer, nil
}

var petRules = []policy.Rule{
	{Name: "no deletes", When: `effect.method == "DELETE"`, Action: "deny"},
	{Name: "pet 13 is private", When: `effect.safe && effect.params.petId == 13`, Action: "deny"},
	{Name: "named Rex", When: `effect.function == "sdk.pets.create_pet" && effect.body.name == "Rex" && effect.api == "pets" && effect.operation == "createPet" && effect.path == "/pets"`, Action: "ask"},
	{Name: "sold pets", When: `has(effect.body.status) && effect.body.status == "sold"`, Action: "deny"},
}

// Rules decide every call of a real run against the real test API: a
// denied call never reaches it and the script gets an error it may catch
// (Fail Argument: a plain Lua error) naming the rule; an asked one
// reaches it when the person approves, not when they decline; safe calls
// are decided because a rule names effect.safe. Every decision is logged.
func TestRulesDecideCalls(t *testing.T) {
	set, err := policy.Compile(petRules, effects.ActionAllow)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, fn, args string
		answer         effects.Answer
		sent           bool
		message        string
		decision, rule string
	}{
		{name: "denied delete", fn: "delete_pet", args: `[{"petId":7}]`, message: `sdk.pets.delete_pet: denied by rule "no deletes"`, decision: "denied", rule: "no deletes"},
		{name: "denied safe call", fn: "get_pet", args: `[{"petId":13}]`, message: `sdk.pets.get_pet: denied by rule "pet 13 is private"`, decision: "denied", rule: "pet 13 is private"},
		{name: "allowed safe call", fn: "get_pet", args: `[{"petId":7}]`, sent: true},
		{name: "approved", fn: "create_pet", args: `[{"name":"Rex"}]`, answer: effects.Approve, sent: true, decision: "approved", rule: "named Rex"},
		{name: "declined", fn: "create_pet", args: `[{"name":"Rex"}]`, answer: effects.Decline, message: `sdk.pets.create_pet: denied: declined by a person (rule "named Rex" asked)`, decision: "declined", rule: "named Rex"},
		{name: "body rule", fn: "create_pet", args: `[{"name":"Tom","status":"sold"}]`, message: `denied by rule "sold pets"`, decision: "denied", rule: "sold pets"},
		{name: "default allows", fn: "create_pet", args: `[{"name":"Tom"}]`, sent: true, decision: "allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newTestAPI(t)
			c := newClient(t, a, Config{}, APIConfig{})
			who := &person{answer: tc.answer}
			run := effects.New(effects.Real).WithRules(set.For(policy.Who{Sub: "ann"}), who)
			s := c.Session(nil).WithEffects(run)
			r := call(t, s, tc.fn, tc.args)
			if sent := a.requests.Load() == 1; sent != tc.sent {
				t.Fatalf("sent = %v, want %v (%+v)", sent, tc.sent, r)
			}
			if tc.message != "" && (r.Fail != sdkcall.Argument || !strings.Contains(r.Message, tc.message)) {
				t.Fatalf("response %+v, want a catchable error with %q", r, tc.message)
			}
			if tc.message == "" && r.Fail != sdkcall.OK {
				t.Fatalf("response %+v", r)
			}
			if tc.message != "" && !run.Denied("script:3: "+r.Message) {
				t.Error("the run does not know the denial")
			}
			log, _ := run.Effects()
			if tc.decision == "" {
				if len(log) != 0 {
					t.Fatalf("logged %+v", log)
				}
				return
			}
			if len(log) != 1 || log[0].Decision != tc.decision || log[0].Rule != tc.rule || log[0].Function != "sdk.pets."+tc.fn {
				text, _ := json.Marshal(log)
				t.Fatalf("log %s, want %s by %q", text, tc.decision, tc.rule)
			}
			if tc.answer != effects.Decline || len(who.questions) > 0 {
				for _, q := range who.questions {
					if q.Rule != "named Rex" || q.Effect.URL != a.srv.URL+"/pets" || string(q.Effect.Body) != `{"name":"Rex"}` {
						t.Errorf("question %+v", q)
					}
				}
			}
		})
	}
}

// An MCP tool's arguments are effect.args.
func TestRulesSeeToolArguments(t *testing.T) {
	set, err := policy.Compile([]policy.Rule{{Name: "no etc", When: `effect.args.path.startsWith("/etc")`, Action: "deny"}}, effects.ActionAllow)
	if err != nil {
		t.Fatal(err)
	}
	fn := &function{name: "sdk.fs.read", fn: &catalog.Function{Name: "read", Kind: catalog.MCP, Tool: "read"}, api: &apiState{api: &catalog.API{Name: "fs", Kind: catalog.MCP}}}
	facts := callFacts(fn)
	f := &facts
	e := tool{}.effect(&Session{}, fn, json.RawMessage(`[{"path":"/etc/passwd"}]`), f)
	if v := set.For(policy.Who{}).Decide(f); v.Action != effects.ActionDeny || f.Operation != "read" || f.API != "fs" || e.Function != "sdk.fs.read" {
		t.Fatalf("verdict %+v, facts %+v", v, f)
	}
}

// Rules that look only at the function decide without the request, and a
// denied call is still logged as the dry run shows it.
func TestRulesWithoutTheRequest(t *testing.T) {
	set, err := policy.Compile([]policy.Rule{{Name: "no deletes", When: `effect.method == "DELETE" && effect.operation == "deletePet"`, Action: "deny"}}, effects.ActionAllow)
	if err != nil || set.NeedsRequest() {
		t.Fatalf("%v, needs the request: %v", err, set.NeedsRequest())
	}
	a := newTestAPI(t)
	c := newClient(t, a, Config{}, APIConfig{})
	run := effects.New(effects.Real).WithRules(set.For(policy.Who{}), nil)
	s := c.Session(nil).WithEffects(run)
	if r := call(t, s, "delete_pet", `[{"petId":7}]`); r.Fail != sdkcall.Argument || a.requests.Load() != 0 {
		t.Fatalf("%+v, %d requests", r, a.requests.Load())
	}
	if r := call(t, s, "create_pet", `[{"name":"Rex"}]`); r.Fail != sdkcall.OK || a.requests.Load() != 1 {
		t.Fatalf("%+v", r)
	}
	log, _ := run.Effects()
	if len(log) != 2 || log[0].URL != a.srv.URL+"/pets/7" || log[0].Decision != "denied" || string(log[1].Body) != `{"name":"Rex"}` || log[1].Decision != "allowed" {
		t.Fatalf("log %+v", log)
	}
}
