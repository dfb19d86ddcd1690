package testinflight_test

import (
	"sync"
	"testing"

	"github.com/toolscript/toolscript/internal/testinflight"
)

// TestGauge: entries that overlap count up to their peak, which stays
// once they leave; concurrent entries are all counted.
func TestGauge(t *testing.T) {
	var g testinflight.Gauge
	a, b := g.Enter(), g.Enter()
	a()
	c := g.Enter()
	if g.Now() != 2 || g.Peak() != 2 {
		t.Fatalf("now %d, peak %d; want 2, 2", g.Now(), g.Peak())
	}
	b()
	c()
	if g.Now() != 0 || g.Peak() != 2 {
		t.Fatalf("now %d, peak %d after all left; want 0, 2", g.Now(), g.Peak())
	}
	var wg sync.WaitGroup
	entered, release := make(chan struct{}), make(chan struct{})
	for range 8 {
		wg.Go(func() {
			defer g.Enter()()
			entered <- struct{}{}
			<-release
		})
	}
	for range 8 {
		<-entered
	}
	if g.Now() != 8 || g.Peak() != 8 {
		t.Errorf("now %d, peak %d with 8 in; want 8, 8", g.Now(), g.Peak())
	}
	close(release)
	wg.Wait()
	if g.Now() != 0 {
		t.Errorf("now %d after all left", g.Now())
	}
}
