// Package pacer owns the loop that does the newest pending work at most
// once an interval, on a goroutine of its own: for updates that come
// faster than they are worth passing on (a progress bar's redraws,
// progress notifications), so that whoever updates never waits.
package pacer

import "time"

// Run waits for a wake, then, once interval has passed since flush last
// did something, calls flush, which reports whether it did; wakes that come
// meanwhile are one. It returns when stop is closed, at once, also during
// a wait.
func Run(stop, wake <-chan struct{}, interval time.Duration, flush func() bool) {
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
