package luau

import (
	"context"
	"testing"
)

// tableModes are the two ways an instance's function table can be
// filled, which the benchmarks compare in one run: on demand (the module
// as built, what runtimes do) and at instantiation (wasmrewrite.EagerTable:
// the module as clang links it asks that).
var tableModes = []struct {
	name  string
	eager bool
}{{"lazy-table", false}, {"eager-table", true}}

// eachTableMode runs bench once per table mode, as a sub-benchmark, on a
// runtime of that mode.
func eachTableMode(b *testing.B, bench func(b *testing.B, rt *Runtime)) {
	for _, mode := range tableModes {
		b.Run(mode.name, func(b *testing.B) {
			ctx := context.Background()
			rt, err := New(ctx, Config{eagerTable: mode.eager})
			if err != nil {
				b.Fatal(err)
			}
			defer rt.Close(ctx)
			bench(b, rt)
		})
	}
}

// BenchmarkNewInstance measures creating a fresh instance with its Luau
// state: the work the pool does ahead of executions.
func BenchmarkNewInstance(b *testing.B) {
	eachTableMode(b, func(b *testing.B, rt *Runtime) {
		ctx := context.Background()
		for b.Loop() {
			inst, err := rt.newInstance(ctx)
			if err != nil {
				b.Fatal(err)
			}
			inst.close()
		}
	})
}

// BenchmarkInstanceAndScript measures making an instance and running a
// script of some size on it, which calls many of the functions in the
// table (the compiler's, the libraries'): what the lazy table saves at
// instantiation against what filling entries during the execution costs.
func BenchmarkInstanceAndScript(b *testing.B) {
	script := Script{Source: []byte(`
local Point = {}
Point.__index = Point
function Point.new(x, y) return setmetatable({x = x, y = y}, Point) end
function Point:len() return math.sqrt(self.x * self.x + self.y * self.y) end
local parts, total = {}, 0
for i = 1, 20 do
  local p = Point.new(i, i % 7)
  total += p:len()
  table.insert(parts, string.format("%d:%s", i, tostring(p.y)))
end
local ok, err = pcall(function() error({code = 1}) end)
local words = {}
for w in string.gmatch(table.concat(parts, " "), "%d+") do words[#words + 1] = tonumber(w) end
table.sort(words, function(a, b) return a > b end)
return {total = math.floor(total), n = #words, ok = ok, code = err.code, s = string.rep("x", 3):upper()}`)}
	eachTableMode(b, func(b *testing.B, rt *Runtime) {
		ctx := context.Background()
		for b.Loop() {
			if res := rt.Execute(ctx, script); res.Error != nil {
				b.Fatal(res.Error)
			}
		}
	})
}

// BenchmarkExecuteReady measures an execution of `return 1` on an instance
// that is ready, as the pool provides in a warm process.
func BenchmarkExecuteReady(b *testing.B) {
	eachTableMode(b, func(b *testing.B, rt *Runtime) {
		ctx := context.Background()
		// Filled by hand, outside the timer. The channel has room for
		// the background refill after each execution as well, which is
		// drained.
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
	})
}

// BenchmarkLoadModule measures what New does to the module's bytes before
// compiling them, once in every process: finding that the embedded module
// fills its function table on demand already, and lifting out its data
// segments (where instances start from a template).
func BenchmarkLoadModule(b *testing.B) {
	for b.Loop() {
		var r Runtime
		if _, err := r.loadModule(Config{}); err != nil {
			b.Fatal(err)
		}
	}
}
