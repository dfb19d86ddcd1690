package effects

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/contract/effects/trace"
)

func TestRecordThenReplay(t *testing.T) {
	var buf bytes.Buffer
	w, err := trace.NewWriter(&buf, trace.Header{Toolscript: "test"})
	if err != nil {
		t.Fatal(err)
	}
	rec := NewRecording(w)
	if rec.Mode() != Real || !rec.Recording() || rec.Replaying() {
		t.Fatal("a recording is a real run that records")
	}
	seed := rec.Seed(func() uint64 { return 77 })
	sec, nsec := rec.Wall(func() (int64, int32) { return 1700000000, 9 })
	mono := rec.Mono(func() int64 { return 1234 })
	_, slot1, _ := rec.Call(Effect{Op: OpCall, Function: "sdk.t.get", Method: "GET", URL: "http://h/a"})
	_, slot2, _ := rec.Call(Effect{Op: OpCall, Function: "sdk.t.post", Method: "POST", URL: "http://h/b", Body: []byte(`{"x":1}`)})
	rec.Answer(slot2, &trace.Response{Status: 201}) // answered out of order
	rec.Answer(slot1, &trace.Response{Status: 200, JSON: trace.Bytes(`{"ok":true}`)})
	read, _ := rec.IO(trace.IO{Op: trace.IORead, Handle: 1, Len: 4}, func(o *trace.IO) { o.Result, o.Data = 2, trace.Bytes("hi") })
	_, slot3, _ := rec.Call(Effect{Op: OpCall, Function: "sdk.t.slow"})
	_ = slot3 // never answered: the execution ended first
	if _, _, err := rec.End([]byte(`[]`), 0); err != nil {
		t.Fatal(err)
	}

	replay := func() (*Run, *trace.Reader) {
		r, _, err := trace.NewReader(bytes.NewReader(buf.Bytes()), 0)
		if err != nil {
			t.Fatal(err)
		}
		return NewReplay(r), r
	}
	rp, _ := replay()
	if got := rp.Seed(func() uint64 { t.Fatal("the seed is read in a replay"); return 0 }); got != seed {
		t.Errorf("seed %d, want %d", got, seed)
	}
	if s, n := rp.Wall(nil); s != sec || n != nsec {
		t.Errorf("wall %d.%d, want %d.%d", s, n, sec, nsec)
	}
	if m := rp.Mono(nil); m != mono {
		t.Errorf("mono %d, want %d", m, mono)
	}
	if resp, _, d := rp.Call(Effect{Op: OpCall, Function: "sdk.t.get", Method: "GET", URL: "http://h/a"}); d != nil || resp.Status != 200 || string(resp.JSON) != `{"ok":true}` {
		t.Errorf("first call: %+v %v", resp, d)
	}
	if resp, _, d := rp.Call(Effect{Op: OpCall, Function: "sdk.t.post", Method: "POST", URL: "http://h/b", Body: []byte(`{"x":1}`)}); d != nil || resp.Status != 201 {
		t.Errorf("second call: %+v %v", resp, d)
	}
	if out, d := rp.IO(trace.IO{Op: trace.IORead, Handle: 1, Len: 4}, func(*trace.IO) { t.Fatal("io done in a replay") }); d != nil || string(out.Data) != string(read.Data) {
		t.Errorf("read: %+v %v", out, d)
	}
	if resp, _, d := rp.Call(Effect{Op: OpCall, Function: "sdk.t.slow"}); d != nil || !resp.Unanswered {
		t.Errorf("unanswered call: %+v %v", resp, d)
	}
	if files, _, err := rp.End(nil, 0); err != nil || string(files) != `[]` {
		t.Errorf("end: %s %v", files, err)
	}
	if rp.Diverged() != nil {
		t.Errorf("diverged: %v", rp.Diverged())
	}

	// Divergences: each names the trace's line, what it expected and what
	// came instead; the replay stops and stays diverged.
	cases := []struct {
		name string
		run  func(r *Run)
		want string
	}{
		{"another URL", func(r *Run) {
			r.Seed(nil)
			r.Wall(nil)
			r.Mono(nil)
			r.Call(Effect{Op: OpCall, Function: "sdk.t.get", Method: "GET", URL: "http://h/OTHER"})
		}, "line 5: expected call sdk.t.get GET http://h/a, got call sdk.t.get GET http://h/OTHER"},
		{"another body", func(r *Run) {
			r.Seed(nil)
			r.Wall(nil)
			r.Mono(nil)
			r.Call(Effect{Op: OpCall, Function: "sdk.t.get", Method: "GET", URL: "http://h/a"})
			r.Call(Effect{Op: OpCall, Function: "sdk.t.post", Method: "POST", URL: "http://h/b", Body: []byte(`{"x":2}`)})
		}, `line 6: expected call sdk.t.post POST http://h/b body {"x":1}, got call sdk.t.post POST http://h/b body {"x":2}`},
		{"a clock instead of the seed", func(r *Run) { r.Wall(nil) }, "line 2: expected the random seed, got a reading of the wall clock"},
		{"the other clock", func(r *Run) { r.Seed(nil); r.Mono(nil) }, "line 3: expected a reading of the wall clock (os.time, os.date), got a reading of the monotonic clock"},
		{"an early end", func(r *Run) { r.Seed(nil); r.End(nil, 0) }, "line 3: expected a reading of the wall clock (os.time, os.date), got the end of the script"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, _ := replay()
			c.run(r)
			d := r.Diverged()
			if d == nil || !strings.Contains(d.Error(), c.want) {
				t.Fatalf("divergence %v, want %q", d, c.want)
			}
			if stop := r.Err(); stop == nil || stop.Kind != KindReplay || stop.Message != d.Error() {
				t.Errorf("the divergence does not stop the run: %+v", stop)
			}
			if _, _, again := r.Call(Effect{Function: "sdk.t.get"}); again != d {
				t.Errorf("after a divergence a call got %v", again)
			}
		})
	}
	if rp.Err() != nil {
		t.Errorf("the replay that followed its trace was stopped: %v", rp.Err())
	}
}

// failAfter is a writer that takes n bytes, then fails.
type failAfter struct{ n int }

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		return 0, errors.New("disk full")
	}
	f.n -= len(p)
	return len(p), nil
}

// A recording whose trace could not be written tells OnRecordingFailed at
// the end, with the writer's error; a whole one does not.
func TestOnRecordingFailed(t *testing.T) {
	for _, c := range []struct {
		name  string
		room  int
		fails bool
	}{
		{"whole", 1 << 20, false},
		{"the disk fills up", 100, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, err := trace.NewWriter(&failAfter{n: c.room}, trace.Header{Toolscript: "test"})
			if err != nil {
				t.Fatal(err)
			}
			var got []error
			rec := NewRecording(w).OnRecordingFailed(func(err error) { got = append(got, err) })
			_, slot, _ := rec.Call(Effect{Op: OpCall, Function: "sdk.t.get", Method: "GET", URL: "http://h/" + strings.Repeat("a", 200)})
			rec.Answer(slot, &trace.Response{Status: 200})
			_, _, endErr := rec.End([]byte(`[]`), 0)
			if c.fails != (len(got) == 1) || (c.fails && (endErr == nil || !strings.Contains(got[0].Error(), "disk full"))) {
				t.Errorf("told %v (End: %v), want a failure: %v", got, endErr, c.fails)
			}
		})
	}
	// A real run that does not record has nothing to tell.
	if New(Real).OnRecordingFailed(func(error) { t.Error("told") }) == nil {
		t.Error("nil run")
	}
}
