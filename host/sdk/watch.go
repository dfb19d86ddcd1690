package sdk

import (
	"context"
	"reflect"
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
	// idle is the context of a call that ended within its timeout, which
	// the session's next call under the same parent takes instead of
	// making its own: calls one after the other, the usual case, then cost
	// no context, done channel and map of child contexts each.
	idle *watchedCall
}

// watchedCall is one call in flight, or the idle context.
type watchedCall struct {
	deadline time.Time
	parent   context.Context
	ctx      context.Context
	cancel   context.CancelFunc
}

// start begins a call that must end by deadline: its context is a child of
// ctx, cancelled once the deadline has passed. The caller ends the call
// (end) once it is done with the response.
func (w *callWatch) start(ctx context.Context, deadline time.Time) (context.Context, *watchedCall) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.idle
	w.idle = nil
	if c == nil || !sameContext(c.parent, ctx) || c.ctx.Err() != nil {
		if c != nil {
			c.cancel()
		}
		callCtx, cancel := context.WithCancel(ctx)
		c = &watchedCall{parent: ctx, ctx: callCtx, cancel: cancel}
	}
	c.deadline = deadline
	w.calls = append(w.calls, c)
	if !w.watching {
		// The timer must not outlive the execution.
		w.watching = true
		context.AfterFunc(ctx, w.stop)
	}
	if w.fireAt.IsZero() || c.deadline.Before(w.fireAt) {
		w.arm(c.deadline)
	}
	return c.ctx, c
}

// sameContext reports whether a and b are one context, without the panic
// == raises for a context type that is not comparable.
func sameContext(a, b context.Context) bool {
	t := reflect.TypeOf(a)
	return t == reflect.TypeOf(b) && t.Comparable() && a == b
}

// end removes c from the calls in flight and releases its context, or
// keeps it for the next call if it was not cancelled.
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
	keep := w.watching && w.idle == nil && c.ctx.Err() == nil
	if keep {
		w.idle = c
	}
	if !w.watching {
		w.disarm() // the last calls of an execution that has ended
	}
	w.mu.Unlock()
	if !keep {
		c.cancel()
	}
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
	if w.idle != nil {
		w.idle.cancel()
		w.idle = nil
	}
}
