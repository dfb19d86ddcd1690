package effects

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/toolscript/toolscript/host/contract/effects/trace"
)

// Record and replay. A run can be recorded (a real run that also writes a
// trace, host/contract/effects/trace) or a replay of a trace (mode Replay). Both
// pass through the same points: the random seed (Seed), each clock
// reading (Wall, Mono), each sdk call (Call, then Answer) and each io
// operation (IO), in the order the script causes them, and the end of the
// execution (End). Recording, each point does the real thing and writes
// what it gave; replaying, each point checks that the script asks what the
// trace's next entry asked, and gives what it recorded, so nothing reaches
// the world. The first request that differs (another function, URL,
// header, body bytes, path...: a call is compared as a plan compares it,
// compare.go) is the replay's divergence: it stops the script (Err, which
// the runtime checks after each host call and at its safepoints, says
// why, kind replay) and every later point fails too.
//
// A run that neither records nor replays pays one nil check per point.

// traced is a run's trace: w when recording, r when replaying; both when
// resuming (resume.go): r is the prefix replayed, w records it again and
// then the live rest.
type traced struct {
	w *trace.Writer
	r source
	// resume is a resumed run's pause (resume.go), nil for another.
	resume *resumed
	// live is set once a resumed run's prefix has ended: every point is
	// then recorded as a recording run's is. peeked is the prefix's next
	// entry, read to know whether it has ended.
	live   atomic.Bool
	peeked *trace.Entry
	// files are the io paths the trace's io opened or removed, handles
	// the handles open (by number, their path): what a pause must know
	// (resume.go).
	files   map[string]bool
	handles map[int32]string
	// asking is, while Decide asks a person, how many entries come
	// before the effect asked about (-1 otherwise): Prefix's end.
	asking int
	// failed, when set, is told that a recording is not whole (End).
	failed func(error)

	mu sync.Mutex
	// unanswered are the calls recorded whose response has not come.
	unanswered map[trace.Slot]*trace.Entry
	// diverged is the replay's first divergence; stopped (Run.Err) holds
	// it for the runtime to stop the script at its next host call or
	// safepoint, uncatchably.
	diverged *Divergence
	stopped  atomic.Pointer[StopError]
}

// KindReplay is the error kind of a replay's divergence.
const KindReplay = "replay"

// NewRecording returns the effects of a real run that records each of its
// effects (safe ones too), its clock readings and its seed to w.
func NewRecording(w *trace.Writer) *Run {
	return New(Real).Record(w)
}

// Record makes r, a real run, a dry run or a plan run (nil: a real one),
// also record to w what NewRecording's run records: in a dry run, what the
// script got (a held call's made-up response, the overlay's io); in a
// plan run, what it did, and the effect the plan stopped. It returns the
// recording run; a replay cannot record, and is returned as it is.
func (r *Run) Record(w *trace.Writer) *Run {
	if r == nil {
		r = New(Real)
	}
	if r.mode == Replay {
		return r
	}
	r.tr = &traced{w: w, unanswered: map[trace.Slot]*trace.Entry{}, files: map[string]bool{}, handles: map[int32]string{}, asking: -1}
	return r
}

// OnRecordingFailed makes a recording run tell failed, at the execution's
// end, when its trace is not whole (it could not be written, or it grew
// past trace.MaxBytes and was cut short). It returns r.
func (r *Run) OnRecordingFailed(failed func(error)) *Run {
	if r.Traced() {
		r.tr.failed = failed
	}
	return r
}

// NewReplay returns the effects of a replay of the trace r reads (its
// header read already).
func NewReplay(r *trace.Reader) *Run {
	return &Run{mode: Replay, tr: &traced{r: r, files: map[string]bool{}, handles: map[int32]string{}, asking: -1}}
}

// source is the entries a run replays: a trace.Reader, or a resumed
// run's prefix.
type source interface {
	Next() (*trace.Entry, error)
	Line() int
}

