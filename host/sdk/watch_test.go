package sdk

import (
	"context"
	"testing"
	"time"
)

// TestCallWatch: each call is cancelled once its own timeout has passed,
// whatever the other calls in flight; calls that end in time leave the
// one timer as it was; the execution's end disarms it.
func TestCallWatch(t *testing.T) {
	var w callWatch
	exec, endExec := context.WithCancel(context.Background())

	// Quick calls arm the timer once, for the first one's deadline.
	_, first := w.start(exec, time.Hour)
	w.end(first)
	w.mu.Lock()
	timer, fireAt := w.timer, w.fireAt
	w.mu.Unlock()
	for range 100 {
		_, c := w.start(exec, time.Hour)
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
	long, longCall := w.start(exec, 300*time.Millisecond)
	short, shortCall := w.start(exec, 50*time.Millisecond)
	never, neverCall := w.start(exec, time.Hour)
	<-short.Done()
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
	deadline := time.Now().Add(5 * time.Second)
	for {
		w.mu.Lock()
		armed, watching := !w.fireAt.IsZero(), w.watching
		w.mu.Unlock()
		if !armed && !watching {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the timer is still armed (%v) after the execution ended", armed)
		}
		time.Sleep(time.Millisecond)
	}

	// A later execution on the same session has its timeouts enforced too.
	exec2, endExec2 := context.WithCancel(context.Background())
	defer endExec2()
	again, againCall := w.start(exec2, 20*time.Millisecond)
	select {
	case <-again.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a call of a later execution outlived its timeout")
	}
	w.end(againCall)
}
