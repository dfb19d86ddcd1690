package luau_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/host/runtime/result"
	"github.com/toolscript/toolscript/internal/testruntime"
)

// shared is one Runtime for the package's tests: compiling the module is
// the expensive part, and sharing it also proves that executions leave
// nothing behind for the next one.
var shared = testruntime.NewShared(luau.Config{PoolSize: 2})

func TestMain(m *testing.M) {
	code := m.Run()
	shared.Close()
	sdkRuntime.Close()
	os.Exit(code)
}

func run(t testing.TB, source string, limits luau.Limits, args ...string) *result.Result {
	t.Helper()
	return shared.Get(t).Execute(context.Background(), luau.Script{Source: []byte(source), Args: args, Limits: limits})
}

// want describes the expected outcome of a script: either a result (as
// JSON) or an error of a kind whose message contains a fragment.
type want struct {
	result  string
	kind    result.Kind
	message string
	line    int
	logs    []string
}

func check(t *testing.T, res *result.Result, w want) {
	t.Helper()
	if w.kind == "" {
		if res.Error != nil {
			t.Fatalf("unexpected error: %+v", res.Error)
		}
		if got := string(res.Value); got != w.result {
			t.Errorf("result = %s, want %s", got, w.result)
		}
	} else {
		if res.Error == nil {
			t.Fatalf("want %s error, got result %s", w.kind, res.Value)
		}
		if res.Error.Kind != w.kind {
			t.Errorf("kind = %s, want %s (message %q)", res.Error.Kind, w.kind, res.Error.Message)
		}
		if !strings.Contains(res.Error.Message, w.message) {
			t.Errorf("message = %q, want it to contain %q", res.Error.Message, w.message)
		}
		if w.line != 0 && res.Error.Line != w.line {
			t.Errorf("line = %d, want %d", res.Error.Line, w.line)
		}
	}
	if w.logs != nil && strings.Join(res.Logs, "\n") != strings.Join(w.logs, "\n") {
		t.Errorf("logs = %q, want %q", res.Logs, w.logs)
	}
}

// scriptCase is a script run without limits and what it gives.
type scriptCase struct {
	name   string
	source string
	want   want
}

// runCases runs each case as a parallel subtest.
func runCases(t *testing.T, cases []scriptCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			check(t, run(t, c.source, luau.Limits{}), c.want)
		})
	}
}

