package effects

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"

	"github.com/toolscript/toolscript/host/contract/effects/trace"
)

// Pausing and resuming. An execution that asks a person may pause: its
// prefix, the trace of everything it did up to the effect being asked
// about (Prefix), travels in a sealed state (host/serve/requeststate) and
// the person's answer comes back with it, possibly to another process.
// There the execution resumes (NewResume): the script runs again from the
// start, and its prefix is replayed (every call's response, io outcome,
// clock reading and the seed given back from it; nothing sent or written
// again), recorded again to the resumed run's own trace; where the prefix
// ends the run goes live, a real run recording the rest. Its first
// decided effect is the one the person was asked about: it must be that
// effect (compared as a plan compares, compare.go), and the answer
// decides it. A script that does otherwise (another effect, a divergence
// from its prefix) stops with kind replay before anything happens live.
//
// A prefix is consistent: every entry in it is whole. Calls still in
// flight when Decide asks (a parallel batch's earlier calls) are waited
// for, as long as Prefix's context allows; a pause with a file handle
// still open cannot be resumed by replay (the live run could not reopen
// the handle where the prefix left it), and Prefix refuses it.

// MaxPrefixFiles bounds the files a prefix may name (PrefixFiles).
const MaxPrefixFiles = 10000

// resumed is a resumed run's pause: the question asked and its answer,
// and whether the first decided effect has come.
type resumed struct {
	question Question
	answer   Answer
	mu       sync.Mutex
	decided  bool
}

// prefixEntries is a prefix read ahead, as a source.
type prefixEntries struct {
	entries []*trace.Entry
	next    int
}

func (p *prefixEntries) Next() (*trace.Entry, error) {
	if p.next >= len(p.entries) {
		return nil, io.EOF
	}
	p.next++
	return p.entries[p.next-1], nil
}

func (p *prefixEntries) Line() int { return p.next + 1 }

// NewResume returns the effects of an execution resumed after a pause: a
// real run that replays prefix (its header read), answers q's effect with
// a, and records everything to w. The prefix is read and checked first:
// a trace that cannot be read, one that ends the execution, or one that
// leaves a file open is refused (a *Divergence), and nothing runs.
func NewResume(prefix *trace.Reader, q Question, a Answer, w *trace.Writer) (*Run, error) {
	src := &prefixEntries{}
	handles := map[int32]string{}
	for {
		e, err := prefix.Next()
		if err == io.EOF {
			break
		}
		var te *trace.Error
		switch {
		case errors.As(err, &te):
			return nil, &Divergence{Line: te.Line, Got: te.Reason}
		case err != nil:
			return nil, &Divergence{Line: prefix.Line(), Got: err.Error()}
		case e.Op == trace.OpEnd:
			return nil, &Divergence{Line: prefix.Line(), Got: "a paused execution's prefix does not end the execution"}
		case e.Op == trace.OpCall && e.Response.Unanswered:
			return nil, &Divergence{Line: prefix.Line(), Got: "a paused execution's prefix holds a call without its response"}
		case e.Op == trace.OpIO:
			trackHandles(handles, e.IO)
		}
		src.entries = append(src.entries, e)
	}
	if err := openHandles(handles); err != nil {
		return nil, &Divergence{Line: prefix.Line(), Got: err.Error()}
	}
	r := New(Real)
	// Its effects pass Pass even where no rules are configured: the
	// answer decides the effect asked about (WithRules replaces these).
	r.policy = &policyState{rules: askRule(func(*Facts) string { return "" }), approvedAll: map[string]bool{}}
	r.tr = &traced{r: src, w: w, resume: &resumed{question: q, answer: a}, unanswered: map[trace.Slot]*trace.Entry{},
		files: map[string]bool{}, handles: map[int32]string{}, asking: -1}
	return r, nil
}

func trackHandles(handles map[int32]string, o *trace.IO) {
	switch {
	case o.Op == trace.IOOpen && o.Result > 0:
		handles[int32(o.Result)] = o.Path
	case o.Op == trace.IOClose:
		delete(handles, o.Handle)
	}
}

