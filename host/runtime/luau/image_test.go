package luau_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/internal/testruntime"
)

// The first instance of a Runtime initialises the module; every later one
// is restored from an image of its memory. Scripts must not be able to tell
// them apart, except by what is meant to differ between executions.

// environmentScript describes the environment a script starts in: every
// global and library member with its type.
const environmentScript = `
local names = {}
for k, v in pairs(_G) do table.insert(names, tostring(k) .. ":" .. type(v)) end
for _, lib in ipairs({"string", "table", "math", "os", "coroutine", "utf8", "bit32", "buffer", "json"}) do
	local t = _G[lib]
	if type(t) == "table" then
		for k, v in pairs(t) do table.insert(names, lib .. "." .. tostring(k) .. ":" .. type(v)) end
	end
end
table.sort(names)
return {names = table.concat(names, " "), count = #names}
`

func TestRestoredInstancesMatchTheFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt := ownRuntime(t, 0)
	var first string
	for i := range 5 {
		res := rt.Execute(ctx, luau.Script{Source: []byte(environmentScript)})
		if res.Error != nil {
			t.Fatalf("execution %d: %+v", i, res.Error)
		}
		if i == 0 {
			first = string(res.Value)
			if len(first) < 500 {
				t.Fatalf("the environment looks empty: %s", first)
			}
			continue
		}
		if got := string(res.Value); got != first {
			t.Fatalf("execution %d starts in another environment than the first:\n%s\nfirst:\n%s", i, got, first)
		}
	}
}

func TestEachExecutionHasItsOwnRandomSeed(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for i := range 5 {
		res := run(t, `return {math.random(1, 2^31), math.random(1, 2^31)}`, luau.Limits{})
		if res.Error != nil {
			t.Fatalf("execution %d: %+v", i, res.Error)
		}
		seen[string(res.Value)] = true
	}
	// Five pairs drawn from 2^62 possibilities: equal pairs mean the
	// generator starts from the same state every time.
	if len(seen) < 5 {
		t.Fatalf("math.random gave the same numbers in different executions: %v", seen)
	}
}

func TestClockStartsWithTheExecution(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt := ownRuntime(t, 1)
	// The first execution makes the image; the second runs on an instance
	// restored from it that waited in the pool for a while.
	for i := range 2 {
		if i == 1 {
			// The behaviour under test: the instance waits in the pool.
			time.Sleep(1500 * time.Millisecond)
		}
		res := rt.Execute(ctx, luau.Script{Source: []byte(`
			local t0 = os.clock()
			local x = 0
			for i = 1, 1e5 do x = x + i end
			return {t0, os.clock() - t0}`)})
		if res.Error != nil {
			t.Fatalf("execution %d: %+v", i, res.Error)
		}
		var clock [2]float64
		if err := json.Unmarshal(res.Value, &clock); err != nil {
			t.Fatalf("execution %d: result %s: %v", i, res.Value, err)
		}
		start, elapsed := clock[0], clock[1]
		// os.clock counts the script's own time: not the time the
		// instance spent waiting, and never backwards.
		if start < 0 || start >= 1 {
			t.Errorf("execution %d: os.clock() at the start = %v, want it in [0, 1)", i, start)
		}
		if elapsed < 0 {
			t.Errorf("execution %d: os.clock() went back by %v", i, -elapsed)
		}
	}
}

// The image is taken before the first instance runs its script: nothing
// that script does reaches the instances restored from it.
func TestTheFirstScriptLeavesNothingInTheImage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt := ownRuntime(t, 0)
	first := rt.Execute(ctx, luau.Script{Source: []byte(`
		leaked = "global"
		local big = string.rep("x", 1e6)
		local ok = pcall(function() string.leaked = "library" end)
		return {leaked, #big, ok}`)})
	if first.Error != nil || string(first.Value) != `["global",1000000,false]` {
		t.Fatalf("first execution: %s %+v", first.Value, first.Error)
	}
	for i := range 3 {
		res := rt.Execute(ctx, luau.Script{Source: []byte(`return {leaked == nil, string.leaked == nil}`)})
		if res.Error != nil || string(res.Value) != `[true,true]` {
			t.Fatalf("execution %d after the first: %s %+v", i+2, res.Value, res.Error)
		}
	}
}

// ownRuntime returns a Runtime of the test's own, whose first execution
// makes the image, closed when the test ends.
func ownRuntime(t *testing.T, poolSize int) *luau.Runtime {
	t.Helper()
	return testruntime.New(t, luau.Config{CacheDir: t.TempDir(), PoolSize: poolSize})
}