func TestLanguage(t *testing.T) {
	t.Parallel()
	cases := []scriptCase{
		{"return nothing", `local x = 1`, want{result: "null"}},
		{"return number", `return 1`, want{result: "1"}},
		{"first return value only", `return 1, 2`, want{result: "1"}},
		{"print formats like Luau", `print(42) print(1.5, nil, true) print() print("a", {} ~= nil)`,
			want{result: "null", logs: []string{"42", "1.5\tnil\ttrue", "", "a\ttrue"}}},
		{"print uses __tostring", `print(setmetatable({}, {__tostring = function() return "custom" end}))`,
			want{result: "null", logs: []string{"custom"}}},
		{"string methods", `return ("hello"):upper() .. string.format("%05.1f", 3.14159)`, want{result: `"HELLO003.1"`}},
		{"pcall catches", `local ok, err = pcall(error, "boom", 0) return {ok, err}`, want{result: `[false,"boom"]`}},
		{"pcall success", `return {pcall(function(a) return a * 2 end, 21)}`, want{result: `[true,42]`}},
		{"xpcall handler", `return select(2, xpcall(function() error("inner", 0) end, function(e) return "handled: " .. e end))`,
			want{result: `"handled: inner"`}},
		{"nested pcall", `
			local depth = 0
			local function nest(n)
				if n == 0 then error("bottom", 0) end
				local ok, err = pcall(nest, n - 1)
				depth = depth + 1
				error(err, 0)
			end
			local ok, err = pcall(nest, 50)
			return {ok, err, depth}`, want{result: `[false,"bottom",50]`}},
		{"error objects", `local ok, e = pcall(error, {code = 7}) return e.code`, want{result: "7"}},
		{"error with level adds position", `local ok, e = pcall(function() error("where") end) return e`, want{result: `"script:1: where"`}},
		{"caught errors in a loop", `
			local n = 0
			for i = 1, 10000 do
				if not pcall(error, i) then n = n + 1 end
			end
			return n`, want{result: "10000"}},
		{"coroutines", `
			local co = coroutine.create(function(a)
				local b = coroutine.yield(a + 1)
				return b * 2
			end)
			local _, x = coroutine.resume(co, 1)
			local _, y = coroutine.resume(co, 10)
			return {x, y, coroutine.status(co)}`, want{result: `[2,20,"dead"]`}},
		{"coroutine.wrap generator", `
			local gen = coroutine.wrap(function() for i = 1, 3 do coroutine.yield(i) end end)
			return {gen(), gen(), gen()}`, want{result: `[1,2,3]`}},
		{"error inside coroutine", `
			local co = coroutine.create(function() error("in co", 0) end)
			return {coroutine.resume(co)}`, want{result: `[false,"in co"]`}},
		{"pcall across yield", `
			local co = coroutine.create(function()
				local ok, v = pcall(function() return coroutine.yield(1) + 1 end)
				return v
			end)
			coroutine.resume(co)
			return select(2, coroutine.resume(co, 41))`, want{result: "42"}},
		{"globals per script", `x = 5 return x`, want{result: "5"}},
		{"integer division and compound ops", `local a = 7 a += 1 return a // 3`, want{result: "2"}},
		{"string interpolation", "local n = 3 return `n={n}`", want{result: `"n=3"`}},
		{"buffer library", `local b = buffer.create(4) buffer.writeu32(b, 0, 0xdeadbeef) return buffer.readu8(b, 0)`, want{result: "239"}},
		{"os subset", `return {type(os.time()), type(os.clock()), os.date("!%Y", 0), os.difftime(5, 2)}`, want{result: `["number","number","1970",3]`}},
		{"utf8 and bit32", `return {utf8.char(72, 228), bit32.band(12, 10)}`, want{result: `["Hä",8]`}},
		{"_G and _VERSION", `return {_G ~= nil, _VERSION}`, want{result: `[true,"Luau"]`}},
		{"table.sort with comparator", `local t = {3, 1, 2} table.sort(t, function(a, b) return a > b end) return t`, want{result: `[3,2,1]`}},
	}
	runCases(t, cases)
}

func TestErrors(t *testing.T) {
	t.Parallel()
	var many strings.Builder
	for i := range 300 {
		fmt.Fprintf(&many, "local v%d = math.random()\n", i)
	}
	cases := []scriptCase{
		{"runtime error with line", "local x = 1\n\nerror('boom')", want{kind: result.Runtime, message: "script:3: boom", line: 3}},
		{"index nil", "local t = nil\nreturn t.field", want{kind: result.Runtime, message: "attempt to index nil with 'field'", line: 2}},
		{"arithmetic on nil", "local a\nlocal b = 1\nreturn a + b", want{kind: result.Runtime, message: "attempt to perform arithmetic", line: 3}},
		{"error without position still has a line", "\n\nerror('plain', 0)", want{kind: result.Runtime, message: "plain", line: 3}},
		{"error in nested function", "local function f()\n  error('deep')\nend\nlocal function g() f() end\ng()", want{kind: result.Runtime, message: "script:2: deep", line: 2}},
		{"error object as message", `error({code = 42, why = "bad"})`, want{kind: result.Runtime, message: `{"code":42,"why":"bad"}`, line: 1}},
		{"error object with __tostring", `error(setmetatable({}, {__tostring = function() return "custom error" end}))`, want{kind: result.Runtime, message: "custom error"}},
		{"error with a number", `error(42)`, want{kind: result.Runtime, message: "42"}},
		{"rethrown from pcall", "local ok, e = pcall(error, 'first', 0)\nerror('again: ' .. e, 0)", want{kind: result.Runtime, message: "again: first", line: 2}},
		{"syntax error", "local x = 1\nlocal y = = 2", want{kind: result.Syntax, message: "script:2:", line: 2}},
		{"unclosed block", "if true then\n  print(1)\n", want{kind: result.Syntax, message: "Expected 'end'", line: 3}},
		{"parser limit", "return " + strings.Repeat("(", 2000) + "1" + strings.Repeat(")", 2000), want{kind: result.Syntax, message: "script:1:", line: 1}},
		{"compiler limit", many.String(), want{kind: result.Syntax, message: "Out of local registers"}},
		{"deep recursion", `local function f(n) return 1 + f(n + 1) end return f(1)`, want{kind: result.Runtime, message: "stack overflow"}},
		{"deep pcall recursion is caught", `local function f() return select(2, pcall(f)) end return f()`, want{result: `"C stack overflow"`}},
		{"deep pcall recursion escapes", `local function f() local ok, e = pcall(f) error(e, 0) end f()`, want{kind: result.Runtime, message: "stack overflow"}},
		{"string metatable is read-only", `getmetatable("").__index = {}`, want{kind: result.Runtime, message: "readonly"}},
		{"library tables are read-only", `string.upper = nil`, want{kind: result.Runtime, message: "readonly"}},
		{"function result", `return function() end`, want{kind: result.Runtime, message: "result: cannot convert function"}},
		{"nested function result names the path", `return {items = {1, 2, {handler = print}}}`, want{kind: result.Runtime, message: "result.items[3].handler: cannot convert function"}},
		{"cyclic result", `local t = {} t.self = t return t`, want{kind: result.Runtime, message: "result.self: cannot convert a table that contains itself"}},
		{"thread result", `return coroutine.create(print)`, want{kind: result.Runtime, message: "cannot convert thread"}},
		{"boolean key", `return {[true] = 1}`, want{kind: result.Runtime, message: "result: cannot convert a table key of type boolean"}},
	}
	runCases(t, cases)
}

