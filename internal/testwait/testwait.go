// Package testwait owns how tests of several packages wait: a context
// bounded by a watchdog, a condition a channel announces, and a condition
// no channel reports (polled). A watchdog only stops a test that would
// otherwise hang; it is never what a test asserts.
package testwait

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// Watchdog bounds every wait here: long enough that only a hang reaches
// it on a loaded machine.
const Watchdog = 2 * time.Minute

// pollEvery is how often Until re-checks its condition.
const pollEvery = 10 * time.Millisecond

// Context returns a context that ends when the test does or after the
// watchdog.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), Watchdog)
	t.Cleanup(cancel)
	return ctx
}

// Until returns once cond holds, re-checking it every few milliseconds:
// for state no channel reports (a count a server keeps, a file another
// process writes). It fails the test with what after the watchdog.
func Until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if cond() {
		return
	}
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	watchdog := time.NewTimer(Watchdog)
	defer watchdog.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-watchdog.C:
			t.Fatalf("never: %s", what)
		}
	}
}

// OnChange returns once cond holds, re-checking it each time the channel
// changed returns is closed: for state whose owner announces its changes
// (changed is called before each check, so no change is missed). It fails
// the test with what when the test's context ends.
func OnChange(t testing.TB, what string, changed func() <-chan struct{}, cond func() bool) {
	t.Helper()
	for {
		ch := changed()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-t.Context().Done():
			t.Fatalf("never: %s", what)
		}
	}
}

// Waited is what announces its waiters: limit.Bytes.
type Waited interface {
	Changed() <-chan struct{}
	Waiters() int
}

// Waiters returns once w has n waiters.
func Waiters(t testing.TB, w Waited, n int) {
	t.Helper()
	OnChange(t, fmt.Sprintf("%d waiters", n), w.Changed, func() bool { return w.Waiters() == n })
}