// recordsNow reports whether a point is to be recorded (done for real):
// a recording run's always, a resumed run's once its prefix has ended.
func (t *traced) recordsNow() bool {
	if t.w == nil {
		return false
	}
	if t.r == nil || t.live.Load() {
		return true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.peeked != nil || t.diverged != nil {
		return false
	}
	e, err := t.r.Next()
	for err == nil && e.Op == trace.OpDecision { // the audit's: recorded again, nothing to replay
		t.w.Add(e)
		e, err = t.r.Next()
	}
	if err == io.EOF {
		t.live.Store(true)
		return true
	}
	if err == nil {
		t.peeked = e
	}
	return false // an error: next finds it again, and diverges
}

// replayed is an entry given back from the trace: a resumed run records
// it again, and the run keeps track of its io. t.mu is held.
func (t *traced) replayed(e *trace.Entry) {
	if e.Op == trace.OpIO {
		t.track(e.IO)
	}
	if t.w != nil {
		t.w.Add(e)
	}
}

// track keeps the paths io opened or removed and the handles open.
func (t *traced) track(o *trace.IO) {
	switch o.Op {
	case trace.IOOpen, trace.IORemove, trace.IOEdit:
		t.files[o.Path] = true
	case trace.IORename:
		t.files[o.Path], t.files[o.To] = true, true
	}
	trackHandles(t.handles, o)
}

// Traced reports whether the run records or replays.
func (r *Run) Traced() bool { return r != nil && r.tr != nil }

// Recording reports whether the run records a trace.
func (r *Run) Recording() bool { return r.Traced() && r.tr.w != nil }

// Replaying reports whether the run replays a whole trace (a resumed run,
// which replays a prefix and goes on live, does not).
func (r *Run) Replaying() bool { return r.Traced() && r.tr.r != nil && r.tr.w == nil }

// Divergence is where a replay left its trace: the trace's line, what it
// expected there and what the script did instead; or a trace that could
// not be read (Expected empty, Got the reason).
type Divergence struct {
	Line     int
	Expected string
	Got      string
}

func (d *Divergence) Error() string {
	if d.Expected == "" {
		return fmt.Sprintf("the trace cannot be replayed: line %d: %s", d.Line, d.Got)
	}
	return fmt.Sprintf("the script diverged from the trace at line %d: expected %s, got %s", d.Line, d.Expected, d.Got)
}

// Diverged is the replay's divergence, nil while it follows its trace.
func (r *Run) Diverged() *Divergence {
	if !r.Traced() || r.tr.r == nil {
		return nil
	}
	r.tr.mu.Lock()
	defer r.tr.mu.Unlock()
	return r.tr.diverged
}

// next reads the replay's next entry, which must be of op; got describes
// what the script asked, for the divergence. It returns nil once the
// replay diverged. The caller holds t.mu.
func (t *traced) next(op trace.Op, got func() string) *trace.Entry {
	if t.diverged != nil {
		return nil
	}
	e, err := t.peeked, error(nil)
	if e != nil {
		t.peeked = nil
	} else {
		e, err = t.r.Next()
	}
	for err == nil && e.Op == trace.OpDecision { // the audit's: nothing to replay
		if t.w != nil {
			t.w.Add(e) // a resumed run's trace keeps its prefix's audit
		}
		e, err = t.r.Next()
	}
	switch {
	case err == io.EOF:
		t.diverge(&Divergence{Line: t.r.Line() + 1, Expected: "more (the trace ends there)", Got: got()})
		return nil
	case err != nil:
		var te *trace.Error
		d := &Divergence{Line: t.r.Line(), Got: err.Error()}
		if errors.As(err, &te) {
			d.Line, d.Got = te.Line, te.Reason
		}
		t.diverge(d)
		return nil
	case e.Op != op:
		t.diverge(&Divergence{Line: t.r.Line(), Expected: describe(e), Got: got()})
		return nil
	}
	return e
}

// mismatch records that the entry at the current line is not what the
// script asked.
func (t *traced) mismatch(e *trace.Entry, got string) {
	t.diverge(&Divergence{Line: t.r.Line(), Expected: describe(e), Got: got})
}

func (t *traced) diverge(d *Divergence) {
	t.diverged = d
	t.stopped.Store(&StopError{Kind: KindReplay, Message: d.Error()})
}

// reading is how one kind of value the execution reads from the world
// (the random seed, a clock) is recorded and replayed.
type reading[T any] struct {
	op   trace.Op
	what string // the value, as a divergence names it
	// entry is the trace's entry of a value read.
	entry func(T) *trace.Entry
	// value is the value an entry of op holds, false when it holds
	// another reading (the other clock's).
	value func(*trace.Entry) (T, bool)
}

// read is real() when the execution is not traced; recorded; or,
// replaying, the trace's next entry's value (the zero value once the
// replay diverged).
func (k reading[T]) read(r *Run, real func() T) T {
	if !r.Traced() {
		return real()
	}
	t := r.tr
	if t.recordsNow() {
		v := real()
		t.w.Add(k.entry(v))
		return v
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var zero T
	e := t.next(k.op, func() string { return k.what })
	if e == nil {
		return zero
	}
	v, ok := k.value(e)
	if !ok {
		t.mismatch(e, k.what)
		return zero
	}
	t.replayed(e)
	return v
}

// Seed is the execution's random seed: real() recorded, or the trace's.
func (r *Run) Seed(real func() uint64) uint64 {
	return reading[uint64]{
		op: trace.OpSeed, what: "the random seed",
		entry: func(seed uint64) *trace.Entry { return &trace.Entry{Op: trace.OpSeed, Seed: seed} },
		value: func(e *trace.Entry) (uint64, bool) { return e.Seed, true },
	}.read(r, real)
}

// wallReading is a reading of the wall clock: seconds and nanoseconds.
type wallReading struct {
	sec  int64
	nsec int32
}

// Wall is a reading of the wall clock (os.time, os.date): real()
// recorded, or the trace's.
func (r *Run) Wall(real func() (int64, int32)) (int64, int32) {
	w := reading[wallReading]{
		op: trace.OpClock, what: "a reading of the wall clock (os.time, os.date)",
		entry: func(w wallReading) *trace.Entry {
			return &trace.Entry{Op: trace.OpClock, Clock: trace.ClockWall, Sec: w.sec, Nsec: w.nsec}
		},
		value: func(e *trace.Entry) (wallReading, bool) {
			return wallReading{e.Sec, e.Nsec}, e.Clock == trace.ClockWall
		},
	}.read(r, func() wallReading {
		sec, nsec := real()
		return wallReading{sec, nsec}
	})
	return w.sec, w.nsec
}

// Mono is a reading of the monotonic clock (os.clock): real() recorded,
// or the trace's.
func (r *Run) Mono(real func() int64) int64 {
	return reading[int64]{
		op: trace.OpClock, what: "a reading of the monotonic clock (os.clock)",
		entry: func(n int64) *trace.Entry { return &trace.Entry{Op: trace.OpClock, Clock: trace.ClockMono, Nanos: n} },
		value: func(e *trace.Entry) (int64, bool) { return e.Nanos, e.Clock == trace.ClockMono },
	}.read(r, real)
}

// IO passes one io operation: req is its request. Recording, do performs
// it and sets its outcome (Result, Pending, Data: bytes it owns), which is
// recorded; replaying, the trace's outcome is returned and do is not
// called. A nil outcome and the divergence are returned when the replay
// diverged.
func (r *Run) IO(req trace.IO, do func(*trace.IO)) (*trace.IO, *Divergence) {
	t := r.tr
	if t.recordsNow() {
		out := req
		do(&out)
		t.mu.Lock()
		t.track(&out)
		t.mu.Unlock()
		t.w.Add(&trace.Entry{Op: trace.OpIO, IO: &out})
		return &out, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	got := func() string { return describeIO(&req) }
	e := t.next(trace.OpIO, got)
	if e != nil && !sameIO(e.IO, &req) {
		t.mismatch(e, got())
		e = nil
	}
	if e == nil {
		return nil, t.diverged
	}
	t.replayed(e)
	return e.IO, nil
}

// sameIO reports whether two io requests ask the same.
func sameIO(a, b *trace.IO) bool {
	return a.Op == b.Op && a.Path == b.Path && a.Mode == b.Mode && a.Handle == b.Handle && a.Len == b.Len &&
		a.SHA256 == b.SHA256 && a.Whence == b.Whence && a.Offset == b.Offset &&
		a.To == b.To && a.Pattern == b.Pattern && a.Filter == b.Filter && a.All == b.All
}

// CallSlot is a recorded call's place in the trace, for its Answer.
type CallSlot struct {
	slot trace.Slot
	ok   bool
}

// Call passes one sdk call, safe or unsafe, whose request e describes (as
// a dry run's effect: no credential, frozen values by name). Recording, it
// keeps the call's place in the trace, in the order calls are decided,
// for its Answer. Replaying, it returns the trace's response (nil and the
// divergence when the call is not the trace's next entry).
func (r *Run) Call(e Effect) (*trace.Response, CallSlot, *Divergence) {
	t := r.tr
	entry := &trace.Entry{Op: trace.OpCall, Function: e.Function, Method: e.Method, URL: e.URL, Headers: e.Headers,
		Body: e.Body, BodySHA256: e.BodySHA256, BodyBytes: e.BodyBytes}
	if t.recordsNow() {
		slot := t.w.Reserve()
		t.mu.Lock()
		t.unanswered[slot] = entry
		t.mu.Unlock()
		return nil, CallSlot{slot: slot, ok: true}, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	got := func() string { return describe(entry) }
	recorded := t.next(trace.OpCall, got)
	if recorded != nil {
		if diff := differsCall(callOf(recorded), e); diff != "" {
			t.mismatch(recorded, got()+": "+diff)
			recorded = nil
		}
	}
	if recorded == nil {
		return nil, CallSlot{}, t.diverged
	}
	t.replayed(recorded)
	return recorded.Response, CallSlot{}, nil
}

// Answer records the response of the call at s.
func (r *Run) Answer(s CallSlot, resp *trace.Response) {
	if !s.ok {
		return
	}
	t := r.tr
	t.mu.Lock()
	entry, ok := t.unanswered[s.slot]
	delete(t.unanswered, s.slot)
	t.mu.Unlock()
	if ok {
		entry.Response = resp
		t.w.Fill(s.slot, entry)
	}
}

// callOf is the request a trace's call entry recorded, as an effect.
func callOf(e *trace.Entry) Effect {
	return Effect{Op: OpCall, Function: e.Function, Method: e.Method, URL: e.URL, Headers: e.Headers,
		Body: e.Body, BodySHA256: e.BodySHA256, BodyBytes: e.BodyBytes}
}

// End passes the end of the execution. Recording, it writes files (the
// result's files touched, as JSON) and omitted, answers the calls left
// unanswered and flushes the trace: the error is the trace's (the
// recording is not whole). Replaying, it checks that the trace ends there
// too and returns what it recorded: the divergence when it does not.
func (r *Run) End(files json.RawMessage, omitted int) (json.RawMessage, int, error) {
	t := r.tr
	if t.recordsNow() {
		t.mu.Lock()
		left := t.unanswered
		t.unanswered = map[trace.Slot]*trace.Entry{}
		t.mu.Unlock()
		for slot, entry := range left {
			entry.Response = &trace.Response{Unanswered: true}
			t.w.Fill(slot, entry)
		}
		t.w.Add(&trace.Entry{Op: trace.OpEnd, Files: files, FilesOmitted: omitted})
		err := t.w.Close()
		if err != nil && t.failed != nil {
			t.failed(err)
		}
		return files, omitted, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.next(trace.OpEnd, func() string { return "the end of the script" })
	if e == nil {
		return nil, 0, t.diverged
	}
	if more, err := t.r.Next(); err != io.EOF {
		if err != nil {
			var te *trace.Error
			if errors.As(err, &te) {
				t.diverge(&Divergence{Line: te.Line, Got: te.Reason})
			} else {
				t.diverge(&Divergence{Line: t.r.Line(), Got: err.Error()})
			}
		} else {
			t.diverge(&Divergence{Line: t.r.Line(), Expected: "the end of the trace", Got: describe(more) + " after the end"})
		}
		return nil, 0, t.diverged
	}
	return e.Files, e.FilesOmitted, nil
}

// describe is an entry for a divergence's message.
func describe(e *trace.Entry) string {
	switch e.Op {
	case trace.OpSeed:
		return "the random seed"
	case trace.OpClock:
		if e.Clock == trace.ClockWall {
			return "a reading of the wall clock (os.time, os.date)"
		}
		return "a reading of the monotonic clock (os.clock)"
	case trace.OpCall:
		var b strings.Builder
		b.WriteString("call " + e.Function)
		if e.Method != "" {
			b.WriteString(" " + e.Method + " " + e.URL + describeHeaders(e.Headers))
		}
		switch {
		case len(e.Body) > 0:
			b.WriteString(" body " + cut(string(e.Body), 200))
		case e.BodySHA256 != "":
			fmt.Fprintf(&b, " body of %d bytes, sha256 %s", e.BodyBytes, e.BodySHA256)
		}
		return b.String()
	case trace.OpIO:
		return describeIO(e.IO)
	case trace.OpEnd:
		return "the end of the script"
	}
	return string(e.Op)
}

// describeIO is an io request for a divergence's message.
func describeIO(o *trace.IO) string {
	switch o.Op {
	case trace.IOOpen:
		return fmt.Sprintf("io.open(%q, %q)", cut(o.Path, 200), o.Mode)
	case trace.IOList:
		return fmt.Sprintf("io.list(%q)", cut(o.Path, 200))
	case trace.IORemove:
		return fmt.Sprintf("os.remove(%q)", cut(o.Path, 200))
	case trace.IOStat:
		return fmt.Sprintf("io.stat(%q)", cut(o.Path, 200))
	case trace.IOGlob:
		return fmt.Sprintf("io.glob(%q)", cut(o.Path, 200))
	case trace.IOGrep:
		return fmt.Sprintf("io.grep(%q, %q, {glob = %q})", cut(o.Pattern, 200), cut(o.Path, 200), cut(o.Filter, 200))
	case trace.IOEdit:
		return fmt.Sprintf("io.edit(%q, ...) replacing text of %d bytes (old and new text sha256 %s, all %t)", cut(o.Path, 200), o.Len, o.SHA256, o.All)
	case trace.IORename:
		return fmt.Sprintf("os.rename(%q, %q)", cut(o.Path, 200), cut(o.To, 200))
	case trace.IORead:
		return fmt.Sprintf("a read of up to %d bytes from handle %d", o.Len, o.Handle)
	case trace.IOWrite:
		return fmt.Sprintf("a write of %d bytes (sha256 %s) to handle %d", o.Len, o.SHA256, o.Handle)
	case trace.IOSeek:
		return fmt.Sprintf("a seek of handle %d (whence %d, offset %d)", o.Handle, o.Whence, o.Offset)
	}
	return fmt.Sprintf("io %s of handle %d", o.Op, o.Handle)
}