func TestScriptArguments(t *testing.T) {
	t.Parallel()
	res := run(t, `local a, b = ... return {a, b, select("#", ...)}`, luau.Limits{}, "x", "y\x00z")
	check(t, res, want{result: `["x","y\u0000z",2]`})
	check(t, run(t, `return select("#", ...)`, luau.Limits{}), want{result: "0"})
}

func TestLargeScript(t *testing.T) {
	t.Parallel()
	// Beyond the 64 KiB input buffer the source goes through ts_malloc.
	src := "local s = 0\n" + strings.Repeat("s = s + 1 -- padding padding padding\n", 5000) + "return s"
	check(t, run(t, src, luau.Limits{}, strings.Repeat("x", 1000)), want{result: "5000"})
}

func TestBytecodeIsRefused(t *testing.T) {
	t.Parallel()
	for _, prefix := range []string{"\x1bLua", "\x00\x01", "\x06\x03rest", "\x05abc"} {
		res := run(t, prefix+"return 1", luau.Limits{})
		check(t, res, want{kind: result.Syntax, message: "binary chunks are not accepted"})
	}
}

func TestSandboxGlobals(t *testing.T) {
	t.Parallel()
	absent := []string{
		"require", "package", "load", "loadstring", "loadfile", "dofile", "getfenv", "setfenv",
		"gcinfo", "newproxy", "collectgarbage", "debug", "io", "file",
		"string.dump", "os.execute", "os.exit", "os.getenv", "os.remove", "os.rename", "os.tmpname",
	}
	for _, name := range absent {
		src := fmt.Sprintf("return %s == nil", name)
		if res := run(t, src, luau.Limits{}); res.Error != nil || string(res.Value) != "true" {
			t.Errorf("%s should be absent: %s %v", name, res.Value, res.Error)
		}
	}
	present := []string{
		"assert", "error", "ipairs", "pairs", "next", "pcall", "xpcall", "select", "tonumber", "tostring",
		"type", "typeof", "rawequal", "rawget", "rawset", "rawlen", "getmetatable", "setmetatable", "unpack",
		"string", "table", "math", "utf8", "bit32", "buffer", "coroutine",
		"os.clock", "os.date", "os.difftime", "os.time", "print", "json", "json.encode", "json.decode",
		"json.null", "json.object", "progress",
	}
	for _, name := range present {
		src := fmt.Sprintf("return %s ~= nil", name)
		if res := run(t, src, luau.Limits{}); res.Error != nil || string(res.Value) != "true" {
			t.Errorf("%s should be present: %s %v", name, res.Value, res.Error)
		}
	}
}

