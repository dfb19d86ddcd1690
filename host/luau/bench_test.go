package luau

import (
	"context"
	"testing"
)

// BenchmarkNewInstance measures creating a fresh instance with its Luau
// state: the work the pool does ahead of executions.
func BenchmarkNewInstance(b *testing.B) {
	ctx := context.Background()
	rt, err := New(ctx, Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close(ctx)
	for b.Loop() {
		inst, err := rt.newInstance(ctx)
		if err != nil {
			b.Fatal(err)
		}
		inst.close()
	}
}

// BenchmarkExecuteReady measures an execution of `return 1` on an instance
// that is ready, as the pool provides in a warm process.
func BenchmarkExecuteReady(b *testing.B) {
	ctx := context.Background()
	rt, err := New(ctx, Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close(ctx)
	// Filled by hand, outside the timer. The channel has room for the
	// background refill after each execution as well, which is drained.
	rt.pool = make(chan *instance, 2)
	script := Script{Source: []byte("return 1")}
	for b.Loop() {
		b.StopTimer()
		rt.background.Wait()
		for len(rt.pool) > 0 {
			(<-rt.pool).close()
		}
		inst, err := rt.newInstance(ctx)
		if err != nil {
			b.Fatal(err)
		}
		rt.pool <- inst
		b.StartTimer()
		if res := rt.Execute(ctx, script); res.Error != nil {
			b.Fatal(res.Error)
		}
	}
}
