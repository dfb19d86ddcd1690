package effects

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
)

// A plan is a dry run's effects, approved: a real run held to them. Each
// unsafe effect of a plan run is checked against the plan's next entry
// before it happens (same order, op and path; the same content for a
// write; for a call, the same function, method, URL, headers and body
// bytes: compare.go). The first one the plan does not hold is not carried
// out: the run stops (Run.Err), and every later unsafe effect is refused
// too.

// MaxPlanBytes bounds a plan's JSON text.
const MaxPlanBytes = 16 << 20

// Approved is a parsed plan: its entries, in order, checked.
type Approved struct {
	entries []Effect
}

// Len is how many entries p has.
func (p *Approved) Len() int { return len(p.entries) }

// Entries returns p's entries in order.
func (p *Approved) Entries() []Effect { return append([]Effect(nil), p.entries...) }

// ParsePlan reads a plan: the JSON of a dry run's result (an object with
// "effects") or of its effects alone (an array). Unknown ops, entries
// missing what their op needs (an OpenAPI call its "headers"), unknown
// fields, a result that left effects out, and plans past MaxPlanBytes or
// MaxEffects entries are errors.
func ParsePlan(data []byte) (*Approved, error) {
	if len(data) > MaxPlanBytes {
		return nil, fmt.Errorf("the plan is %d bytes, more than %d", len(data), MaxPlanBytes)
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, errors.New("the plan is empty: give a dry run's JSON result or its \"effects\" array")
	}
	list := json.RawMessage(data)
	if data[0] == '{' {
		var whole struct {
			Effects json.RawMessage `json:"effects"`
			Omitted int             `json:"effects_omitted"`
		}
		if err := json.Unmarshal(data, &whole); err != nil {
			return nil, fmt.Errorf("the plan is not valid JSON: %w", err)
		}
		if whole.Omitted > 0 {
			return nil, fmt.Errorf("the dry run's result left %d effects out (past its bounds): a plan must hold every effect", whole.Omitted)
		}
		if len(whole.Effects) == 0 || string(whole.Effects) == "null" {
			return nil, errors.New(`the plan is an object without "effects": give a dry run's JSON result (toolscript run --dry-run --json) or its "effects" array`)
		}
		list = whole.Effects
	}
	if list[0] != '[' {
		return nil, errors.New(`the plan must be a dry run's JSON result or its "effects" array`)
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(list, &raw); err != nil {
		return nil, fmt.Errorf("the plan's effects are not a valid JSON array: %w", err)
	}
	return PlanOf(raw)
}

// PlanOf checks a plan's entries, each the JSON of one effect.
func PlanOf(raw []json.RawMessage) (*Approved, error) {
	if len(raw) > MaxEffects {
		return nil, fmt.Errorf("the plan has %d entries, more than %d", len(raw), MaxEffects)
	}
	p := &Approved{entries: make([]Effect, 0, len(raw))}
	for i, r := range raw {
		e, err := planEntry(r)
		if err != nil {
			return nil, fmt.Errorf("the plan's entry %d: %w", i+1, err)
		}
		if e.Decision == DecisionDenied || e.Decision == DecisionDeclined {
			continue // it did not happen, and will not be carried out
		}
		p.entries = append(p.entries, e)
	}
	return p, nil
}

// planEntry checks one entry.
func planEntry(raw json.RawMessage) (Effect, error) {
	var e Effect
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return e, fmt.Errorf("not an effect: %w", err)
	}
	if dec.More() {
		return e, errors.New("not an effect: more than one JSON value")
	}
	need := func(what, v string) error {
		if v == "" {
			return fmt.Errorf("a %s effect needs %q", e.Op, what)
		}
		return nil
	}
	switch e.Op {
	case OpWrite:
		if err := need("path", e.Path); err != nil {
			return e, err
		}
		if !isSHA256(e.SHA256) {
			return e, fmt.Errorf(`a write effect needs "sha256", 64 hex digits (got %q)`, cut(e.SHA256, 80))
		}
	case OpRemove, OpMkdir:
		if err := need("path", e.Path); err != nil {
			return e, err
		}
	case OpRename:
		if err := errors.Join(need("path", e.Path), need("to", e.To)); err != nil {
			return e, err
		}
	case OpCall:
		if err := need("function", e.Function); err != nil {
			return e, err
		}
		if e.BodySHA256 != "" && !isSHA256(e.BodySHA256) {
			return e, fmt.Errorf(`"body_sha256" must be 64 hex digits (got %q)`, cut(e.BodySHA256, 80))
		}
		if e.Method != "" && e.Headers == nil {
			return e, errors.New(`a call of an HTTP operation needs "headers", the headers the script's parameters set ({} for none): this entry has none (an earlier toolscript's dry run made it); make the plan again with a dry run`)
		}
		if _, err := bodyOf(e.Body); err != nil {
			return e, fmt.Errorf(`"body": %w`, err)
		}
	case "":
		return e, errors.New(`an effect needs "op"`)
	default:
		return e, fmt.Errorf(`unknown op %q (an effect is a write, remove, rename, mkdir or call)`, cut(string(e.Op), 80))
	}
	return e, nil
}

