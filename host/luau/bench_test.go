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
	rt.pool = make(chan *instance, 1) // filled by hand, outside the timer
	script := Script{Source: []byte("return 1")}
	for b.Loop() {
		b.StopTimer()
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
