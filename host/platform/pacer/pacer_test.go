package pacer

import (
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestRun: the first update is flushed at once; a burst of updates during
// the interval is flushed once, when the interval is over; a flush that
// found nothing to do starts no interval; a stop during a wait ends Run
// without a flush.
func TestRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval = 100 * time.Millisecond
		stop, wake := make(chan struct{}), make(chan struct{}, 1)
		var mu sync.Mutex
		pending := false
		var flushes []time.Duration // when each flush that did something came
		start := time.Now()
		update := func() {
			mu.Lock()
			pending = true
			mu.Unlock()
			select {
			case wake <- struct{}{}:
			default:
			}
		}
		ended := make(chan struct{})
		go func() {
			Run(stop, wake, interval, func() bool {
				mu.Lock()
				defer mu.Unlock()
				if !pending {
					return false
				}
				pending = false
				flushes = append(flushes, time.Since(start))
				return true
			})
			close(ended)
		}()
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
		close(stop)
		synctest.Wait()
		select {
		case <-ended:
		default:
			t.Fatal("Run did not return when stopped during a wait")
		}
		check(0, interval, 2*interval)
	})
}
