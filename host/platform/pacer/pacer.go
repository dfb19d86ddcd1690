// Package pacer owns the loop that does the newest pending work at most
// once an interval, on a goroutine of its own: for updates that come
// faster than they are worth passing on (a progress bar's redraws,
// progress notifications), so that whoever updates never waits.
package pacer

import "time"

// Pacer is the loop on its goroutine, with the channels that wake and stop
// it.
type Pacer struct {
	wake, stop, done chan struct{}
}

// Start runs the loop until Stop: after each Wake, once interval has
// passed since flush last did something, it calls flush, which reports
// whether it did; wakes that come meanwhile are one.
func Start(interval time.Duration, flush func() bool) *Pacer {
	p := &Pacer{wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		run(p.stop, p.wake, interval, flush)
	}()
	return p
}

// Wake asks for a flush. It never waits.
func (p *Pacer) Wake() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Stop ends the loop, at once, also during a wait, and returns when flush
// is no longer called. A wake still pending is dropped: what it would have
// flushed is the caller's to flush after Stop.
func (p *Pacer) Stop() {
	close(p.stop)
	<-p.done
}

func run(stop, wake <-chan struct{}, interval time.Duration, flush func() bool) {
	var last time.Time
	for {
		select {
		case <-stop:
			return
		case <-wake:
		}
		if wait := interval - time.Since(last); wait > 0 {
			timer := time.NewTimer(wait)
			select {
			case <-stop:
				timer.Stop()
				return
			case <-timer.C:
			}
		}
		if flush() {
			last = time.Now()
		}
	}
}
