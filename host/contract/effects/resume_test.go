package effects

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/contract/effects/trace"
)

// askerFunc is an Asker of a function.
type askerFunc func(Question) (Answer, error)

func (f askerFunc) Ask(q Question) (Answer, error) { return f(q) }

var (
	getA   = Effect{Op: OpCall, Function: "sdk.t.get", Method: "GET", URL: "http://h/a", Headers: map[string]string{}}
	postB  = Effect{Op: OpCall, Function: "sdk.t.post", Method: "POST", URL: "http://h/b", Headers: map[string]string{}, Body: []byte(`{"x":1}`)}
	postC  = Effect{Op: OpCall, Function: "sdk.t.post", Method: "POST", URL: "http://h/c", Headers: map[string]string{}, Body: []byte(`{"x":2}`)}
	askFor = func(e *Facts) string {
		if e.Method == "POST" {
			return "posts need a person"
		}
		return ""
	}
)

// script is what a script does through its run: the seed, a clock, a
// safe call, a file read and closed, then an unsafe call (decided: sent
// when it proceeds), then another unsafe call; sent counts what reached
// the world.
type script struct {
	sent  []string
	reads int
	// second is the unsafe call the script makes after the pause.
	second Effect
}

func (s *script) run(t *testing.T, r *Run) (Decision, Decision) {
	t.Helper()
	r.Seed(func() uint64 { return 42 })
	r.Wall(func() (int64, int32) { return 1700000000, 5 })
	call := func(e Effect, status int) Decision {
		resp, slot, d := r.Call(e)
		switch {
		case d != nil:
			return Stop
		case resp != nil && resp.Status >= 400:
			return Deny // replayed: it was not made when it was recorded
		case resp != nil:
			return Proceed // replayed: it was made when it was recorded
		}
		decision := Proceed
		if e.Method != "GET" {
			decision = r.Decide(func() Effect { return e })
		}
		if decision == Proceed {
			s.sent = append(s.sent, e.URL)
		} else {
			status = 403
		}
		r.Answer(slot, &trace.Response{Status: status})
		return decision
	}
	call(getA, 200)
	r.IO(trace.IO{Op: trace.IOOpen, Path: "in.txt", Mode: "r"}, func(o *trace.IO) { o.Result = 1 })
	r.IO(trace.IO{Op: trace.IORead, Handle: 1, Len: 8}, func(o *trace.IO) { s.reads++; o.Result, o.Data = 2, trace.Bytes("hi") })
	r.IO(trace.IO{Op: trace.IOClose, Handle: 1}, func(o *trace.IO) {})
	if r.Err() != nil {
		return Stop, Stop
	}
	first := call(postB, 201)
	if r.Err() != nil || first != Proceed {
		return first, Stop
	}
	return first, call(s.second, 201)
}