// ReadPlanFile reads and parses the plan in the file at path, reading at
// most MaxPlanBytes of it.
func ReadPlanFile(path string) (*Approved, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxPlanBytes+1))
	if err != nil {
		return nil, err
	}
	return ParsePlan(data)
}

func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// StopError is why a run stopped an effect and every later one: an
// effect its plan does not hold. Kind is the execution's error kind
// ("plan").
type StopError struct {
	Kind    string
	Message string
}

func (e *StopError) Error() string { return e.Message }

// KindPlan is the error kind of an effect a plan does not hold.
const KindPlan = "plan"

// planState is a plan run's progress through its plan.
type planState struct {
	plan *Approved
	next int // the entry the next unsafe effect must match (under Run.mu)
	stop atomic.Pointer[StopError]
}

// NewPlan returns the effects of a real run held to plan.
func NewPlan(plan *Approved) *Run {
	if plan == nil {
		plan = &Approved{}
	}
	return &Run{mode: Plan, plan: &planState{plan: plan}}
}

// Err is the error that stopped the run's effects, nil while none did
// (and always in a real run or a dry run). It costs an atomic load.
func (r *Run) Err() *StopError {
	if r == nil {
		return nil
	}
	if r.policy != nil {
		if stop := r.policy.stop.Load(); stop != nil {
			return stop // a person was needed (policy.go)
		}
	}
	switch {
	case r.plan != nil:
		return r.plan.stop.Load()
	case r.tr != nil:
		return r.tr.stopped.Load() // a replay's divergence (replay.go)
	}
	return nil
}

// Unused returns the plan's entries the run did not carry out (nil when
// it is not a plan run, or carried them all out).
func (r *Run) Unused() []Effect {
	if r == nil || r.plan == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.plan.next >= len(r.plan.plan.entries) {
		return nil
	}
	return append([]Effect(nil), r.plan.plan.entries[r.plan.next:]...)
}

// check decides e in a plan run: Proceed, and logged, when it is the
// plan's next entry; else Stop, and the run stops.
func (r *Run) check(e Effect) Decision {
	st := r.plan
	if st.stop.Load() != nil {
		return Stop
	}
	r.mu.Lock()
	if st.stop.Load() != nil {
		r.mu.Unlock()
		return Stop
	}
	entries := st.plan.entries
	var why string
	switch {
	case st.next >= len(entries):
		why = fmt.Sprintf("the plan has no more entries (all %d were applied)", len(entries))
	default:
		if diff := differs(entries[st.next], e); diff != "" {
			why = fmt.Sprintf("the plan's next entry (%d of %d) is %s: %s", st.next+1, len(entries), Describe(entries[st.next]), diff)
		}
	}
	if why != "" {
		st.stop.Store(&StopError{Kind: KindPlan, Message: fmt.Sprintf(
			"the script attempted %s, which the plan does not hold: %s; it was not carried out", Describe(e), why)})
		r.mu.Unlock()
		return Stop
	}
	st.next++
	r.mu.Unlock()
	e.Diff = ""
	r.add(e)
	return Proceed
}

// differs says how got differs from want, a plan's entry: "" when it is
// the same effect.
func differs(want, got Effect) string {
	switch {
	case want.Op != got.Op:
		return "another op"
	case want.Path != got.Path || want.To != got.To:
		return "another path"
	case want.Op == OpWrite && want.SHA256 != got.SHA256:
		return "other content"
	case want.Op != OpCall:
		return ""
	}
	return differsCall(want, got)
}

// Describe is an effect on one line, for messages: its op, path or
// function, and what tells it apart (a write's size and sha256, a call's
// method, URL, headers and body, cut).
func Describe(e Effect) string {
	switch e.Op {
	case OpWrite:
		size := ""
		if e.Bytes != nil {
			size = fmt.Sprintf("%d bytes, ", *e.Bytes)
		}
		return fmt.Sprintf("write %s (%ssha256 %s)", e.Path, size, e.SHA256)
	case OpRename:
		return fmt.Sprintf("rename %s to %s", e.Path, e.To)
	case OpCall:
		line := "call " + e.Function
		if e.Method != "" {
			line += " (" + e.Method + " " + cut(e.URL, 200) + describeHeaders(e.Headers) + ")"
		}
		switch {
		case len(e.Body) > 0:
			line += " with body " + cut(string(e.Body), 200)
		case e.BodySHA256 != "":
			line += fmt.Sprintf(" with a body of %d bytes, sha256 %s", e.BodyBytes, e.BodySHA256)
		}
		return line
	}
	return fmt.Sprintf("%s %s", e.Op, e.Path)
}

// cut is s cut to at most n bytes (of valid UTF-8), "..." marking a cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "..."
}