func TestNothingLeaksBetweenExecutions(t *testing.T) {
	t.Parallel()
	first := run(t, `leaked = "yes"
		local ok = pcall(rawset, _G, "raw", 2)
		return {leaked, ok}`, luau.Limits{})
	check(t, first, want{result: `["yes",true]`})
	second := run(t, `return {leaked == nil, raw == nil}`, luau.Limits{})
	check(t, second, want{result: `[true,true]`})
}

// _G is the script's own environment: what a script defines is
// in it, what it sets in it is defined, and the libraries stay read-only.
func TestGlobalTableIsTheEnvironment(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ src, result, message string }{
		{src: `x = 1 return _G.x`, result: `1`},
		{src: `_G.y = 2 return y`, result: `2`},
		{src: `return _G._G == _G`, result: `true`},
		{src: `return _G.string == string and _G.print == print`, result: `true`},
		{src: `_G.string.foo = 1`, message: "readonly"},
	} {
		res := run(t, c.src, luau.Limits{})
		if c.message != "" {
			if res.Error == nil || !strings.Contains(res.Error.Message, c.message) {
				t.Errorf("%s: error = %v, want one containing %q", c.src, res.Error, c.message)
			}
			continue
		}
		check(t, res, want{result: c.result})
	}
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	for _, src := range []string{
		`while true do end`,
		`repeat local x = 1 until false`,
		`while true do pcall(function() end) end`,
		`local s = string.rep("a", 30000) while true do string.find(s, ".-.-.-.-b") end`,
		`local co = coroutine.wrap(function() while true do end end) co()`,
	} {
		res := run(t, src, luau.Limits{Timeout: 200 * time.Millisecond})
		check(t, res, want{kind: result.Timeout, message: "time limit of 200ms"})
	}
	// The runtime keeps serving afterwards.
	check(t, run(t, `return "alive"`, luau.Limits{}), want{result: `"alive"`})
}

func TestCancellation(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	res := shared.Get(t).Execute(ctx, luau.Script{Source: []byte(`print("started") while true do end`)})
	check(t, res, want{kind: result.Timeout, message: "cancelled", logs: []string{"started"}})
}

// A goroutine running compiled wasm cannot be preempted by Go. Without the
// shim's periodic host call, `while true do end` and a garbage collection
// elsewhere deadlock the whole process: the stop-the-world waits for the
// looping goroutine, and the timer that would stop it never runs. So: once
// the script is in its loop (its print has been seen), collections
// complete while it still loops, and its timeout still stops it. (A
// deadlock hangs the collection: the watchdog turns that into a failure
// rather than a hung test.)
func TestLoopingScriptDoesNotStallTheProcess(t *testing.T) {
	t.Parallel()
	looping := make(chan struct{})
	done := make(chan *result.Result, 1)
	go func() {
		done <- shared.Get(t).Execute(context.Background(), luau.Script{
			Source: []byte(`print("looping") while true do end`),
			Limits: luau.Limits{Timeout: 4 * time.Second},
			OnLog:  func(string) { close(looping) },
		})
	}()
	<-looping
	collected := make(chan struct{})
	go func() {
		runtime.GC()
		close(collected)
	}()
	select {
	case <-collected:
	case res := <-done:
		// The timeout ended the script before the collection was seen
		// completing: it completed all the same (a deadlock would have
		// kept the script from ending).
		check(t, res, want{kind: result.Timeout})
		return
	case <-time.After(time.Minute):
		t.Fatal("a garbage collection beside a looping script did not complete: the process stalled")
	}
	select {
	case res := <-done:
		check(t, res, want{kind: result.Timeout})
	case <-time.After(time.Minute):
		t.Fatal("the timeout did not stop the looping script")
	}
}

