package sdk

import (
	"context"
	"sync"
	"time"
)

// callWatch enforces the calls' own timeouts ([apis.NAME] timeout) for one
// session without a timer per call. A context with a timeout per call cost
// 2 to 5 µs in the call-overhead benchmark, more than the rest of the
// host's work on a call: arming a timer due sooner than the one the Go
// scheduler's network poller sleeps until wakes the poller. The session's
// one timer is armed at its first call instead, for no later than the
// earliest deadline of the calls in flight; when it fires it cancels the
// calls past their deadline and arms itself for the next one. Calls that
// end within their timeout, nearly all of them, never touch it.
type callWatch struct {
	mu     sync.Mutex
	timer  *time.Timer
	fireAt time.Time // zero when the timer is not armed
	calls  []*watchedCall
	// watching is set while a context.AfterFunc waits to disarm the timer
	// when the execution ends.
	watching bool
}

// watchedCall is one call in flight.
type watchedCall struct {
	deadline time.Time
	cancel   context.CancelFunc
}

// start begins a call that must end within timeout: its context is a child
// of ctx, cancelled once the timeout has passed. The caller ends the call
// (end) once it is done with the response.
func (w *callWatch) start(ctx context.Context, timeout time.Duration) (context.Context, *watchedCall) {
	callCtx, cancel := context.WithCancel(ctx)
	c := &watchedCall{deadline: time.Now().Add(timeout), cancel: cancel}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls = append(w.calls, c)
	if !w.watching {
		// The timer must not outlive the execution.
		w.watching = true
		context.AfterFunc(ctx, w.stop)
	}
	if w.fireAt.IsZero() || c.deadline.Before(w.fireAt) {
		w.arm(c.deadline)
	}
	return callCtx, c
}

// end removes c from the calls in flight and releases its context.
func (w *callWatch) end(c *watchedCall) {
	w.mu.Lock()
	for i, x := range w.calls {
		if x == c {
			last := len(w.calls) - 1
			w.calls[i] = w.calls[last]
			w.calls[last] = nil
			w.calls = w.calls[:last]
			break
		}
	}
	if !w.watching {
		w.disarm() // the last calls of an execution that has ended
	}
	w.mu.Unlock()
	c.cancel()
}

// disarm stops the timer when no call is in flight. w.mu is held.
func (w *callWatch) disarm() {
	if len(w.calls) == 0 && w.timer != nil {
		w.timer.Stop()
		w.fireAt = time.Time{}
	}
}

// arm makes the timer fire at at. w.mu is held.
func (w *callWatch) arm(at time.Time) {
	w.fireAt = at
	if w.timer == nil {
		w.timer = time.AfterFunc(time.Until(at), w.fire)
		return
	}
	w.timer.Reset(time.Until(at))
}

// fire cancels the calls past their deadline and arms the timer for the
// earliest deadline left.
func (w *callWatch) fire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.fireAt = time.Time{}
	now := time.Now()
	var next time.Time
	for _, c := range w.calls {
		switch {
		case !c.deadline.After(now):
			c.cancel()
		case next.IsZero() || c.deadline.Before(next):
			next = c.deadline
		}
	}
	if !next.IsZero() {
		w.arm(next)
	}
}

// stop disarms the timer once the execution whose context start watched
// has ended, or leaves that to the end of its last call in flight (a
// session serves one execution, but nothing breaks if it serves another).
func (w *callWatch) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.watching = false
	w.disarm()
}
