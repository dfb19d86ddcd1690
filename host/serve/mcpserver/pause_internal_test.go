package mcpserver

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"weak"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/contract/effects/trace"
	"github.com/toolscript/toolscript/host/contract/sdkcall"
	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/host/serve/auth"
	"github.com/toolscript/toolscript/internal/testruntime"
)

// TestPausedTableBoundsMemory: a paused execution held in place keeps its
// wasm instance (up to its heap bound and the runtime's overhead) and its
// trace in memory, without a slot; the table holds them within a budget of
// bytes, one user's and all users', whatever the counts allow. A server
// whose heap limit passes the budget still holds one of a user's, four in
// all.
func TestPausedTableBoundsMemory(t *testing.T) {
	cases := []struct {
		name      string
		heap      uint64
		fit       bool // the table fitted to the heap, as New does
		users     int
		perUserOf int // executions each user pauses
		held      int // of them held, in all
	}{
		{"one user, the default heap", 0, true, 1, maxPausedPerUser, 5}, // 96 MiB each
		{"one user, a 256 MiB heap", 256 << 20, true, 1, maxPausedPerUser, 1},
		{"a heap past a user's budget, unfitted", 1 << 30, false, 1, 2, 0},
		{"a heap past a user's budget", 1 << 30, true, 1, 2, 1},
		{"a heap past a user's budget, many users", 1 << 30, true, 8, 2, 4},
		{"many users, the default heap", 0, true, 32, maxPausedPerUser, 21},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var table pausedTable
			if c.fit {
				table.fit(c.heap)
			}
			perUser, total := cmp.Or(table.maxUserBytes, maxPausedBytesPerUser), cmp.Or(table.maxBytes, maxPausedBytes)
			cost := int64(luau.Limits{HeapBytes: c.heap}.WithDefaults().HeapBytes) + luau.MemoryOverheadBytes
			held := map[string]int64{}
			var all int64
			for u := range c.users {
				owner := fmt.Sprintf("user-%d", u)
				for i := range c.perUserOf {
					r := &running{id: fmt.Sprintf("%s-%d", owner, i), owner: owner,
						x: &execution{script: luau.Script{Limits: luau.Limits{HeapBytes: c.heap}}}}
					if table.hold(r, time.Hour) {
						held[owner] += cost
						all += cost
					}
				}
				if held[owner] > perUser {
					t.Errorf("%s has %d MiB of paused executions held, more than %d MiB", owner, held[owner]>>20, perUser>>20)
				}
			}
			if len(table.byID) != c.held {
				t.Errorf("%d paused executions held, want %d", len(table.byID), c.held)
			}
			if all > total {
				t.Errorf("%d MiB of paused executions held, more than %d MiB", all>>20, total>>20)
			}
			for _, r := range table.byID {
				if table.take(r.id, r.owner) != r {
					t.Fatalf("%s was held and cannot be taken", r.id)
				}
			}
			if table.count.all != 0 || len(table.count.byUser) != 0 || table.bytes.all != 0 || len(table.bytes.byUser) != 0 {
				t.Errorf("once none is held the table counts %+v and %+v bytes", table.count, table.bytes)
			}
		})
	}
}

// TestHoldEndsWithItsOwnWait: an execution resumed in place and paused
// again is held for the whole of its new wait: the end of its first wait
// neither releases nor stops it; the end of its own does both. (Time is
// synctest's: the moment it stops is exact.)
func TestHoldEndsWithItsOwnWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const wait = 10 * time.Minute
		s := &Server{cfg: Config{ApprovalTimeout: wait}}
		stopped := make(chan struct{})
		r := &running{id: "r", owner: "alice", x: &execution{}, cancel: sync.OnceFunc(func() { close(stopped) })}
		start := time.Now()
		if !s.hold(r) {
			t.Fatal("not held")
		}
		retry := time.NewTimer(wait - time.Minute)
		<-retry.C // the client's retry comes late in the first wait
		if s.pausedRuns.take("r", "alice") != r {
			t.Fatal("the retry did not find it")
		}
		if !s.hold(r) { // it pauses again at once
			t.Fatal("not held again")
		}
		<-stopped
		if elapsed, want := time.Since(start), 2*wait-time.Minute; elapsed != want {
			t.Errorf("stopped %v after the first pause, want %v: at the end of its second wait, not of its first", elapsed, want)
		}
		if s.pausedRuns.holds("r", "alice") {
			t.Error("still held once stopped")
		}
	})
}