func TestMemoryLimit(t *testing.T) {
	t.Parallel()
	limits := luau.Limits{HeapBytes: 16 << 20, Timeout: 20 * time.Second}
	for _, src := range []string{
		`local t = {} for i = 1, 1e9 do t[i] = i end`,
		`local s = "x" while true do s = s .. s end`,
		`local t = {} for i = 1, 1e9 do t[i] = string.rep("y", 1000) .. i end`,
		`return string.rep("z", 1e9)`,
		`local t = {} for i = 1, 1e9 do t[#t + 1] = {i, i, i} end`,
	} {
		res := run(t, src, limits)
		check(t, res, want{kind: result.Memory, message: "memory limit of 16777216 bytes"})
	}
	// Arguments larger than the heap limit fail cleanly too.
	res := run(t, `return #(...)`, limits, strings.Repeat("a", 20<<20))
	check(t, res, want{kind: result.Memory, message: "memory limit of 16777216 bytes"})

	// Caught by pcall, the script can recover and succeed.
	res = run(t, `local ok, e = pcall(string.rep, "x", 1e9) return {ok, e}`, limits)
	check(t, res, want{result: `[false,"not enough memory"]`})
	check(t, run(t, `return "alive"`, luau.Limits{}), want{result: `"alive"`})
}

// TestGarbageUnderTheMemoryLimit: the collector lets a small heap grow
// further before collecting than Luau's default (toolscript.cpp, gcGoal),
// but never so far that garbage alone takes a script to its memory limit:
// with a quarter of the limit live and far more than the limit in garbage,
// the script still succeeds.
func TestGarbageUnderTheMemoryLimit(t *testing.T) {
	t.Parallel()
	limits := luau.Limits{HeapBytes: 16 << 20, Timeout: 20 * time.Second}
	for _, liveKB := range []int{0, 512, 1 << 10, 2 << 10, 4 << 10} {
		t.Run(fmt.Sprintf("%dKB live", liveKB), func(t *testing.T) {
			src := fmt.Sprintf(`
				local keep = {}
				for i = 1, %d do keep[i] = string.rep("k", 1000) .. i end
				local n = 0
				for i = 1, 5e5 do local garbage = {i, i, i, tostring(i)} n += #garbage end
				return {#keep, n}`, liveKB)
			check(t, run(t, src, limits), want{result: fmt.Sprintf("[%d,2000000]", liveKB)})
		})
	}
}

func TestHeapLimitBeyondTheRuntime(t *testing.T) {
	t.Parallel()
	res := run(t, `return 1`, luau.Limits{HeapBytes: luau.DefaultMaxMemoryBytes})
	check(t, res, want{kind: result.Limit, message: "more than this runtime allows"})
	if got := luau.MaxMemoryFor(1 << 30); got != 1<<30+luau.MemoryOverheadBytes {
		t.Errorf("MaxMemoryFor(1 GiB) = %d", got)
	}
}

func TestLogCaps(t *testing.T) {
	t.Parallel()
	res := run(t, `for i = 1, 100 do print("line " .. i) end error("after logs")`, luau.Limits{MaxLogLines: 10})
	if res.Error == nil || res.Error.Kind != result.Runtime {
		t.Fatalf("error = %+v", res.Error)
	}
	if len(res.Logs) != 11 || res.Logs[9] != "line 10" {
		t.Fatalf("logs = %q", res.Logs)
	}
	if !strings.Contains(res.Logs[10], "90 more log lines") {
		t.Errorf("last log line = %q, want a note of 90 dropped lines", res.Logs[10])
	}

	res = run(t, `for i = 1, 10 do print(string.rep("b", 100)) end`, luau.Limits{MaxLogBytes: 250})
	if len(res.Logs) != 3 || !strings.Contains(res.Logs[2], "8 more log lines (800 bytes)") {
		t.Errorf("logs = %q", res.Logs)
	}
}

func TestResultCap(t *testing.T) {
	t.Parallel()
	res := run(t, `return string.rep("a", 2000)`, luau.Limits{MaxResultBytes: 1000})
	check(t, res, want{kind: result.Limit, message: "too large"})
	res = run(t, `return string.rep("a", 900)`, luau.Limits{MaxResultBytes: 1000})
	if res.Error != nil {
		t.Fatalf("error = %v", res.Error)
	}
}

func TestStreamingLogs(t *testing.T) {
	t.Parallel()
	var seen []string
	res := shared.Get(t).Execute(context.Background(), luau.Script{
		Source: []byte(`print("a") print("b") error("c")`),
		OnLog:  func(line string) { seen = append(seen, line) },
	})
	if strings.Join(seen, ",") != "a,b" || strings.Join(res.Logs, ",") != "a,b" {
		t.Errorf("streamed %q, logs %q", seen, res.Logs)
	}
}

