package effects

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/contract/effects/trace"
)

// pathRules decide by an io effect's path: the verdict its path names.
type pathRules map[string]Verdict

func (p pathRules) Decide(f *Facts) Verdict { return p[f.Path] }
func (p pathRules) DecidesSafe() bool       { return false }
func (p pathRules) NeedsRequest() bool      { return false }

// answers is an Asker that gives its answers in order and records the
// questions.
type answers struct {
	list []Answer
	err  error
	got  []Question
}

func (a *answers) Ask(q Question) (Answer, error) {
	a.got = append(a.got, q)
	if a.err != nil {
		return Decline, a.err
	}
	ans := a.list[0]
	a.list = a.list[1:]
	return ans, nil
}

func write(path string) func() Effect {
	return func() Effect { return Effect{Op: OpWrite, Path: path, SHA256: strings.Repeat("0", 64)} }
}

func TestRulesDecide(t *testing.T) {
	rules := pathRules{
		"denied": {Action: ActionDeny, Rule: "no"},
		"failed": {Action: ActionDeny, Rule: "broken", Reason: "its when failed: no such key: x"},
		"asked":  {Action: ActionAsk, Rule: "ask me"},
		"ok":     {Action: ActionAllow, Rule: "fine"},
	}
	type step struct {
		path     string
		want     Decision
		message  string
		decision string
	}
	for _, tc := range []struct {
		name    string
		mode    Mode
		answers []Answer
		askErr  error
		noAsker bool
		steps   []step
		stop    string
	}{
		{name: "real: allow, deny, default", steps: []step{
			{"ok", Proceed, "", DecisionAllowed}, {"denied", Deny, `denied by rule "no"`, DecisionDenied},
			{"failed", Deny, `denied by rule "broken": its when failed: no such key: x`, DecisionDenied}, {"other", Proceed, "", DecisionAllowed}}},
		{name: "dry run: deny and ask held", mode: DryRun, steps: []step{
			{"denied", Deny, `denied by rule "no"`, DecisionDenied}, {"asked", Hold, "", DecisionAsk}, {"ok", Hold, "", DecisionAllowed}}},
		{name: "approve once, then asked again", answers: []Answer{Approve, Decline}, steps: []step{
			{"asked", Proceed, "", DecisionApproved}, {"asked", Deny, `denied: declined by a person (rule "ask me" asked)`, DecisionDeclined}}},
		{name: "approve all", answers: []Answer{ApproveAll}, steps: []step{
			{"asked", Proceed, "", DecisionApproved}, {"asked", Proceed, "", DecisionApproved}}},
		{name: "cancel stops", answers: []Answer{Cancel}, steps: []step{{"asked", Stop, "", DecisionAsk}, {"ok", Stop, "", ""}},
			stop: `a person stopped the script`},
		{name: "ask fails", askErr: errors.New("the client left"), steps: []step{{"asked", Stop, "", DecisionAsk}},
			stop: `nobody answered: the client left`},
		{name: "no asker", noAsker: true, steps: []step{{"asked", Stop, "", DecisionAsk}}, stop: `nobody can be asked here`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asker := &answers{list: tc.answers, err: tc.askErr}
			var a Asker = asker
			if tc.noAsker {
				a = nil
			}
			r := New(tc.mode).WithRules(rules, a)
			var logged []string
			for _, s := range tc.steps {
				out := r.Pass(Pending{Effect: write(s.path)})
				if out.Decision != s.want || out.Message != s.message {
					t.Fatalf("%s: Pass = %+v, want %v %q", s.path, out, s.want, s.message)
				}
				if s.message != "" && !r.Denied("script:1: io.open: 'x': "+s.message) {
					t.Errorf("Denied does not know %q", s.message)
				}
				if s.decision != "" {
					logged = append(logged, s.path+" "+s.decision)
				}
			}
			got, _ := r.Effects()
			var gotLog []string
			for _, e := range got {
				gotLog = append(gotLog, e.Path+" "+e.Decision)
			}
			if strings.Join(gotLog, ",") != strings.Join(logged, ",") {
				t.Errorf("log = %v, want %v", gotLog, logged)
			}
			err := r.Err()
			switch {
			case tc.stop == "" && err != nil:
				t.Errorf("Err = %v", err)
			case tc.stop != "" && (err == nil || err.Kind != KindApproval || !strings.Contains(err.Message, tc.stop) || !strings.Contains(err.Message, `rule "ask me"`)):
				t.Errorf("Err = %+v, want kind approval with %q", err, tc.stop)
			}
			for _, q := range asker.got {
				if q.Rule != "ask me" || q.Effect.Path != "asked" || q.Effect.Decision != "" {
					t.Errorf("question %+v", q)
				}
			}
		})
	}
}

