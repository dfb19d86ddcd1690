package pacer

import (
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestPacer: the first update is flushed at once; a burst of updates
// during the interval is flushed once, when the interval is over; a flush
// that found nothing to do starts no interval; a stop during a wait ends
// the loop without a flush (Stop returns: synctest fails a test whose
// goroutines all wait forever).
func TestPacer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval = 100 * time.Millisecond
		var mu sync.Mutex
		pending := false
		var flushes []time.Duration // when each flush that did something came
		start := time.Now()
		p := Start(interval, func() bool {
			mu.Lock()
			defer mu.Unlock()
			if !pending {
				return false
			}
			pending = false
			flushes = append(flushes, time.Since(start))
			return true
		})
		update := func() {
			mu.Lock()
			pending = true
			mu.Unlock()
			p.Wake()
		}
		check := func(want ...time.Duration) {
			t.Helper()
			synctest.Wait()
			mu.Lock()
			defer mu.Unlock()
			if !slices.Equal(flushes, want) {
				t.Fatalf("flushes at %v, want %v", flushes, want)
			}
		}

		update()
		check(0)
		for range 5 {
			update()
		}
		check(0)
		time.Sleep(interval)
		check(0, interval)
		// The wake left from the burst finds nothing at 2*interval.
		time.Sleep(interval)
		check(0, interval)
		update()
		check(0, interval, 2*interval)
		update()
		synctest.Wait() // the loop waits out the interval
		p.Stop()
		check(0, interval, 2*interval)
	})
}
