package effects

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/toolscript/toolscript/host/contract/effects/trace"
)

// Rules. A configuration's [[policy]] rules (host/contract/policy, in
// CEL) decide each effect before the Run's mode does: allow, deny, or ask
// a person (ask.go). The Run knows them only as Rules, so this package
// needs no CEL; what the rules see of an effect is its Facts, built only
// when the Run has rules (a run without them pays for nothing).

// Action is what a rule (or the default) decides of an effect.
type Action int

// The actions.
const (
	// ActionAllow: the effect goes on to the Run's mode (it happens in a real
	// run, is held in a dry run, checked in a plan run).
	ActionAllow Action = iota
	// ActionDeny: the effect does not happen; the script gets an error of
	// kind denied naming the rule, which it may catch.
	ActionDeny
	// ActionAsk: a person is asked (the Run's Asker) before the effect
	// happens.
	ActionAsk
)

func (a Action) String() string {
	switch a {
	case ActionDeny:
		return "deny"
	case ActionAsk:
		return "ask"
	}
	return "allow"
}

// ParseAction reads an action's name: allow, deny or ask.
func ParseAction(s string) (Action, error) {
	switch s {
	case "allow":
		return ActionAllow, nil
	case "deny":
		return ActionDeny, nil
	case "ask":
		return ActionAsk, nil
	}
	return ActionAllow, fmt.Errorf("%q is not an action: want allow, deny or ask", s)
}

// Facts are what a rule's `when` sees of an effect (`effect`). Kind is
// call, write, remove, rename or mkdir; calls have API to Headers, io
// Path (and To), Bytes and SHA256. Params are an OpenAPI call's
// parameters by name as the sdk checked them, Body its JSON body decoded,
// Args an MCP tool's arguments. URL, Path and Headers are the effect's
// (redacted); frozen parameters are there as "{name}", and no credential
// is. Facts are never shown: only the rules see them.
type Facts struct {
	Kind      string            `cel:"kind"`
	Safe      bool              `cel:"safe"`
	API       string            `cel:"api"`
	Function  string            `cel:"function"`
	Operation string            `cel:"operation"`
	Method    string            `cel:"method"`
	URL       string            `cel:"url"`
	Path      string            `cel:"path"`
	To        string            `cel:"to"`
	Params    map[string]any    `cel:"params"`
	Body      any               `cel:"body"`
	Args      map[string]any    `cel:"args"`
	Headers   map[string]string `cel:"headers"`
	Bytes     int64             `cel:"bytes"`
	SHA256    string            `cel:"sha256"`
}

// FactsOf are the facts an effect itself gives: an io effect's op, path,
// size and digest; a call's function, method, URL and headers (the sdk
// adds what only it knows: Pending.Facts).
func FactsOf(e *Effect) Facts {
	f := Facts{Kind: string(e.Op), Path: e.Path, To: e.To, SHA256: e.SHA256,
		Function: e.Function, Method: e.Method, URL: e.URL, Headers: e.Headers}
	if e.Bytes != nil {
		f.Bytes = *e.Bytes
	}
	return f
}

// Verdict is what the rules decided of one effect: the action, the rule
// that decided it ("" for the default) and, for a rule whose `when`
// failed (and so denied), why.
type Verdict struct {
	Action Action
	Rule   string
	Reason string
}

// Rules decide effects: the compiled [[policy]] rules of a configuration
// with the user and client of one execution (host/contract/policy).
type Rules interface {
	// Decide decides the effect f describes. It is called from the
	// goroutine of the host call that made the effect, several at once
	// for parallel calls.
	Decide(f *Facts) Verdict
	// DecidesSafe reports whether some rule names effect.safe: then safe
	// effects are decided too, else only unsafe ones.
	DecidesSafe() bool
	// NeedsRequest reports whether some rule names what only a call's
	// request tells (url, path, params, body, args, headers): without
	// them, a call's Facts are its function's.
	NeedsRequest() bool
}