// pause records a run of s that a person is asked about at postB:
// the prefix Prefix gave then.
func pause(t *testing.T) []byte {
	t.Helper()
	w := trace.NewMemoryWriter(trace.Header{Toolscript: "test"})
	var prefix []byte
	var r *Run
	r = NewRecording(w).AskWith(askFor, askerFunc(func(q Question) (Answer, error) {
		if q.Rule != "posts need a person" || q.Effect.URL != postB.URL {
			t.Errorf("asked %+v", q)
		}
		var err error
		prefix, err = r.Prefix(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return Cancel, nil // the pause: the execution stops here
	}))
	s := &script{second: postC}
	if first, _ := s.run(t, r); first != Stop || r.Err() == nil || r.Err().Kind != KindApproval {
		t.Fatalf("the paused run went on: %v %v", first, r.Err())
	}
	if len(s.sent) != 1 || s.sent[0] != getA.URL {
		t.Fatalf("sent %v before the pause", s.sent)
	}
	return prefix
}

func resume(t *testing.T, prefix []byte, q Question, a Answer) (*Run, *trace.Writer, error) {
	t.Helper()
	rd, _, err := trace.NewReader(bytes.NewReader(prefix), 0)
	if err != nil {
		t.Fatal(err)
	}
	w := trace.NewMemoryWriter(trace.Header{Toolscript: "test"})
	r, err := NewResume(rd, q, a, w)
	return r, w, err
}

func TestResume(t *testing.T) {
	prefix := pause(t)
	q := Question{Effect: postB, Rule: "posts need a person"}
	for _, tc := range []struct {
		name          string
		answer        Answer
		second        Effect
		first, then   Decision
		sent          []string
		kind, message string
	}{
		{name: "approved", answer: Approve, second: postC, first: Proceed, then: Proceed, sent: []string{postB.URL, postC.URL}},
		{name: "declined", answer: Decline, second: postC, first: Deny, then: Stop, kind: "", message: "declined by the person"},
		{name: "cancelled", answer: Cancel, second: postC, first: Stop, then: Stop, kind: KindApproval, message: "stopped the script"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, w, err := resume(t, prefix, q, tc.answer)
			if err != nil {
				t.Fatal(err)
			}
			s := &script{second: tc.second}
			first, then := s.run(t, r)
			if first != tc.first || then != tc.then {
				t.Errorf("decisions %v, %v; want %v, %v", first, then, tc.first, tc.then)
			}
			if s.reads != 0 {
				t.Error("the prefix's read was done again")
			}
			if strings.Join(s.sent, " ") != strings.Join(tc.sent, " ") {
				t.Errorf("sent %v, want %v (the prefix's GET never again)", s.sent, tc.sent)
			}
			switch {
			case tc.kind != "" && (r.Err() == nil || r.Err().Kind != tc.kind || !strings.Contains(r.Err().Message, tc.message)):
				t.Errorf("err %+v, want kind %s", r.Err(), tc.kind)
			case tc.first == Deny && !r.Denied(DenialMessage(Verdict{Rule: q.Rule}, true)):
				t.Errorf("not denied as declined by a person")
			}
			if _, _, err := r.End(nil, 0); err != nil {
				t.Fatal(err)
			}
			// The resumed run's trace is the prefix again, then the rest:
			// it replays whole.
			rd, _, err := trace.NewReader(bytes.NewReader(w.Bytes()), 0)
			if err != nil {
				t.Fatal(err)
			}
			rp := NewReplay(rd)
			again := &script{second: tc.second}
			again.run(t, rp)
			if _, _, err := rp.End(nil, 0); err != nil || len(again.sent) != 0 {
				t.Errorf("the resumed run's trace does not replay: %v, sent %v", err, again.sent)
			}
		})
	}
}

// TestResumeOtherwise: a script that does otherwise than its prefix, or
// whose first effect is not the one asked about, stops with kind replay
// before anything is sent.
func TestResumeOtherwise(t *testing.T) {
	prefix := pause(t)
	t.Run("another effect than asked", func(t *testing.T) {
		r, _, err := resume(t, prefix, Question{Effect: postC, Rule: "x"}, Approve)
		if err != nil {
			t.Fatal(err)
		}
		s := &script{second: postC}
		s.run(t, r)
		if len(s.sent) != 0 || r.Err() == nil || r.Err().Kind != KindReplay || !strings.Contains(r.Err().Message, "was asked about") {
			t.Errorf("sent %v, err %+v", s.sent, r.Err())
		}
	})
	t.Run("diverges in the prefix", func(t *testing.T) {
		r, _, err := resume(t, prefix, Question{Effect: postB}, Approve)
		if err != nil {
			t.Fatal(err)
		}
		r.Seed(func() uint64 { return 1 })
		if resp, _, d := r.Call(postC); resp != nil || d == nil || r.Err() == nil || r.Err().Kind != KindReplay {
			t.Fatalf("a call the prefix does not hold: %+v %v %+v", resp, d, r.Err())
		}
	})
	t.Run("ends in the prefix", func(t *testing.T) {
		r, _, err := resume(t, prefix, Question{Effect: postB}, Approve)
		if err != nil {
			t.Fatal(err)
		}
		r.Seed(func() uint64 { return 1 })
		if _, _, err := r.End(nil, 0); err == nil || r.Diverged() == nil {
			t.Fatalf("a script that ends inside its prefix: %v", err)
		}
	})
}

