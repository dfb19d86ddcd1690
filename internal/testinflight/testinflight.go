// Package testinflight owns how a test counts what is in flight at a fake
// upstream (calls, requests): how many now, and the most at once.
package testinflight

import "sync"

// Gauge counts what is in flight. Its zero value is ready; its methods
// may be called from any goroutine.
type Gauge struct {
	mu        sync.Mutex
	now, peak int
}

// Enter counts one more in flight; the func it returns counts it out.
func (g *Gauge) Enter() (leave func()) {
	g.mu.Lock()
	g.now++
	g.peak = max(g.peak, g.now)
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		g.now--
		g.mu.Unlock()
	}
}

// Now is how many are in flight.
func (g *Gauge) Now() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.now
}

// Peak is the most that were in flight at once.
func (g *Gauge) Peak() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.peak
}