// The decisions an effect's log entry records (Effect.Decision).
const (
	DecisionAllowed  = "allowed"
	DecisionDenied   = "denied"
	DecisionApproved = "approved"
	DecisionDeclined = "declined"
	// DecisionAsk is a dry run's effect a rule would ask about: held,
	// nobody asked.
	DecisionAsk = "ask"
)

// The error kinds of effects the rules kept from happening.
const (
	// KindDenied: an effect a rule denied, or a person declined; the
	// script may catch it.
	KindDenied = "denied"
	// KindApproval: an effect that needed a person who could not be
	// asked, or who stopped the script.
	KindApproval = "approval"
)

// maxDenials bounds the denial messages a Run remembers (Denied).
const maxDenials = 64

// policyState is a Run's rules and what they decided so far.
type policyState struct {
	rules Rules
	// approvedAll are the rules a person answered ApproveAll for (under
	// Run.mu).
	approvedAll map[string]bool
	// denials are the messages the script got for denied effects (under
	// Run.mu), to tell the error kind of one that escapes it.
	denials []string
	stop    atomic.Pointer[StopError]
}

// WithRules makes r's effects pass rules before its mode decides them,
// asking asker when a rule says ask (nil: nobody can be asked, and such
// an effect stops the run with kind approval). Call it before the first
// effect. A nil r stays nil (a real run without rules).
func (r *Run) WithRules(rules Rules, asker Asker) *Run {
	if rules == nil {
		return r
	}
	if r == nil {
		r = New(Real)
	}
	r.policy = &policyState{rules: rules, approvedAll: map[string]bool{}}
	if asker != nil {
		r.WithAsker(asker)
	}
	return r
}

// HasRules reports whether r's effects pass rules.
func (r *Run) HasRules() bool { return r != nil && r.policy != nil }

// Logs reports whether r logs its unsafe effects: a dry run, a plan run,
// and any run with rules (the audit of what they decided).
func (r *Run) Logs() bool {
	m := r.Mode()
	return m == DryRun || m == Plan || r.HasRules()
}

// DecidesSafe reports whether r's safe effects are decided too (a rule
// names effect.safe).
func (r *Run) DecidesSafe() bool { return r.HasRules() && r.policy.rules.DecidesSafe() }

// NeedsRequest reports whether r's rules look into a call's request
// (Rules.NeedsRequest).
func (r *Run) NeedsRequest() bool { return r.HasRules() && r.policy.rules.NeedsRequest() }