// TestPauseNotHeldThatResumesOnlyInPlace: a pause that resumes only in
// place (here, an execution that does not record to memory) and that the
// bounds leave no room to hold is answered with an error naming the
// bound, not with a state no retry could resume; its execution stops.
func TestPauseNotHeldThatResumesOnlyInPlace(t *testing.T) {
	ctx := context.Background()
	sealer, err := ownSealer()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{states: sealer}
	owner := ownerOf(ctx)
	for i := 0; ; i++ { // the user's paused executions fill their bounds
		other := &running{id: fmt.Sprintf("other-%d", i), owner: owner, x: &execution{}}
		if !s.pausedRuns.hold(other, time.Hour) {
			break
		}
	}
	var stopped atomic.Bool
	x := &execution{script: luau.Script{Effects: effects.New(effects.Real)}}
	r := &running{id: "r", owner: owner, x: x, cancel: func() { stopped.Store(true) }}
	res, err := s.paused(ctx, x, r, effects.Question{Rule: "ask", Effect: effects.Effect{Op: effects.OpRemove, Path: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.ResultType == mcp.ResultTypeInputRequired || !res.IsError || !stopped.Load() {
		t.Fatalf("result type %q, error %v, stopped %v: %+v", res.ResultType, res.IsError, stopped.Load(), res)
	}
	if text := fmt.Sprint(res.Content); !strings.Contains(text, "paused executions") || !strings.Contains(text, "does not record") {
		t.Errorf("the error does not say why: %s", text)
	}
}

// TestMemoryRecordingsBounded: the traces executions that may pause record
// to memory (every response of every call they make) are bounded, one
// user's and all users': past a bound a recording is cut (a pause after
// the cut resumes only in place, saying why), another user's still
// records, and what a recording held is given back when it is dropped.
func TestMemoryRecordingsBounded(t *testing.T) {
	const perUser, total = 256 << 10, 1 << 20
	s := &Server{recordings: trace.NewQuota(total, perUser)}
	big := &trace.Entry{Op: trace.OpCall, Function: "sdk.api.get", Response: &trace.Response{Status: 200, Text: trace.Bytes(strings.Repeat("x", 100<<10))}}
	record := func(owner string, n int) (*trace.Writer, error) {
		w := s.recordToMemory(owner, trace.Header{Toolscript: "test"})
		for range n {
			w.Add(big)
		}
		_, err := w.Prefix(context.Background(), n)
		return w, err
	}
	alice, err := record("alice", 5)
	if !trace.IsCut(err) {
		t.Fatalf("a recording of 500 KiB, past a user's 256 KiB: %v", err)
	}
	bob, err := record("bob", 2)
	if err != nil {
		t.Fatalf("another user's recording: %v", err)
	}
	for _, w := range []*trace.Writer{alice, bob} {
		w.Close()
		s.releaseRecording(w)
	}
	if used, _ := s.recordings.Used("alice"); used != 0 {
		t.Errorf("%d bytes still counted once every recording was dropped", used)
	}
	if _, err := record("alice", 2); err != nil {
		t.Errorf("the user's recording once their earlier one was dropped: %v", err)
	}
	if (&Server{}).recordToMemory("carol", trace.Header{}) == nil {
		t.Error("no recording without a quota")
	}
}

// TestTakenExecutionNotRetained: once a retry takes a held execution on,
// the end of its wait no longer keeps it (and the trace and instance it
// refers to) in memory: an execution that pauses, is answered at once and
// ends is not held on to for approval_timeout after.
func TestTakenExecutionNotRetained(t *testing.T) {
	s := &Server{cfg: Config{ApprovalTimeout: time.Hour}}
	r := &running{id: "r", owner: "alice", x: &execution{}, cancel: func() {}}
	if !s.hold(r) {
		t.Fatal("not held")
	}
	if s.pausedRuns.take("r", "alice") != r {
		t.Fatal("the retry did not find it")
	}
	gone := weak.Make(r)
	r = nil
	runtime.GC()
	runtime.GC()
	if gone.Value() != nil {
		t.Error("a taken execution is still kept, by the timer of the wait it no longer waits")
	}
}

// heldSDK is an execution's sdk that holds bytes of the host memory
// budgets: responses of a parallel batch the script has not taken, while
// a later call of the batch asks a person.
type heldSDK struct {
	sdkcall.Caller
	held int64
}

func (h heldSDK) HostBytesHeld() int64 { return h.held }

// TestPausedTableBoundsHostBytes: the host memory budget every user's
// calls share ([limits] max_host_bytes_total) is not held by paused
// executions past a quarter of its default (16 MiB, 4 MiB of one
// user's): past that an execution is not held in place (it stops, and
// gives its bytes back), so that a few paused executions cannot make
// every other user's calls fail with kind limit.
func TestPausedTableBoundsHostBytes(t *testing.T) {
	cases := []struct {
		name  string
		held  int64 // by each execution
		users int
		want  int // executions held in all
	}{
		{"none held", 0, 1, 5},
		{"a response of the most one execution holds", 24 << 20, 1, 0},
		{"3 MiB, one user", 3 << 20, 1, 1},
		{"3 MiB, many users", 3 << 20, 8, 5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var table pausedTable
			for u := range c.users {
				for i := range maxPausedPerUser {
					owner := fmt.Sprintf("user-%d", u)
					r := &running{id: fmt.Sprintf("%s-%d", owner, i), owner: owner,
						x: &execution{script: luau.Script{SDK: heldSDK{held: c.held}}}}
					table.hold(r, time.Hour)
				}
			}
			if len(table.byID) != c.want {
				t.Errorf("%d paused executions held, want %d", len(table.byID), c.want)
			}
			if table.hostBytes.all > maxPausedHostBytes {
				t.Errorf("paused executions hold %d bytes of the host budgets", table.hostBytes.all)
			}
		})
	}
}

// TestInCallAskBoundsHostBytes: an execution asked about an effect during
// its call (a client on 2025-11-25 that declared elicitation) waits under
// the same bound of the shared host memory budget as a paused one: past
// it the person is not asked, and the effect is not made.
func TestInCallAskBoundsHostBytes(t *testing.T) {
	s := &Server{}
	x := &execution{script: luau.Script{SDK: heldSDK{held: 24 << 20}}}
	ctx := context.WithValue(context.Background(), executionKey{}, x)
	a := &inCallAsker{s: s, ctx: ctx} // no call: asking its client would fail the test
	answer, err := a.Ask(effects.Question{Rule: "ask", Effect: effects.Effect{Op: effects.OpRemove, Path: "a"}})
	if answer != effects.Cancel || err == nil || !strings.Contains(err.Error(), "host memory") {
		t.Fatalf("answer %v, error %v", answer, err)
	}
	if s.pausedRuns.hostBytes.all != 0 {
		t.Errorf("%d bytes still counted", s.pausedRuns.hostBytes.all)
	}
}

// TestPausedExecutionCountsItsRequest: an execution that may pause keeps
// the context of the call that started it, and with it the call's
// message, decoded (its _meta, say) and as sent; held paused, it counts
// that message's weight (RequestWeight) beside its wasm instance's bound,
// so that paused executions started by padded requests stay within the
// paused executions' bounds of memory.
func TestPausedExecutionCountsItsRequest(t *testing.T) {
	rt := testruntime.New(t, luau.Config{PoolSize: 1})
	s, err := New(Config{Runtime: rt, ErrorLog: io.Discard, ApprovalTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	raw := json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_script","arguments":{"script":"return 1"},` +
		`"_meta":{"pad":[` + strings.TrimSuffix(strings.Repeat(`{"a":0},`, 100_000), ",") + `]}}}`)
	ctx := context.WithValue(auth.WithUser(context.Background(), auth.User{Issuer: "i", Subject: "alice"}), callKey{}, &call{raw: raw})
	x := &execution{script: luau.Script{Source: []byte("return 1")}}
	r := s.start(ctx, x, false)
	<-r.events
	instance := int64(x.script.Limits.WithDefaults().HeapBytes) + luau.MemoryOverheadBytes
	if got, want := r.pausedBytes(), instance+RequestWeight(raw); got < want {
		t.Errorf("an execution started by a request of %d bytes (weighing %d) counts %d bytes paused, less than %d",
			len(raw), RequestWeight(raw), got, want)
	}
}
