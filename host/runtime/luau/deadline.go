package luau

import (
	"context"
	"sync"
	"time"
)

// deadline is an execution's wall-clock limit, as the context its host
// calls run under: done when the caller's context is done (its error) or
// when the script's time runs out (context.DeadlineExceeded). Only the
// script's time counts: while a person is asked about an effect
// (effects.Run.OnWait calls pause) the limit stands still, and it moves
// on by the time waited when the answer comes. The wait has its own
// bound, the Asker's (approval_timeout).
//
// Deadline gives the time the limit passes if nothing more waits: a wait
// moves it later, never earlier, so a call that read it earlier holds a
// bound that is, if anything, too soon.
type deadline struct {
	parent context.Context
	done   chan struct{}

	mu     sync.Mutex
	at     time.Time     // when the limit passes, unless paused
	left   time.Duration // while paused: the script's time left
	paused int           // waits under way
	timer  *time.Timer
	err    error

	stopParent func() bool
}

// newDeadline starts the limit of limit from now under parent.
func newDeadline(parent context.Context, limit time.Duration) *deadline {
	d := &deadline{parent: parent, done: make(chan struct{}), at: time.Now().Add(limit)}
	d.timer = time.AfterFunc(limit, func() { d.end(context.DeadlineExceeded) })
	d.stopParent = context.AfterFunc(parent, func() { d.end(parent.Err()) })
	return d
}

// end makes d done with err, once.
func (d *deadline) end(err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err == nil {
		d.err = err
		close(d.done)
	}
}

// release frees d's timer and its watch of the parent; d ends as
// cancelled if it had not ended.
func (d *deadline) release() {
	d.timer.Stop()
	d.stopParent()
	d.end(context.Canceled)
}

// pause stops the script's clock until the returned function is called
// (once). Waits may overlap: the clock runs again when the last one ends.
func (d *deadline) pause() (resume func()) {
	d.mu.Lock()
	if d.paused == 0 && d.err == nil {
		d.timer.Stop()
		d.left = time.Until(d.at)
	}
	d.paused++
	d.mu.Unlock()
	var once sync.Once
	return func() { once.Do(d.resume) }
}

func (d *deadline) resume() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.paused--
	if d.paused > 0 || d.err != nil {
		return
	}
	d.at = time.Now().Add(d.left)
	d.timer.Reset(d.left)
}

// passed reports whether the script's time ran out (not a cancellation
// by the caller): what tick checks, without reading the clock.
func (d *deadline) passed() bool {
	select {
	case <-d.done:
		return d.Err() == context.DeadlineExceeded
	default:
		return false
	}
}

func (d *deadline) Deadline() (time.Time, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.paused > 0 {
		return time.Now().Add(d.left), true
	}
	return d.at, true
}

func (d *deadline) Done() <-chan struct{} { return d.done }

func (d *deadline) Err() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

func (d *deadline) Value(key any) any { return d.parent.Value(key) }
