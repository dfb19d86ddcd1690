package effects

import (
	"errors"
	"sync"
)

// Asking a person. A rule whose action is ask (host/contract/policy)
// pauses an effect before it happens and puts a Question to a person
// through the surface the execution came from: a terminal prompt under
// `toolscript run`, an elicitation in an MCP client (in the call, or as
// an input_required result and a retry), or nobody (kind approval). The
// surface gives the Run its Asker; Decide calls it and waits.

// Question is what a person is asked about one effect: the effect as the
// dry run shows it (its texts already passed the redactor) and the rule
// that asked.
type Question struct {
	Effect Effect `json:"effect"`
	Rule   string `json:"rule"`
}

// Answer is a person's answer to a Question.
type Answer int

// The answers.
const (
	// Decline: the effect does not happen; the script gets an error of
	// kind denied, which it may catch.
	Decline Answer = iota
	// Approve: the effect happens.
	Approve
	// ApproveAll: the effect happens, and so does every later effect of
	// the execution the same rule asks about ("yes to all like this").
	ApproveAll
	// Cancel: the effect does not happen and the script stops.
	Cancel
	// Unasked: nobody could be asked, and the surface's rule for that is
	// deny (Refuse): the effect does not happen; the script gets an error
	// of kind denied saying nobody was asked.
	Unasked
)

func (a Answer) String() string {
	switch a {
	case Approve:
		return "approve"
	case ApproveAll:
		return "approve all"
	case Cancel:
		return "cancel"
	case Unasked:
		return "unasked"
	}
	return "decline"
}

// Asker puts a Question to a person and waits for the Answer. An error
// says nobody could be asked (a client that can ask no one, the wait's
// own bound passed): the execution stops with kind approval, the
// effect not made. Ask is called from the goroutine of the host call
// that made the effect, and may block for as long as the person takes.
type Asker interface {
	Ask(q Question) (Answer, error)
}

// Refuse is the Asker of a surface that has no person to ask but whose
// rules say what no answer means: `toolscript run` without a terminal,
// where ask is deny. It answers every Question Unasked.
var Refuse Asker = refuse{}

type refuse struct{}

func (refuse) Ask(Question) (Answer, error) { return Unasked, nil }

// ErrNoAsker is Run.Ask's error on a Run given no Asker.
var ErrNoAsker = errors.New("no one can be asked: this surface has no way to ask a person")

// asking is how a Run asks: its Asker, the hook that stops the script's
// clock while it waits, and the lock that puts one Question at a time.
type asking struct {
	// turn is held for a whole Ask: one Question at a time. (A channel:
	// a Question waits for its turn as long as a person takes.)
	turn   chan struct{}
	asker  Asker
	onWait func() (resume func())
	onAsk  func(q Question) (answered func(Answer, error))
}

// WithAsker gives r the Asker its rules' asks go to, and returns r. It is
// set before the execution starts. A nil r stays nil (a real run asks no
// one).
func (r *Run) WithAsker(a Asker) *Run {
	if r != nil {
		r.asking.asker = a
		r.asking.turn = make(chan struct{}, 1)
	}
	return r
}

// OnWait tells r how to stop the execution's clock while a person is
// asked: wait is called as a Question is put, and the function it returns
// when the answer (or the Asker's error) came back. The runtime sets it
// before the execution starts (host/runtime/luau: the script's deadline
// moves on by the time waited), so that the time a person takes is not
// the script's; the wait's own bound is the Asker's (approval_timeout).
func (r *Run) OnWait(wait func() (resume func())) {
	if r != nil {
		r.asking.onWait = wait
	}
}

// OnAsk tells r who sees each Question as it is put: ask is called with
// it, and the function it returns with the answer (or the Asker's error)
// when it came back. The runtime sets it before the execution starts
// (host/runtime/luau: the span of the wait).
func (r *Run) OnAsk(ask func(q Question) (answered func(Answer, error))) {
	if r != nil {
		r.asking.onAsk = ask
	}
}

// Ask puts q to r's Asker, the one place an execution asks a person (the
// rules' ask in Pass calls it). Questions are put one at a time, in the
// order their effects asked (parallel calls that ask at once wait for the
// one being asked); the script's clock stops meanwhile (OnWait). While a
// question waits, a recording run's Prefix is the trace up to its effect
// (a pause's). A Run without an Asker gives ErrNoAsker.
func (r *Run) Ask(q Question) (Answer, error) {
	if r == nil || r.asking.asker == nil {
		return Decline, ErrNoAsker
	}
	a := &r.asking
	a.turn <- struct{}{}
	defer func() { <-a.turn }()
	if t := r.tr; t != nil && t.w != nil {
		n := t.w.Reserved()
		if q.Effect.Op == OpCall {
			n-- // the call's own place is reserved already (Call)
		}
		t.mu.Lock()
		t.asking = n
		t.mu.Unlock()
		defer func() {
			t.mu.Lock()
			t.asking = -1
			t.mu.Unlock()
		}()
	}
	if a.onWait != nil {
		resume := a.onWait()
		defer resume()
	}
	var answered func(Answer, error)
	if a.onAsk != nil {
		answered = a.onAsk(q)
	}
	answer, err := a.asker.Ask(q)
	if answered != nil {
		answered(answer, err)
	}
	if err != nil {
		return Decline, err // Pass names the effect and the rule
	}
	return answer, nil
}

// Asker returns an Asker that answers from the plan p: Approve for an
// effect one of p's entries holds (the same effect as a plan run compares
// it: compare.go), each entry approving one effect at most; every other
// Question goes to next (Refuse when next is nil). `toolscript run
// --approve PLAN` asks it.
func (p *Approved) Asker(next Asker) Asker {
	if next == nil {
		next = Refuse
	}
	used := make([]bool, len(p.entries))
	return &planAsker{plan: p, used: used, next: next}
}

type planAsker struct {
	mu   sync.Mutex
	plan *Approved
	used []bool // entries that approved an effect already (under mu)
	next Asker
}

func (a *planAsker) Ask(q Question) (Answer, error) {
	a.mu.Lock()
	for i, e := range a.plan.entries {
		if !a.used[i] && differs(e, q.Effect) == "" {
			a.used[i] = true
			a.mu.Unlock()
			return Approve, nil
		}
	}
	a.mu.Unlock()
	return a.next.Ask(q)
}
