package sdk

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// TestCallWatch: each call is cancelled once its own timeout has passed,
// whatever the other calls in flight; calls that end in time leave the
// one timer as it was; the execution's end disarms it.
func TestCallWatch(t *testing.T) {
	// Time here is synctest's: timeouts pass as soon as every goroutine
	// waits, and synctest.Wait lets the watch's goroutine finish first.
	synctest.Test(t, func(t *testing.T) {
		var w callWatch
		exec, endExec := context.WithCancel(context.Background())

		// Quick calls arm the timer once, for the first one's deadline.
		_, first := w.start(exec, time.Now().Add(time.Hour))
		w.end(first)
		w.mu.Lock()
		timer, fireAt := w.timer, w.fireAt
		w.mu.Unlock()
		for range 100 {
			_, c := w.start(exec, time.Now().Add(time.Hour))
			w.end(c)
		}
		w.mu.Lock()
		if w.timer != timer || !w.fireAt.Equal(fireAt) || len(w.calls) != 0 {
			t.Errorf("quick calls re-armed the timer: %v then %v, %d calls left", fireAt, w.fireAt, len(w.calls))
		}
		w.mu.Unlock()

		// Calls in flight together end at their own deadlines, the shortest
		// first, although the timer was armed for a later one.
		start := time.Now()
		long, longCall := w.start(exec, time.Now().Add(300*time.Millisecond))
		short, shortCall := w.start(exec, time.Now().Add(50*time.Millisecond))
		never, neverCall := w.start(exec, time.Now().Add(time.Hour))
		<-short.Done()
		// Lower bounds only: a timer never fires early, so these hold however
		// loaded the machine is.
		if elapsed := time.Since(start); elapsed < 50*time.Millisecond {
			t.Errorf("the 50 ms call ended after %v", elapsed)
		}
		if long.Err() != nil {
			t.Error("the 300 ms call ended with the 50 ms one")
		}
		<-long.Done()
		if elapsed := time.Since(start); elapsed < 300*time.Millisecond {
			t.Errorf("the 300 ms call ended after %v", elapsed)
		}
		if never.Err() != nil {
			t.Error("the one-hour call ended")
		}
		w.end(shortCall)
		w.end(longCall)

		// The execution's end cancels the call in flight (its context is the
		// execution's child) and, once no call is left, disarms the timer.
		endExec()
		<-never.Done()
		w.end(neverCall)
		// The timer is disarmed by the watch's own goroutine once it sees the
		// execution end: its state once that goroutine is done.
		synctest.Wait()
		w.mu.Lock()
		armed, watching := !w.fireAt.IsZero(), w.watching
		w.mu.Unlock()
		if armed || watching {
			t.Fatalf("the timer is still armed (%v) after the execution ended", armed)
		}

		// A later execution on the same session has its timeouts enforced too.
		exec2, endExec2 := context.WithCancel(context.Background())
		defer endExec2()
		again, againCall := w.start(exec2, time.Now().Add(20*time.Millisecond))
		select {
		case <-again.Done():
		case <-time.After(time.Minute):
			t.Fatal("a call of a later execution outlived its timeout by a minute")
		}
		w.end(againCall)
	})
}

// uncomparableCtx is a context type == panics on.
type uncomparableCtx struct {
	context.Context
	tags []string
}

// TestCallWatchReuse: a call that ended within its timeout hands its
// context to the next call under the same parent; a call cancelled by its
// timeout, calls in flight together and calls under another parent get
// their own.
func TestCallWatchReuse(t *testing.T) {
	// Time here is synctest's: timeouts pass as soon as every goroutine
	// waits, and synctest.Wait lets the watch's goroutine finish first.
	synctest.Test(t, func(t *testing.T) {
		var w callWatch
		exec, endExec := context.WithCancel(context.Background())
		defer endExec()

		first, c := w.start(exec, time.Now().Add(time.Hour))
		w.end(c)
		second, c := w.start(exec, time.Now().Add(time.Hour))
		if second != first {
			t.Error("a call after one that ended in time did not reuse its context")
		}
		// Two in flight: the second has its own, and only one is kept.
		third, c3 := w.start(exec, time.Now().Add(time.Hour))
		w.end(c)
		w.end(c3)
		if third == second {
			t.Error("two calls in flight shared a context")
		}
		if (second.Err() == nil) == (third.Err() == nil) {
			t.Errorf("after both ended: %v and %v; want exactly one kept", second.Err(), third.Err())
		}

		// A call cancelled by its own timeout: its context is never reused.
		timedOut, c := w.start(exec, time.Now().Add(10*time.Millisecond))
		<-timedOut.Done()
		w.end(c)
		next, c := w.start(exec, time.Now().Add(time.Hour))
		if next.Err() != nil || next == timedOut {
			t.Errorf("the call after a timed-out one got a cancelled context (%v)", next.Err())
		}
		w.end(c)

		// Another parent: its own context, ended with that parent.
		other, endOther := context.WithCancel(context.Background())
		underOther, c := w.start(other, time.Now().Add(time.Hour))
		if underOther == next {
			t.Error("a call under another parent reused the first parent's context")
		}
		endOther()
		<-underOther.Done()
		w.end(c)

		// A parent == cannot compare is no panic, and gets its own context.
		odd := uncomparableCtx{Context: exec, tags: []string{"x"}}
		oddCtx, c := w.start(odd, time.Now().Add(time.Hour))
		w.end(c)
		again, c := w.start(odd, time.Now().Add(time.Hour))
		if again.Err() != nil {
			t.Error(again.Err())
		}
		w.end(c)
		_ = oddCtx

		// The execution's end releases the kept context.
		endExec()
		// The timer is disarmed by the watch's own goroutine once it sees the
		// execution end: its state once that goroutine is done.
		synctest.Wait()
		w.mu.Lock()
		idle := w.idle
		w.mu.Unlock()
		if idle != nil {
			t.Fatal("the idle context outlived the execution")
		}
	})
}
