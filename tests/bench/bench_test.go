package bench_test

import (
	"context"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/internal/testruntime"
	"github.com/toolscript/toolscript/tests/bench"
)

// refillPause is how long the benchmarks of the wasm build wait, outside the
// timer, after each execution: long enough for the runtime to close the used
// instance and put a fresh one in its pool (about half a millisecond), so
// that every timed execution finds a ready instance, as in a warm process.
const refillPause = 3 * time.Millisecond

// shared is the package's Runtime, with a pool of ready instances as a
// long-running toolscript process keeps.
var shared = testruntime.NewShared(luau.Config{PoolSize: 2})

func pooledRuntime(tb testing.TB) *luau.Runtime {
	tb.Helper()
	return shared.Get(tb)
}

func TestMain(m *testing.M) {
	code := m.Run()
	shared.Close()
	os.Exit(code)
}

// runWasm executes a script and returns its canonical checksum.
func runWasm(tb testing.TB, rt *luau.Runtime, source []byte, args ...string) string {
	tb.Helper()
	res := rt.Execute(context.Background(), luau.Script{Source: source, Args: args})
	if res.Error != nil {
		tb.Fatalf("wasm: %v", res.Error)
	}
	sum, err := bench.CanonicalJSON(res.Value)
	if err != nil {
		tb.Fatalf("wasm: %v", err)
	}
	return sum
}

// TestChecksumsAgree runs every benchmark script, shrunk by its "small"
// argument, on the wasm build and on gopher-lua and checks that both compute
// the same checksum. (cmd/compare checks the full-size runs of every engine.)
func TestChecksumsAgree(t *testing.T) {
	rt := pooledRuntime(t)
	for _, s := range bench.Scripts() {
		t.Run(s.Name, func(t *testing.T) {
			wasm := runWasm(t, rt, s.Source, "small")
			gopher, err := bench.RunGopherLua(s.Source, "small")
			if err != nil {
				t.Fatalf("gopher-lua: %v", err)
			}
			if wasm != gopher {
				t.Errorf("checksums differ: wasm %s, gopher-lua %s", wasm, gopher)
			}
		})
	}
}

// BenchmarkScript runs each script on the wasm build (through
// luau.Runtime.Execute, each execution in a fresh pooled instance) and on
// gopher-lua (each run in a fresh lua.LState). Select one engine with
// -bench 'Script/.*/wasm'.
func BenchmarkScript(b *testing.B) {
	for _, s := range bench.Scripts() {
		b.Run(s.Name+"/wasm", func(b *testing.B) {
			rt := pooledRuntime(b)
			for b.Loop() {
				runWasm(b, rt, s.Source)
				b.StopTimer()
				time.Sleep(refillPause)
				b.StartTimer()
			}
		})
		b.Run(s.Name+"/gopher-lua", func(b *testing.B) {
			for b.Loop() {
				if _, err := bench.RunGopherLua(s.Source); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			runtime.GC() // gopher-lua's garbage should not bill the next benchmark
		})
	}
}

// BenchmarkExecuteReturn1 measures the latency of one whole isolated
// execution of `return 1` through the Go API in a warm process: the runtime
// keeps a pool of ready instances, and each timed execution is followed by
// an untimed pause in which the pool refills. It reports latency, not
// throughput; median-µs is the median over the iterations.
func BenchmarkExecuteReturn1(b *testing.B) {
	rt := pooledRuntime(b)
	ctx := context.Background()
	script := luau.Script{Source: []byte("return 1")}
	time.Sleep(20 * time.Millisecond) // the pool fills
	var samples []time.Duration
	for b.Loop() {
		start := time.Now()
		res := rt.Execute(ctx, script)
		elapsed := time.Since(start)
		if res.Error != nil || string(res.Value) != "1" {
			b.Fatalf("return 1: value %s, error %v", res.Value, res.Error)
		}
		samples = append(samples, elapsed)
		b.StopTimer()
		time.Sleep(refillPause)
		b.StartTimer()
	}
	slices.Sort(samples)
	b.ReportMetric(float64(samples[len(samples)/2].Nanoseconds())/1e3, "median-µs")
}