// A real run without rules calls nothing: it pays for nothing.
func TestRealRunWithoutRulesPaysNothing(t *testing.T) {
	var r *Run
	if r.WithRules(nil, nil) != nil {
		t.Fatal("no rules made a Run")
	}
	out := New(Real).Pass(Pending{Effect: func() Effect { t.Fatal("effect described"); return Effect{} }})
	if out.Decision != Proceed {
		t.Fatal(out)
	}
}

// Safe effects are decided only by rules that name effect.safe.
func TestSafeEffects(t *testing.T) {
	deny := denyAll{}
	r := New(Real).WithRules(deny, nil)
	if out := r.Pass(Pending{Safe: true, Effect: func() Effect { t.Fatal("described"); return Effect{} }}); out.Decision != Proceed {
		t.Fatal(out)
	}
	r = New(Real).WithRules(denyAll{safe: true}, nil)
	if out := r.Pass(Pending{Safe: true, Effect: write("x")}); out.Decision != Deny {
		t.Fatal(out)
	}
}

type denyAll struct{ safe bool }

func (d denyAll) Decide(f *Facts) Verdict {
	if d.safe && !f.Safe {
		return Verdict{}
	}
	return Verdict{Action: ActionDeny, Rule: "all"}
}
func (d denyAll) DecidesSafe() bool  { return d.safe }
func (d denyAll) NeedsRequest() bool { return false }

// A plan made from a dry run leaves out what the rules denied.
func TestPlanSkipsDenied(t *testing.T) {
	p, err := ParsePlan([]byte(`[{"op":"remove","path":"a","decision":"denied","rule":"no"},{"op":"remove","path":"b","decision":"allowed"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if p.Len() != 1 || p.Entries()[0].Path != "b" {
		t.Fatalf("plan %+v", p.Entries())
	}
}

// A recording run writes what its rules decided (OpDecision), and a
// replay of its trace passes over those entries.
func TestDecisionsInTheTrace(t *testing.T) {
	var buf bytes.Buffer
	w, err := trace.NewWriter(&buf, trace.Header{Toolscript: "test"})
	if err != nil {
		t.Fatal(err)
	}
	r := NewRecording(w).WithRules(pathRules{"x": {Action: ActionDeny, Rule: "no x"}}, nil)
	if out := r.Pass(Pending{Effect: write("x")}); out.Decision != Deny {
		t.Fatal(out)
	}
	call := Effect{Op: OpCall, Function: "sdk.a.f", Method: "POST", URL: "http://h/"}
	_, slot, _ := r.Call(call)
	r.Answer(slot, &trace.Response{Status: 201})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `{"op":"decision","decision":"denied","rule":"no x","effect":"write x`) {
		t.Fatalf("trace:\n%s", buf.String())
	}
	rd, _, err := trace.NewReader(bytes.NewReader(buf.Bytes()), 0)
	if err != nil {
		t.Fatal(err)
	}
	resp, _, d := NewReplay(rd).Call(call)
	if d != nil || resp == nil || resp.Status != 201 {
		t.Fatalf("replayed %+v, divergence %v", resp, d)
	}
}