// Denied reports whether message holds the message of an effect r denied
// (the script raised it, or an error that quotes it): the execution's
// error kind is then denied.
func (r *Run) Denied(message string) bool {
	if !r.HasRules() {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range r.policy.denials {
		if strings.Contains(message, d) {
			return true
		}
	}
	return false
}

// DenialMessage is the message an effect's denial gives the script.
func DenialMessage(v Verdict, declined bool) string {
	switch {
	case declined:
		return fmt.Sprintf("denied: declined by a person (rule %q asked)", v.Rule)
	case v.Rule == "":
		return "denied by [effects] default"
	case v.Reason != "":
		return fmt.Sprintf("denied by rule %q: %s", v.Rule, v.Reason)
	}
	return fmt.Sprintf("denied by rule %q", v.Rule)
}

// Pending is an effect on its way to Pass: how to describe it (Effect,
// as the result reports it) and, for a call, what the rules see of it
// (Facts; nil for io, whose facts are its Effect's). Facts come first,
// and Effect is called only when the effect is logged or asked about (a
// safe call the rules allow is neither). Safe marks an effect that
// observes; it is decided only when a rule names effect.safe.
type Pending struct {
	Effect func() Effect
	Facts  func() Facts
	Safe   bool
}

// Outcome is what Pass decided of an effect: the Decision and, for Deny,
// the message the script gets (DenialMessage).
type Outcome struct {
	Decision Decision
	Message  string
}

// ruled decides p by the rules: it returns the effect, described, with
// its decision and rule set, and whether the mode decides it next (false:
// out is the outcome).
func (r *Run) ruled(p Pending) (e Effect, out Outcome, next bool) {
	st := r.policy
	if st.stop.Load() != nil {
		return e, Outcome{Decision: Stop}, false
	}
	var facts Facts
	if p.Facts != nil {
		facts = p.Facts()
	} else {
		e = p.Effect()
		facts = FactsOf(&e)
	}
	facts.Safe = p.Safe
	v := st.rules.Decide(&facts)
	if p.Safe && v.Action == ActionAllow {
		return e, Outcome{}, true // proceeds, unlogged: no need to describe it
	}
	if p.Facts != nil {
		e = p.Effect()
	}
	e.Rule = v.Rule
	defer func() { r.recordDecision(&e) }()
	switch v.Action {
	case ActionAllow:
		e.Decision = DecisionAllowed
		return e, Outcome{}, true
	case ActionDeny:
		out := r.deny(&e, v, false)
		return e, out, false
	}
	if r.Mode() == DryRun {
		e.Decision = DecisionAsk // shown as the question it would be; nobody is asked
		return e, Outcome{}, true
	}
	r.mu.Lock()
	all := st.approvedAll[v.Rule]
	r.mu.Unlock()
	if all {
		e.Decision = DecisionApproved
		return e, Outcome{}, true
	}
	return r.ask(e, v)
}

// ask puts e to the Run's Asker.
func (r *Run) ask(e Effect, v Verdict) (Effect, Outcome, bool) {
	st := r.policy
	where := fmt.Sprintf("%s, which rule %q asks a person about", Describe(e), v.Rule)
	q := e
	q.Decision, q.Rule = "", ""
	answer, err := r.Ask(Question{Effect: q, Rule: v.Rule})
	if errors.Is(err, ErrNoAsker) {
		out := r.stopApproval(&e, where+": nobody can be asked here (approve it with a dry run and a plan, or run it where a person answers)")
		return e, out, false
	}
	if err != nil {
		out := r.stopApproval(&e, fmt.Sprintf("%s: nobody answered: %v", where, err))
		return e, out, false
	}
	switch answer {
	case ApproveAll:
		r.mu.Lock()
		st.approvedAll[v.Rule] = true
		r.mu.Unlock()
		fallthrough
	case Approve:
		e.Decision = DecisionApproved
		return e, Outcome{}, true
	case Cancel:
		out := r.stopApproval(&e, where+": a person stopped the script")
		return e, out, false
	case Unasked:
		v.Reason = "it asks a person, and nobody can be asked here"
		out := r.deny(&e, v, false)
		return e, out, false
	}
	out := r.deny(&e, v, true)
	return e, out, false
}

// deny logs e as denied (or declined) and remembers the message the
// script gets.
func (r *Run) deny(e *Effect, v Verdict, declined bool) Outcome {
	e.Decision = DecisionDenied
	if declined {
		e.Decision = DecisionDeclined
	}
	r.add(*e)
	msg := DenialMessage(v, declined)
	r.mu.Lock()
	if len(r.policy.denials) < maxDenials && !slices.Contains(r.policy.denials, msg) {
		r.policy.denials = append(r.policy.denials, msg)
	}
	r.mu.Unlock()
	return Outcome{Decision: Deny, Message: msg}
}

// stopApproval stops the run with kind approval: e, not made, is logged
// with the decision that needed a person.
func (r *Run) stopApproval(e *Effect, message string) Outcome {
	e.Decision = DecisionAsk
	r.add(*e)
	r.policy.stop.CompareAndSwap(nil, &StopError{Kind: KindApproval, Message: message + "; it was not carried out"})
	return Outcome{Decision: Stop}
}

// recordDecision writes what the rules decided of e to the trace a
// recording run writes (OpDecision).
func (r *Run) recordDecision(e *Effect) {
	if r.tr == nil || r.tr.w == nil {
		return
	}
	r.tr.w.Add(&trace.Entry{Op: trace.OpDecision, Decision: e.Decision, Rule: e.Rule, Effect: Describe(*e)})
}