func TestPrefixRefused(t *testing.T) {
	t.Run("a file open at the pause", func(t *testing.T) {
		w := trace.NewMemoryWriter(trace.Header{})
		var err error
		r := NewRecording(w)
		r.AskWith(askFor, askerFunc(func(Question) (Answer, error) {
			_, err = r.Prefix(context.Background())
			return Cancel, nil
		}))
		r.IO(trace.IO{Op: trace.IOOpen, Path: "log.txt", Mode: "w"}, func(o *trace.IO) { o.Result = 1 })
		_, slot, _ := r.Call(postB)
		r.Decide(func() Effect { return postB })
		r.Answer(slot, &trace.Response{})
		if err == nil || !strings.Contains(err.Error(), "log.txt") {
			t.Errorf("Prefix: %v", err)
		}
		// And a prefix that holds one is not resumed.
		var buf bytes.Buffer
		tw, _ := trace.NewWriter(&buf, trace.Header{})
		tw.Add(&trace.Entry{Op: trace.OpIO, IO: &trace.IO{Op: trace.IOOpen, Path: "log.txt", Mode: "w", Result: 1}})
		tw.Close()
		rd, _, _ := trace.NewReader(&buf, 0)
		if _, err := NewResume(rd, Question{}, Approve, trace.NewMemoryWriter(trace.Header{})); err == nil || !strings.Contains(err.Error(), "log.txt") {
			t.Errorf("NewResume: %v", err)
		}
	})
	t.Run("not asking", func(t *testing.T) {
		if _, err := NewRecording(trace.NewMemoryWriter(trace.Header{})).Prefix(context.Background()); err == nil {
			t.Error("a prefix outside an ask")
		}
	})
	t.Run("a prefix that ends the execution", func(t *testing.T) {
		var buf bytes.Buffer
		tw, _ := trace.NewWriter(&buf, trace.Header{})
		tw.Add(&trace.Entry{Op: trace.OpEnd})
		tw.Close()
		rd, _, _ := trace.NewReader(&buf, 0)
		var d *Divergence
		if _, err := NewResume(rd, Question{}, Approve, trace.NewMemoryWriter(trace.Header{})); !errors.As(err, &d) {
			t.Errorf("NewResume: %v", err)
		}
	})
}

// TestPrefixWaitsForCallsInFlight: a prefix holds a call still in flight
// once its response comes; until then it waits, as long as its context
// allows.
func TestPrefixWaitsForCallsInFlight(t *testing.T) {
	w := trace.NewMemoryWriter(trace.Header{})
	r := NewRecording(w)
	_, inFlight, _ := r.Call(getA)
	answered := make(chan struct{})
	var prefix []byte
	var err error
	r.AskWith(askFor, askerFunc(func(Question) (Answer, error) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := r.Prefix(ctx); err == nil || !strings.Contains(err.Error(), "in flight") {
			t.Errorf("a prefix whose call is in flight, not waited for: %v", err)
		}
		go func() {
			r.Answer(inFlight, &trace.Response{Status: 200})
			close(answered)
		}()
		prefix, err = r.Prefix(context.Background())
		return Approve, nil
	}))
	_, slot, _ := r.Call(postB)
	if d := r.Decide(func() Effect { return postB }); d != Proceed || err != nil {
		t.Fatalf("%v %v", d, err)
	}
	<-answered
	r.Answer(slot, &trace.Response{Status: 201})
	rd, _, err := trace.NewReader(bytes.NewReader(prefix), 0)
	if err != nil {
		t.Fatal(err)
	}
	e, err := rd.Next()
	if err != nil || e.URL != getA.URL || e.Response.Status != 200 {
		t.Fatalf("the prefix's first entry %+v %v", e, err)
	}
	if e, err := rd.Next(); e != nil || err == nil {
		t.Errorf("the prefix goes on past the asked call: %+v", e)
	}
}