func TestProgress(t *testing.T) {
	t.Parallel()
	type call struct {
		done    float64
		total   *float64
		message string
	}
	var calls []call
	res := shared.Get(t).Execute(context.Background(), luau.Script{
		Source: []byte(`progress(1) progress(2, 10) progress(3, 10, "almost") return true`),
		OnProgress: func(done float64, total *float64, message string) {
			calls = append(calls, call{done, total, message})
		},
	})
	check(t, res, want{result: "true"})
	if len(calls) != 3 || calls[0].total != nil || *calls[1].total != 10 || calls[2].message != "almost" {
		t.Errorf("progress calls = %+v", calls)
	}
	// Without a listener progress is a no-op.
	check(t, run(t, `progress(1, 2, "x") return 1`, luau.Limits{}), want{result: "1"})
}

func TestConcurrentExecutionsDoNotInterfere(t *testing.T) {
	t.Parallel()
	const n = 8
	var wg sync.WaitGroup
	results := make([]*result.Result, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			src := fmt.Sprintf(`
				id = %d
				local sum = 0
				for i = 1, 200000 do sum = sum + i %% 7 end
				print("worker", id)
				if id %% 2 == 0 then error("even " .. id) end
				return {id = id, sum = sum}`, i)
			results[i] = run(t, src, luau.Limits{})
		}()
	}
	wg.Wait()
	for i, res := range results {
		if got := strings.Join(res.Logs, ","); got != fmt.Sprintf("worker\t%d", i) {
			t.Errorf("worker %d logs = %q", i, got)
		}
		if i%2 == 0 {
			check(t, res, want{kind: result.Runtime, message: fmt.Sprintf("even %d", i)})
		} else {
			check(t, res, want{result: fmt.Sprintf(`{"id":%d,"sum":599997}`, i)})
		}
	}
}

func TestManyExecutionsDoNotGrowMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 executions")
	}
	rt := shared.Get(t)
	ctx := context.Background()
	exec := func(i int) {
		res := rt.Execute(ctx, luau.Script{Source: []byte(`local t = {} for i = 1, 100 do t[i] = tostring(i) end
			if ... == "fail" then error("x") end return #t`), Args: []string{[]string{"ok", "fail"}[i%2]}})
		if i%2 == 0 && res.Error != nil {
			t.Fatalf("execution %d: %v", i, res.Error)
		}
	}
	for i := range 500 {
		exec(i)
	}
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before, rssBefore := heap(), residentBytes(t)
	for i := range 10000 {
		exec(i)
	}
	after, rssAfter := heap(), residentBytes(t)
	if after > before+16<<20 {
		t.Errorf("Go heap grew from %d to %d bytes over 10,000 executions", before, after)
	}
	// Instances' linear memories are mapped outside the Go heap: the
	// process's resident size shows whether they are released.
	if rssBefore > 0 && rssAfter > rssBefore+64<<20 {
		t.Errorf("resident memory grew from %d to %d bytes over 10,000 executions", rssBefore, rssAfter)
	}
}

// residentBytes returns the process's resident set size, or 0 where
// /proc is not available.
func residentBytes(t *testing.T) int64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	var size, resident int64
	if _, err := fmt.Sscan(string(data), &size, &resident); err != nil {
		t.Fatalf("parsing /proc/self/statm: %v", err)
	}
	return resident * int64(os.Getpagesize())
}

func TestResultJSONShape(t *testing.T) {
	t.Parallel()
	res := run(t, `print("started") error("boom")`, luau.Limits{})
	var decoded map[string]any
	if err := json.Unmarshal(res.JSON(), &decoded); err != nil {
		t.Fatal(err)
	}
	if decoded["result"] != nil || decoded["files_touched"] == nil || decoded["logs"].([]any)[0] != "started" {
		t.Errorf("result JSON = %s", res.JSON())
	}
	errObj := decoded["error"].(map[string]any)
	if errObj["kind"] != "runtime" || errObj["line"].(float64) != 1 {
		t.Errorf("error = %v", errObj)
	}
}