// openHandles says which files a prefix left open, nil when none.
func openHandles(handles map[int32]string) error {
	if len(handles) == 0 {
		return nil
	}
	var paths []string
	for _, p := range handles {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return fmt.Errorf("the execution paused with %d file(s) open (%s): a paused execution resumes by replay only with its files closed",
		len(paths), cut(fmt.Sprint(paths), 300))
}

// RecordTo makes a resumed run record to w (a record directory's file,
// say) instead of the writer NewResume was given, which it closes. Call
// it before the execution starts: nothing is written until then.
func (r *Run) RecordTo(w *trace.Writer) {
	if !r.Resuming() {
		return
	}
	old := r.tr.w
	r.tr.w = w
	old.Close()
}

// Resuming reports whether the run resumes a paused execution.
func (r *Run) Resuming() bool { return r.Traced() && r.tr.resume != nil }

// PrefixOpens are the io opens a resumed run's prefix made, with their
// outcomes: the live run's io goes on from them
// (sandboxio.FS.ContinueFrom).
func (r *Run) PrefixOpens() []trace.IO {
	if !r.Resuming() {
		return nil
	}
	var opens []trace.IO
	for _, e := range r.tr.r.(*prefixEntries).entries {
		if e.Op == trace.OpIO && e.IO.Op == trace.IOOpen {
			opens = append(opens, *e.IO)
		}
	}
	return opens
}

// Prefix is a recording run's trace up to the effect Decide is asking
// about, for a pause: its header and every entry before that effect, each
// whole. It waits, as long as ctx allows, for the calls before it still
// in flight. It is an error for a run that does not record to memory
// (trace.NewMemoryWriter), and for one with a file still open.
func (r *Run) Prefix(ctx context.Context) ([]byte, error) {
	if !r.Recording() {
		return nil, errors.New("effects: the run does not record: it cannot pause")
	}
	t := r.tr
	t.mu.Lock()
	n, err := t.asking, openHandles(t.handles)
	t.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, errors.New("effects: Prefix is asked only while Decide asks")
	}
	return t.w.Prefix(ctx, n)
}

// PrefixFiles are the io paths the run's trace opened or removed so far,
// sorted: the files whose content a pause keeps the digest of. It is an
// error past MaxPrefixFiles.
func (r *Run) PrefixFiles() ([]string, error) {
	if !r.Traced() {
		return nil, nil
	}
	r.tr.mu.Lock()
	defer r.tr.mu.Unlock()
	if len(r.tr.files) > MaxPrefixFiles {
		return nil, fmt.Errorf("the execution touched %d files, more than a pause keeps (%d)", len(r.tr.files), MaxPrefixFiles)
	}
	paths := make([]string, 0, len(r.tr.files))
	for p := range r.tr.files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	return paths, nil
}

// resumedPass decides an effect of a resumed run, nil when the rules
// and the mode decide it as usual. While the prefix is replayed, its
// effects were decided when they happened: they proceed (and are given
// back from the trace, not made). The first effect after the prefix is
// the one the person was asked about: it must be that effect, and the
// answer decides it.
func (r *Run) resumedPass(p Pending) *Outcome {
	t := r.tr
	if !t.recordsNow() {
		return &Outcome{Decision: Proceed}
	}
	res := t.resume
	res.mu.Lock()
	defer res.mu.Unlock()
	if res.decided {
		return nil
	}
	res.decided = true
	e := p.Effect()
	q := res.question
	if diff := differs(q.Effect, e); diff != "" {
		t.stopped.Store(&StopError{Kind: KindReplay, Message: fmt.Sprintf(
			"the resumed script attempted %s where the person was asked about %s (%s): it was not carried out", Describe(e), Describe(q.Effect), diff)})
		return &Outcome{Decision: Stop}
	}
	e.Rule = q.Rule
	defer r.recordDecision(&e)
	switch res.answer {
	case Approve, ApproveAll:
		if res.answer == ApproveAll && r.HasRules() {
			r.mu.Lock()
			r.policy.approvedAll[q.Rule] = true
			r.mu.Unlock()
		}
		e.Decision = DecisionApproved
		r.add(e)
		return &Outcome{Decision: Proceed}
	case Cancel:
		e.Decision = DecisionAsk
		r.add(e)
		t.stopped.Store(&StopError{Kind: KindApproval, Message: fmt.Sprintf(
			"a person stopped the script at %s (rule %q): it was not carried out", Describe(e), q.Rule)})
		return &Outcome{Decision: Stop}
	}
	out := r.deny(&e, Verdict{Action: ActionDeny, Rule: q.Rule}, true)
	return &out
}

// AskWith makes r's rules one Go function: rule names the rule that asks
// a person (through a) about an effect, "" for none, which the run then
// allows. Tests and embedders use it where a configuration's CEL rules
// (host/contract/policy) are not wanted.
func (r *Run) AskWith(rule func(*Facts) string, a Asker) *Run {
	return r.WithRules(askRule(rule), a)
}

type askRule func(*Facts) string

func (f askRule) Decide(facts *Facts) Verdict {
	if name := f(facts); name != "" {
		return Verdict{Action: ActionAsk, Rule: name}
	}
	return Verdict{Action: ActionAllow}
}

func (askRule) DecidesSafe() bool { return false }

// NeedsRequest: a Go function may look at every fact of a call.
func (askRule) NeedsRequest() bool { return true }
