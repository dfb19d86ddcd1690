package typecheck_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolscript/toolscript/host/runtime/typecheck"
)

// TestLoadsOneAtATime: definitions that change while a load runs (an
// upstream server changing its tools, checks given up) start no load of
// their own beside it: superseded definitions are never loaded, a check
// waiting for them is checked against the newest, and the loads that
// ran are the first and the last.
func TestLoadsOneAtATime(t *testing.T) {
	c := newChecker(t, typecheck.Config{})
	var loads atomic.Int32
	firstIn, release := make(chan struct{}), make(chan struct{})
	typecheck.SetBeforeLoad(c, func() {
		if loads.Add(1) == 1 {
			close(firstIn)
			<-release
		}
	})
	version := func(i int) string {
		return fmt.Sprintf("declare sdk: { v%d: () -> number }\n", i)
	}
	const rounds = 6
	results := make(chan error, 2)
	check := func(script string) {
		diags, err := c.Check(context.Background(), script)
		if err == nil && len(diags) > 0 {
			err = fmt.Errorf("%q: %+v", script, diags)
		}
		results <- err
	}
	if err := c.Load([]byte(version(0))); err != nil {
		t.Fatal(err)
	}
	go check(fmt.Sprintf("return sdk.v%d()\n", 0))
	<-firstIn
	given := func() context.Context {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		return ctx
	}
	var waiting sync.WaitGroup
	for i := 1; i < rounds; i++ {
		if err := c.Load([]byte(version(i))); err != nil {
			t.Fatal(err)
		}
		if i == rounds-2 {
			// A check that waits for definitions superseded (once)
			// before they load.
			waiting.Go(func() { check(fmt.Sprintf("return sdk.v%d()\n", rounds-1)) })
			continue
		}
		if _, err := c.Check(given(), "return 1\n"); err == nil {
			t.Fatal("a check whose context ended answered")
		}
	}
	close(release)
	for range 2 {
		if err := <-results; err != nil {
			t.Error(err)
		}
	}
	waiting.Wait()
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := loads.Load(); n != 2 {
		t.Errorf("%d loads for %d definitions changed during the first load, want 2 (the first and the newest)", n, rounds)
	}
}
