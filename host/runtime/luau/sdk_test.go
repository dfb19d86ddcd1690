package luau_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/contract/sdkcall"
	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/host/runtime/result"
	"github.com/toolscript/toolscript/internal/testinflight"
	"github.com/toolscript/toolscript/internal/testruntime"
)

// The guest side of the sdk, against a caller that answers from a table:
// what the script passes reaches the caller as one JSON array, and each
// kind of response becomes the data and response docs/sdk.md describes.

var sdkManifest = &sdkcall.Manifest{APIs: []sdkcall.API{
	{Name: "pets", Functions: []sdkcall.Function{
		{Name: "list_pets", ID: 1, Flat: true},
		{Name: "get_pet", ID: 2, Flat: true},
		{Name: "shared", ID: 3},
	}},
	{Name: "store", Functions: []sdkcall.Function{
		{Name: "shared", ID: 4},
		{Name: "slow", ID: 5, Flat: true},
	}},
}}

// tableCaller answers each id with a fixed response and records the
// arguments it was given.
type tableCaller struct {
	mu        sync.Mutex
	responses map[uint32]*sdkcall.Response
	args      []string
}

func (c *tableCaller) Call(ctx context.Context, id uint32, args json.RawMessage) *sdkcall.Response {
	c.mu.Lock()
	c.args = append(c.args, string(args))
	c.mu.Unlock()
	if id == 5 { // slow: until the execution ends
		<-ctx.Done()
		return &sdkcall.Response{Fail: sdkcall.Upstream, Message: "sdk.slow: " + ctx.Err().Error()}
	}
	return c.responses[id]
}

// sdkRuntime is the Runtime the sdk tests share: its module knows
// sdkManifest's functions.
var sdkRuntime = testruntime.NewShared(luau.Config{SDK: sdkManifest, PoolSize: 1})

func runSDK(t *testing.T, src string, caller sdkcall.Caller, limits luau.Limits) *result.Result {
	t.Helper()
	return sdkRuntime.Get(t).Execute(context.Background(), luau.Script{Source: []byte(src), SDK: caller, Limits: limits})
}

func TestSDKCalls(t *testing.T) {
	t.Parallel()
	caller := &tableCaller{responses: map[uint32]*sdkcall.Response{
		1: {Status: 200, Headers: map[string]string{"content-type": "application/json", "link": `<p2>; rel="next"`},
			JSON: json.RawMessage(`[{"id":1,"name":"Rex","tag":null},{"id":3000000000,"name":"Tom"}]`)},
		2: {Fail: sdkcall.Upstream, Status: 404, Message: "sdk.get_pet: HTTP 404 Not Found: no such pet",
			Headers: map[string]string{"content-type": "application/json"}, JSON: json.RawMessage(`{"error":"no such pet"}`)},
		3: {Status: 204},
		4: {Status: 200, Text: []byte("bin\x00\xff")},
	}}
	cases := []struct {
		name, src string
		want      want
		args      string // what the caller saw, last call
	}{
		{name: "data and response", src: `local pets, resp = sdk.list_pets({limit = 5})
			return {n = #pets, big = pets[2].id, null = pets[1].tag == json.null, status = resp.status, link = resp.headers.link}`,
			want: want{result: `{"big":3000000000,"link":"<p2>; rel=\"next\"","n":2,"null":true,"status":200}`}, args: `[{"limit":5}]`},
		// A caller that takes only the data, or nothing, gets no response
		// table (and the host sends no headers); one that takes more gets
		// both results.
		{name: "the data alone", src: `local pets = sdk.list_pets({limit = 5}) return {#pets, sdk.list_pets()[2].name}`,
			want: want{result: `[2,"Tom"]`}},
		{name: "as many results as the caller takes", src: `local all = {sdk.list_pets()}
			return {select("#", sdk.list_pets()), #all, all[2].headers.link, (select(2, sdk.list_pets())).status}`,
			want: want{result: `[2,2,"<p2>; rel=\"next\"",200]`}},
		{name: "a call as a statement", src: `sdk.list_pets({limit = 1}) return true`, want: want{result: "true"}, args: `[{"limit":1}]`},
		{name: "an error raised where only the data is taken has its headers", src: `local ok, err = pcall(function()
				local pet = sdk.get_pet({pet_id = 9})
				return pet
			end)
			return {ok, err.status, err.headers["content-type"], err.body.error}`,
			want: want{result: `[false,404,"application/json","no such pet"]`}},
		{name: "namespaced and flat are one function", src: `return sdk.pets.list_pets == sdk.list_pets`, want: want{result: "true"}},
		{name: "a name two APIs share is not flat", src: `return {sdk.shared == nil, sdk.pets.shared ~= sdk.store.shared}`, want: want{result: "[true,true]"}},
		{name: "no content", src: `local d, r = sdk.pets.shared() return {d == nil, r.status}`, want: want{result: "[true,204]"}, args: `[]`},
		{name: "text bodies keep their bytes", src: `local d = sdk.store.shared(nil, {x = 1}) return {#d, d:byte(4), d:byte(5)}`,
			want: want{result: "[5,0,255]"}, args: `[null,{"x":1}]`},
		{name: "trailing nils are dropped", src: `sdk.pets.shared({a = 1}, nil, nil) return true`, want: want{result: "true"}, args: `[{"a":1}]`},
		{name: "an HTTP error is a table", src: `local ok, err = pcall(sdk.get_pet, {pet_id = 9})
			return {ok, err.status, err.body.error, err.headers["content-type"], tostring(err), err.message == tostring(err)}`,
			want: want{result: `[false,404,"no such pet","application/json","sdk.get_pet: HTTP 404 Not Found: no such pet",true]`}},
		{name: "uncaught, it is kind upstream", src: "local x = 1\nsdk.get_pet({pet_id = 9})",
			want: want{kind: result.Upstream, message: "sdk.get_pet: HTTP 404 Not Found: no such pet", line: 2}},
		{name: "sdk is read-only", src: `sdk.x = 1`, want: want{kind: result.Runtime, message: "readonly"}},
		{name: "an API table is read-only", src: `sdk.pets.list_pets = print`, want: want{kind: result.Runtime, message: "readonly"}},
		{name: "arguments that cannot be converted", src: `sdk.list_pets({f = print})`,
			want: want{kind: result.Runtime, message: "arguments[1].f: cannot convert function"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := runSDK(t, c.src, caller, luau.Limits{})
			check(t, res, c.want)
			if c.args != "" {
				caller.mu.Lock()
				last := caller.args[len(caller.args)-1]
				caller.mu.Unlock()
				if last != c.args {
					t.Errorf("the caller got %s, want %s", last, c.args)
				}
			}
		})
	}
}

func TestSDKFailures(t *testing.T) {
	t.Parallel()
	caller := &tableCaller{responses: map[uint32]*sdkcall.Response{
		1: {Fail: sdkcall.Argument, Message: "sdk.list_pets: unknown parameter 'limt' (did you mean 'limit'?)"},
		2: {Fail: sdkcall.Limit, Message: "sdk: more than 100 upstream calls in one execution ([sdk] max_calls, --max-calls)"},
		3: {Fail: sdkcall.Upstream, Message: "sdk.pets.shared: connection refused"},
	}}
	for _, c := range []struct {
		name, src string
		want      want
	}{
		{"argument errors are plain errors with a line", "\nsdk.list_pets({limt = 1})",
			want{kind: result.Runtime, message: "script:2: sdk.list_pets: unknown parameter 'limt' (did you mean 'limit'?)", line: 2}},
		{"argument errors can be caught", `local ok, e = pcall(sdk.list_pets) return {ok, type(e)}`, want{result: `[false,"string"]`}},
		{"the call budget is kind limit", `sdk.get_pet()`, want{kind: result.Limit, message: "max_calls"}},
		{"a transport failure has status 0", `local ok, e = pcall(sdk.pets.shared) return {e.status, e.message}`,
			want{result: `[0,"sdk.pets.shared: connection refused"]`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			check(t, runSDK(t, c.src, caller, luau.Limits{}), c.want)
		})
	}
}

// A call in flight when the execution times out is abandoned at once: the
// caller's context ends, and the execution reports kind timeout.
func TestSDKCallEndsWithTheExecution(t *testing.T) {
	t.Parallel()
	// sdk.slow returns only when its context ends: were the call not
	// abandoned at the deadline, the watchdog would fail the test.
	res := withinAMinute(t, func() *result.Result {
		return runSDK(t, `print("calling") sdk.slow()`, &tableCaller{}, luau.Limits{Timeout: 300 * time.Millisecond})
	})
	check(t, res, want{kind: result.Timeout, message: "time limit", logs: []string{"calling"}})
}

// withinAMinute runs an execution that must end at its own (far shorter)
// timeout, and fails the test rather than hang when it does not.
func withinAMinute(t *testing.T, execute func() *result.Result) *result.Result {
	t.Helper()
	done := make(chan *result.Result, 1)
	go func() { done <- execute() }()
	select {
	case res := <-done:
		return res
	case <-time.After(time.Minute):
		t.Fatal("the execution ran a minute past its timeout")
		return nil
	}
}

// Without a caller every function fails clearly; without a manifest sdk
// is an empty table.
func TestSDKWithoutCallerOrManifest(t *testing.T) {
	t.Parallel()
	res := runSDK(t, `sdk.list_pets()`, nil, luau.Limits{})
	check(t, res, want{kind: result.Runtime, message: "no API or MCP server is configured"})
	check(t, run(t, `local n = 0 for _ in pairs(sdk) do n += 1 end return {type(sdk), n}`, luau.Limits{}), want{result: `["table",0]`})
	if res := run(t, `sdk.x = 1`, luau.Limits{}); res.Error == nil || !strings.Contains(res.Error.Message, "readonly") {
		t.Errorf("writing to sdk: %+v", res.Error)
	}
}

// sleepCaller answers after a delay, with its arguments as the data; an
// argument {fail = true} fails the call as an HTTP 500 would.
type sleepCaller struct {
	delay    time.Duration
	inFlight testinflight.Gauge
}

func (c *sleepCaller) Call(ctx context.Context, id uint32, args json.RawMessage) *sdkcall.Response {
	defer c.inFlight.Enter()()
	select {
	case <-time.After(c.delay):
	case <-ctx.Done():
		return &sdkcall.Response{Fail: sdkcall.Upstream, Message: "sdk: " + ctx.Err().Error()}
	}
	if strings.Contains(string(args), `"fail":true`) {
		return &sdkcall.Response{Fail: sdkcall.Upstream, Status: 500, Message: "sdk.list_pets: HTTP 500 Internal Server Error: " + string(args)}
	}
	return &sdkcall.Response{Status: 200, JSON: args}
}

func TestParallel(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, src string
		want      want
		maxPeak   int
	}{
		{name: "results in order", src: `
			local fns = {}
			for i = 1, 16 do fns[i] = function() local d = sdk.list_pets({i = i}) return d[1].i end end
			return parallel(fns, 8)`,
			want: want{result: "[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]"}, maxPeak: 8},
		{name: "the default limit is max_parallel", src: `
			local fns = {}
			for i = 1, 12 do fns[i] = function() return sdk.list_pets({i})[1][1] end end
			return #parallel(fns)`, want: want{result: "12"}, maxPeak: 3},
		{name: "the first error in list order", src: `
			local ok, err = pcall(parallel, {
				function() return sdk.list_pets({n = 1}) end,
				function() sdk.list_pets({n = 2, fail = true}) end,
				function() error("third") end,
				function() return 4 end,
			})
			return {ok, err.status, err.message}`,
			want: want{result: `[false,500,"sdk.list_pets: HTTP 500 Internal Server Error: [{\"fail\":true,\"n\":2}]"]`}},
		{name: "an error in the 3rd function is the one raised", src: `
			local fns = {}
			for i = 1, 5 do fns[i] = function() local d = sdk.list_pets({n = i, fail = i == 3}) return d[1].n end end
			local ok, err = pcall(parallel, fns)
			return {ok, err.status, err.message}`,
			want: want{result: `[false,500,"sdk.list_pets: HTTP 500 Internal Server Error: [{\"fail\":true,\"n\":3}]"]`}},
		{name: "a pcall inside a function catches its own error", src: `
			return parallel({
				function() local ok, e = pcall(sdk.list_pets, {fail = true}) return {ok, e.status} end,
				function() return sdk.list_pets({x = 2})[1].x end,
			})`, want: want{result: `[[false,500],2]`}},
		{name: "functions that make no calls", src: `return parallel({function() return 1 end, function() return "b" end})`,
			want: want{result: `[1,"b"]`}},
		{name: "nested parallel", src: `
			return parallel({
				function() return parallel({function() return sdk.list_pets({1})[1][1] end, function() return 2 end}) end,
				function() return sdk.list_pets({3})[1][1] end,
			})`, want: want{result: `[[1,2],3]`}},
		{name: "several calls in one function, in order", src: `
			return parallel({
				function() local a = sdk.list_pets({1})[1][1] local b = sdk.list_pets({2})[1][1] return a * 10 + b end,
				function() print("second") return 0 end,
			})`, want: want{result: `[12,0]`, logs: []string{"second"}}},
		{name: "not a function", src: `parallel({1})`, want: want{kind: result.Runtime, message: "parallel: item 1 is a number, not a function"}},
		{name: "a coroutine of the script's own makes its calls one at a time", src: `
			return parallel({function()
				local co = coroutine.wrap(function() local d = sdk.list_pets({7}) coroutine.yield(d[1][1]) return 8 end)
				return co()
			end})`, want: want{result: `[7]`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			caller := &sleepCaller{delay: 20 * time.Millisecond}
			res := sdkRuntime.Get(t).Execute(context.Background(), luau.Script{Source: []byte(c.src), SDK: caller, MaxParallel: 3 + 5*boolInt(c.maxPeak == 8)})
			check(t, res, c.want)
			if peak := caller.inFlight.Peak(); c.maxPeak > 0 && (peak > c.maxPeak || peak < 2) {
				t.Errorf("%d calls in flight at once, want 2 to %d", peak, c.maxPeak)
			}
		})
	}
}

// TestParallelMemoryErrors: a memory error inside one of parallel's
// functions is that function's own, as when the functions run one after
// the other: its pcall catches it, the memory is there again afterwards
// (the limit held), and the other functions go on; uncaught, it is kind
// memory. The first case is a response larger than the memory limit, which
// parallel used to take into the caller's stack, where the error escaped
// the function's pcall and parallel raised it.
func TestParallelMemoryErrors(t *testing.T) {
	t.Parallel()
	const heap = 4 << 20
	other := `function() return sdk.list_pets({k = 7})[1].k end`
	for _, c := range []struct {
		name, fn string
		want     want
	}{
		{"a response past the limit, caught", `function()
				local ok, e = pcall(sdk.list_pets, {big = 6 * 2^20})
				return {ok, tostring(e), #string.rep("y", 2^20)}
			end`, want{result: `[[false,"not enough memory",1048576],7]`}},
		{"responses filling the memory, caught", `function()
				local ok, e = pcall(function() local t = {} for i = 1, 1e9 do t[i] = sdk.list_pets({k = i, big = 2^16}) end end)
				return {ok, tostring(e), #string.rep("y", 2^20)}
			end`, want{result: `[[false,"not enough memory",1048576],7]`}},
		{"strings filling the memory, caught", `function()
				local ok, e = pcall(function() local t = {} for i = 1, 1e9 do t[i] = string.rep("x", 1000) .. i end end)
				return {ok, tostring(e), #string.rep("y", 2^20)}
			end`, want{result: `[[false,"not enough memory",1048576],7]`}},
		{"values around the pcall are kept", `function()
				local a = {1}
				local fill = function() local t = {} for i = 1, 1e9 do t[i] = sdk.list_pets({k = i, big = 2^16}) end end
				return {a[1], tostring(select(2, pcall(fill))), a[1] + 1, #string.rep("y", 2^20), a[1] + 2}
			end`, want{result: `[[1,"not enough memory",2,1048576,3],7]`}},
		{"a response past the limit, uncaught", `function() return #sdk.list_pets({big = 6 * 2^20}) end`,
			want{kind: result.Memory, message: "exceeded its memory limit of 4194304 bytes"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			prelude := "local f, g = " + c.fn + ", " + other + "\n"
			for _, src := range []string{
				prelude + "return parallel({f, g})",
				prelude + "local r = {} r[1] = f() r[2] = g() return r",
			} {
				res := sdkRuntime.Get(t).Execute(context.Background(), luau.Script{Source: []byte(src), SDK: echoCaller{}, Limits: luau.Limits{HeapBytes: heap}})
				check(t, res, c.want)
			}
		})
	}
}

// TestParallelUncaughtMemoryErrorFreesMemory: a function of parallel that
// dies of a memory error it does not catch leaves garbage, which is
// collected at once, so that a function still running has the memory it
// would have had one after the other (parallel raises the error once they
// are done).
func TestParallelUncaughtMemoryErrorFreesMemory(t *testing.T) {
	t.Parallel()
	src := `local got
		local waits = function() sdk.list_pets({k = 1, ms = 20}) got = #string.rep("y", 2^20) end
		local fills = function() local t = {} for i = 1, 1e9 do t[i] = string.rep("x", 1000) .. i end end
		local ok, e = pcall(parallel, {waits, fills})
		return {ok, tostring(e), got}`
	res := sdkRuntime.Get(t).Execute(context.Background(), luau.Script{Source: []byte(src), SDK: echoCaller{}, Limits: luau.Limits{HeapBytes: 4 << 20}})
	check(t, res, want{result: `[false,"not enough memory",1048576]`})
}

// TestParallelLimit: parallel's limit is nil (max_parallel) or a whole
// number >= 1, of which at most max_parallel is used; anything else is an
// error naming parallel, the rule and what it got.
func TestParallelLimit(t *testing.T) {
	t.Parallel()
	const maxParallel = 3
	rule := "parallel: limit must be nil or a whole number >= 1, got "
	for _, c := range []struct {
		limit   string
		maxPeak int    // at most this many calls at once
		err     string // or this error
	}{
		{limit: "nil", maxPeak: maxParallel},
		{limit: "1", maxPeak: 1},
		{limit: "2", maxPeak: 2},
		{limit: "4 / 2", maxPeak: 2},
		{limit: "100", maxPeak: maxParallel},
		{limit: "1e300", maxPeak: maxParallel},
		{limit: "0", err: rule + "0"},
		{limit: "-1", err: rule + "-1"},
		{limit: "0.5", err: rule + "0.5"},
		{limit: "1.5", err: rule + "1.5"},
		{limit: "0 / 0", err: rule},
		{limit: "math.huge", err: rule + "inf"},
		{limit: "-math.huge", err: rule + "-inf"},
		{limit: `"2"`, err: rule + "string"},
		{limit: "{}", err: rule + "table"},
		{limit: "true", err: rule + "boolean"},
	} {
		t.Run(c.limit, func(t *testing.T) {
			t.Parallel()
			caller := &sleepCaller{delay: 10 * time.Millisecond}
			src := `local fns = {} for i = 1, 6 do fns[i] = function() return sdk.list_pets({i})[1][1] end end
				return parallel(fns, ` + c.limit + `)`
			res := sdkRuntime.Get(t).Execute(context.Background(), luau.Script{Source: []byte(src), SDK: caller, MaxParallel: maxParallel})
			if c.err != "" {
				check(t, res, want{kind: result.Runtime, message: c.err})
				if c.limit == "0 / 0" && !strings.Contains(res.Error.Message, "nan") {
					t.Errorf("message = %q, want it to show nan", res.Error.Message)
				}
				if caller.inFlight.Peak() != 0 {
					t.Errorf("calls were made")
				}
				return
			}
			check(t, res, want{result: "[1,2,3,4,5,6]"})
			if peak := caller.inFlight.Peak(); peak > c.maxPeak {
				t.Errorf("%d calls in flight at once, want at most %d", peak, c.maxPeak)
			}
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A timeout during parallel stops everything: every request in flight is
// cancelled, and logs are kept.
func TestParallelTimeout(t *testing.T) {
	t.Parallel()
	// Each call waits an hour unless cancelled: the watchdog fails the
	// test if the timeout does not cancel them.
	caller := &sleepCaller{delay: time.Hour}
	res := withinAMinute(t, func() *result.Result {
		return sdkRuntime.Get(t).Execute(context.Background(), luau.Script{
			Source: []byte(`print("before") local fns = {} for i = 1, 8 do fns[i] = function() return sdk.list_pets({i}) end end return parallel(fns)`),
			SDK:    caller, Limits: luau.Limits{Timeout: 300 * time.Millisecond},
		})
	})
	check(t, res, want{kind: result.Timeout, logs: []string{"before"}})
	if n := caller.inFlight.Now(); n != 0 {
		t.Errorf("%d calls still in flight after the execution", n)
	}
}

// echoCaller answers with its arguments after a delay the arguments give
// ({ms = n}); {fail = true} fails the call as an HTTP 500; {big = n}
// answers with a text of n bytes instead (the arguments, then padding).
type echoCaller struct{}

func (echoCaller) Call(ctx context.Context, _ uint32, args json.RawMessage) *sdkcall.Response {
	var a []struct {
		MS   int  `json:"ms"`
		Fail bool `json:"fail"`
		K    int  `json:"k"`
		Big  int  `json:"big"`
	}
	_ = json.Unmarshal(args, &a)
	if len(a) > 0 && a[0].MS > 0 {
		select {
		case <-time.After(time.Duration(a[0].MS) * time.Millisecond):
		case <-ctx.Done():
		}
	}
	if len(a) > 0 && a[0].Fail {
		return &sdkcall.Response{Fail: sdkcall.Upstream, Status: 500, Message: fmt.Sprintf("sdk.list_pets: HTTP 500: k=%d", a[0].K)}
	}
	if len(a) > 0 && a[0].Big > 0 { // the arguments, then padding: each text its own string
		text := append(bytes.Clone(args), bytes.Repeat([]byte{'x'}, max(a[0].Big-len(args), 0))...)
		return &sdkcall.Response{Status: 200, Text: text}
	}
	return &sdkcall.Response{Status: 200, JSON: args}
}

// Random mixes of calls, failing calls, pcalls, errors, memory errors and
// plain returns inside parallel give what the same functions give run one
// after the other: the same results, or the same first error in list
// order. A memory error is a response larger than the memory limit (which
// fails at its first allocation, whatever else the other functions hold)
// or a string.rep past it, inside the function's own pcall or not.
func TestParallelMatchesSequential(t *testing.T) {
	t.Parallel()
	const heap = 4 << 20
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 150 {
		var fns strings.Builder
		n := 1 + rng.IntN(6)
		k := 0
		for range n {
			fns.WriteString("function()\n local acc = {}\n")
			for range rng.IntN(4) {
				k++
				ms, fail := rng.IntN(3), rng.IntN(5) == 0
				arg := fmt.Sprintf("{k = %d, ms = %d, fail = %v}", k, ms, fail)
				switch rng.IntN(7) {
				case 0:
					fmt.Fprintf(&fns, " table.insert(acc, sdk.list_pets(%s)[1].k)\n", arg)
				case 1:
					fmt.Fprintf(&fns, " do local ok, e = pcall(sdk.list_pets, %s) table.insert(acc, ok and e[1].k or e.status) end\n", arg)
				case 2:
					fmt.Fprintf(&fns, " if %d %% 7 == 0 then error('boom %d') end\n", k, k)
				case 3:
					big := fmt.Sprintf("{k = %d, ms = %d, big = %d}", k, ms, heap+heap/2)
					fmt.Fprintf(&fns, " do local ok, e = pcall(sdk.list_pets, %s) table.insert(acc, ok and #e or tostring(e)) end\n", big)
				case 4:
					fmt.Fprintf(&fns, " do local ok, e = pcall(string.rep, 'x', %d) table.insert(acc, ok and #e or tostring(e)) end\n", 2*heap)
				case 5:
					if k%5 == 0 { // uncaught
						fmt.Fprintf(&fns, " sdk.list_pets({k = %d, big = %d})\n", k, 2*heap)
					}
				default:
					fmt.Fprintf(&fns, " table.insert(acc, %d)\n", k)
				}
			}
			fns.WriteString(" return acc\nend,\n")
		}
		prelude := "local fns = {\n" + fns.String() + "}\n"
		par := prelude + "return parallel(fns, " + strconv.Itoa(1+rng.IntN(4)) + ")"
		seq := prelude + `local r, first = {}, nil
			for i, f in ipairs(fns) do local ok, v = pcall(f) if ok then r[i] = v elseif first == nil then first = v end end
			if first ~= nil then error(first, 0) end
			return r`
		limits := luau.Limits{HeapBytes: heap}
		a := sdkRuntime.Get(t).Execute(context.Background(), luau.Script{Source: []byte(par), SDK: echoCaller{}, Limits: limits})
		b := sdkRuntime.Get(t).Execute(context.Background(), luau.Script{Source: []byte(seq), SDK: echoCaller{}, Limits: limits})
		if string(a.Value) != string(b.Value) || (a.Error == nil) != (b.Error == nil) ||
			(a.Error != nil && (a.Error.Message != b.Error.Message || a.Error.Kind != b.Error.Kind)) {
			t.Fatalf("iteration %d:\n%s\nparallel:   %s %+v\nsequential: %s %+v", iter, par, a.Value, a.Error, b.Value, b.Error)
		}
	}
}

func TestSetSDK(t *testing.T) {
	// SetSDK changes the sdk table of the executions that start after it,
	// pooled instances included, and of every one after that.
	t.Parallel()
	rt := testruntime.New(t, luau.Config{SDK: sdkManifest, PoolSize: 2})
	caller := &tableCaller{responses: map[uint32]*sdkcall.Response{
		1: {Status: 200, Text: []byte("one")},
		9: {Status: 200, Text: []byte("nine")},
	}}
	run := func() string {
		t.Helper()
		res := rt.Execute(context.Background(), luau.Script{Source: []byte(
			`return {sdk.list_pets ~= nil, sdk.added ~= nil, sdk.store ~= nil, if sdk.added then (sdk.added()) else (sdk.list_pets())}`), SDK: caller})
		if res.Error != nil {
			t.Fatal(res.Error)
		}
		return string(res.Value)
	}
	if got := run(); got != `[true,false,true,"one"]` {
		t.Fatalf("before: %s", got)
	}
	changed := &sdkcall.Manifest{APIs: []sdkcall.API{{Name: "pets", Functions: []sdkcall.Function{
		{Name: "list_pets", ID: 1, Flat: true}, {Name: "added", ID: 9, Flat: true},
	}}}}
	if err := rt.SetSDK(changed); err != nil {
		t.Fatal(err)
	}
	for i := range 5 { // past the pool's two instances of the old manifest
		if got := run(); got != `[true,true,false,"nine"]` {
			t.Fatalf("execution %d after SetSDK: %s", i, got)
		}
	}
	if err := rt.SetSDK(nil); err != nil {
		t.Fatal(err)
	}
	res := rt.Execute(context.Background(), luau.Script{Source: []byte(`return sdk.list_pets == nil`), SDK: caller})
	if res.Error != nil || string(res.Value) != "true" {
		t.Fatalf("without an sdk: %s %+v", res.Value, res.Error)
	}
}

func TestSetSDKThenStartPool(t *testing.T) {
	// A runtime made without an sdk and a pool gets both later (as serve
	// does, compiling the module while the specs load).
	t.Parallel()
	rt := testruntime.New(t, luau.Config{})
	if err := rt.SetSDK(sdkManifest); err != nil {
		t.Fatal(err)
	}
	rt.StartPool(2)
	rt.StartPool(3) // a second start does nothing
	for i := range 4 {
		res := rt.Execute(context.Background(), luau.Script{Source: []byte(`return sdk.pets.list_pets == sdk.list_pets and sdk.store.slow ~= nil`)})
		if res.Error != nil || string(res.Value) != "true" {
			t.Fatalf("execution %d: %s %+v", i, res.Value, res.Error)
		}
	}
}

// TestSDKResponseSizes: responses small enough for the shim's call buffer
// and larger ones (which go through a buffer the guest allocates), and
// arguments large enough to replace that buffer, all arrive whole, one
// call after the other.
func TestSDKResponseSizes(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("0123456789", 10_000)
	caller := &tableCaller{responses: map[uint32]*sdkcall.Response{
		1: {Status: 200, Headers: map[string]string{"x-big": big[:5000], "x-odd": "a\xffb"}, Text: []byte(big)},
		2: {Status: 200, Headers: map[string]string{"content-type": "application/json"}, JSON: json.RawMessage(`{"id":7}`)},
	}}
	src := `local out = {}
		for round = 1, 3 do
			local text, resp = sdk.list_pets()
			table.insert(out, #text .. " " .. #resp.headers["x-big"] .. " " .. resp.headers["x-odd"])
			local pet = sdk.get_pet({name = string.rep("x", 100000 * (round - 1) + 1)})
			table.insert(out, pet.id)
		end
		return out`
	res := runSDK(t, src, caller, luau.Limits{})
	check(t, res, want{result: `["100000 5000 a` + "\uFFFD" + `b",7,"100000 5000 a` + "\uFFFD" + `b",7,"100000 5000 a` + "\uFFFD" + `b",7]`})
	caller.mu.Lock()
	last := caller.args[len(caller.args)-1]
	caller.mu.Unlock()
	if len(last) != len(`[{"name":""}]`)+200001 {
		t.Errorf("the last call's arguments are %d bytes", len(last))
	}
}

// TestSDKJSONBodies: a body the host passes as JSON is decoded by the
// shim; one that does not parse reaches the script as the string it is.
func TestSDKJSONBodies(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, body string
		want       want
	}{
		{"valid", `{"a":[1,2]}`, want{result: `{"a":[1,2]}`}},
		{"not JSON after all", `{"a": oops`, want{result: `"{\"a\": oops"`}},
		{"empty object", `{}`, want{result: `{}`}},
		{"as deep as json.decode goes", nested(luau.MaxNestingDepth), want{result: nested(luau.MaxNestingDepth)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			caller := &tableCaller{responses: map[uint32]*sdkcall.Response{
				1: {Status: 200, JSON: json.RawMessage(c.body)},
				2: {Fail: sdkcall.Upstream, Status: 500, Message: "sdk.get_pet: HTTP 500", JSON: json.RawMessage(c.body)},
			}}
			check(t, runSDK(t, `return (sdk.list_pets())`, caller, luau.Limits{}), c.want)
			check(t, runSDK(t, `return parallel({function() return (sdk.list_pets()) end})[1]`, caller, luau.Limits{}), c.want)
			check(t, runSDK(t, `local ok, err = pcall(sdk.get_pet) return err.body`, caller, luau.Limits{}), c.want)
		})
	}
}

// nested is a JSON array nested levels deep.
func nested(levels int) string {
	return strings.Repeat("[", levels) + strings.Repeat("]", levels)
}

// TestSDKResponseTooDeep: a response nested deeper than json.decode allows
// is the upstream's fault, not the script's: an sdk error table (kind
// upstream when it escapes) whose message names the function as the host's
// errors do, with the status, the headers and the body as text; inside
// parallel too. An HTTP error whose body is too deep keeps its own message,
// the body as text. A call whose caller takes no result decodes nothing.
func TestSDKResponseTooDeep(t *testing.T) {
	t.Parallel()
	deep := nested(luau.MaxNestingDepth + 1)
	tooDeep := "the response is nested more than 128 levels deep"
	caller := &tableCaller{responses: map[uint32]*sdkcall.Response{
		1: {Status: 200, Headers: map[string]string{"x-a": "b"}, JSON: json.RawMessage(deep)},
		2: {Fail: sdkcall.Upstream, Status: 502, Message: "sdk.get_pet: HTTP 502 Bad Gateway", JSON: json.RawMessage(deep)},
		3: {Status: 201, JSON: json.RawMessage(`{"a":` + nested(300) + `}`)},
	}}
	for _, c := range []struct {
		name, src string
		want      want
	}{
		{"uncaught, kind upstream, a flat function named in its API's table", "local x = 1\nlocal d = sdk.list_pets()",
			want{kind: result.Upstream, message: "sdk.pets.list_pets: " + tooDeep, line: 2}},
		{"a flat function called through its API's table", "local d = sdk.pets.list_pets()",
			want{kind: result.Upstream, message: "sdk.pets.list_pets: " + tooDeep}},
		{"the data alone", "return sdk.list_pets().x", want{kind: result.Upstream, message: "sdk.pets.list_pets: " + tooDeep}},
		{"a namespaced function", "return (sdk.pets.shared())", want{kind: result.Upstream, message: "sdk.pets.shared: " + tooDeep}},
		{"caught: an sdk error table", `local ok, e = pcall(sdk.list_pets)
			return {ok, e.message, e.status, e.headers["x-a"], e.body == string.rep("[", 129) .. string.rep("]", 129), tostring(e) == e.message}`,
			want{result: `[false,"sdk.pets.list_pets: ` + tooDeep + `",200,"b",true,true]`}},
		{"in parallel", `return parallel({function() return 1 end, function() return (sdk.pets.shared()) end})`,
			want{kind: result.Upstream, message: "sdk.pets.shared: " + tooDeep}},
		{"caught in parallel", `return parallel({function() local ok, e = pcall(sdk.list_pets) return {ok, e.message, e.status} end})`,
			want{result: `[[false,"sdk.pets.list_pets: ` + tooDeep + `",200]]`}},
		{"an HTTP error keeps its message, the body as text", `local ok, e = pcall(sdk.get_pet) return {e.message, e.status, #e.body}`,
			want{result: `["sdk.get_pet: HTTP 502 Bad Gateway",502,258]`}},
		{"a call taking no result decodes nothing", `sdk.list_pets() parallel({function() sdk.list_pets() end}) return true`,
			want{result: "true"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			check(t, runSDK(t, c.src, caller, luau.Limits{}), c.want)
		})
	}
}

// FuzzSDKArgs checks the arguments' fast path (flat values and objects,
// json.cpp writeFlatList) against the Encoder's: the same values followed
// by a table only the Encoder writes must give the same text before that
// last argument.
func FuzzSDKArgs(f *testing.F) {
	f.Add("Rex", 7.0, true, uint8(0))
	f.Add("", -0.5, false, uint8(1))
	f.Add("bin\x00\xff\"\\\n", 1e300, true, uint8(2))
	f.Add("é", 3000000000.0, false, uint8(3))
	f.Add("k", 0.1, true, uint8(4))
	for mode := range 64 { // each kind of value in each place
		f.Add("s", 2.5, mode%2 == 0, uint8(mode))
	}
	f.Fuzz(func(t *testing.T, s string, x float64, b bool, mode uint8) {
		number := strconv.FormatFloat(x, 'g', -1, 64)
		if math.IsInf(x, 0) || math.IsNaN(x) {
			number = "math.huge"
		}
		// The values: a flat object, a string, a number, a boolean, nil
		// between them, or an empty or array-like table (not flat).
		values := []string{
			fmt.Sprintf(`{s = s, n = %s, b = %v, [s .. "k"] = 1}`, number, b),
			"s", number, fmt.Sprint(b), "nil", "{}", "{1, 2}", fmt.Sprintf(`{x = {n = %s}}`, number),
		}
		var args []string
		for i := 0; i < 3; i++ {
			args = append(args, values[(int(mode)>>(2*i)+i)%len(values)])
		}
		list := strings.Join(args, ", ")
		src := fmt.Sprintf(`local s = ... sdk.list_pets(%s) sdk.list_pets(%s, {{}}) return true`, list, list)
		caller := &tableCaller{responses: map[uint32]*sdkcall.Response{1: {Status: 204}}}
		res := sdkRuntime.Get(t).Execute(context.Background(), luau.Script{Source: []byte(src), Args: []string{s}, SDK: caller})
		if res.Error != nil {
			t.Fatalf("%s: %+v", src, res.Error)
		}
		if len(caller.args) != 2 {
			t.Fatalf("%d calls", len(caller.args))
		}
		fast, general := caller.args[0], caller.args[1]
		// Trailing nils are dropped: the general call's are not trailing.
		want := strings.TrimSuffix(general, ",[[]]]")
		for strings.HasSuffix(want, ",null") {
			want = strings.TrimSuffix(want, ",null")
		}
		if want == "[null" {
			want = "["
		}
		if strings.TrimSuffix(fast, "]") != want {
			t.Fatalf("%s:\nfast    %s\ngeneral %s", src, fast, general)
		}
	})
}

// TestSDKArgumentsPastTheMemoryLimit: arguments whose text would not fit
// in the memory limit fail the call before any request, as a memory error
// a pcall catches, and the next call works.
func TestSDKArgumentsPastTheMemoryLimit(t *testing.T) {
	t.Parallel()
	caller := &tableCaller{responses: map[uint32]*sdkcall.Response{1: {Status: 200, JSON: json.RawMessage(`[1,2]`)}}}
	res := runSDK(t, `local big = string.rep("x", 10 * 1024 * 1024)
local ok, err = pcall(sdk.list_pets, {q = big})
big = nil
local d = sdk.list_pets({limit = 1})
return {ok, tostring(err), #d}`, caller, luau.Limits{HeapBytes: 16 << 20})
	check(t, res, want{result: `[false,"not enough memory",2]`})
	caller.mu.Lock()
	defer caller.mu.Unlock()
	if len(caller.args) != 1 || caller.args[0] != `[{"limit":1}]` {
		t.Errorf("the caller got %q, want only the second call", caller.args)
	}
}

// A response a dry run made up reaches the script with response.dry_run
// set, by a call and through parallel alike; a real one has no dry_run,
// and a script that takes only the data gets the data.
func TestSDKDryRunResponse(t *testing.T) {
	t.Parallel()
	caller := &tableCaller{responses: map[uint32]*sdkcall.Response{
		1: {Status: 201, JSON: json.RawMessage(`{"id":7}`), DryRun: true},
		2: {Status: 200, JSON: json.RawMessage(`{"id":8}`)},
		3: {JSON: json.RawMessage(`{"dry_run":true}`), DryRun: true},
	}}
	res := runSDK(t, `local a, ra = sdk.list_pets()
		local b, rb = sdk.get_pet()
		local c, rc = sdk.pets.shared()
		local only = sdk.list_pets().id
		local p = parallel({ function() local d, r = sdk.list_pets() return r.dry_run end, function() local d, r = sdk.get_pet() return r.dry_run == nil end })
		return { a.id, ra.dry_run, ra.status, b.id, rb.dry_run == nil, c.dry_run, rc.dry_run, only, p[1], p[2] }`, caller, luau.Limits{})
	if res.Error != nil || string(res.Value) != `[7,true,201,8,true,true,true,7,true,true]` {
		t.Fatalf("%s %+v", res.Value, res.Error)
	}
}

// releaseCaller answers list_pets with a text of `size` bytes and slow
// (id 5) once the execution ends, and counts the responses it returned and
// those the runtime released: the host memory a response holds is given
// back exactly once, whether the guest took it or not.
type releaseCaller struct {
	size int

	mu                 sync.Mutex
	returned, released int
	twice              bool
}

func (c *releaseCaller) Call(ctx context.Context, id uint32, _ json.RawMessage) *sdkcall.Response {
	r := &sdkcall.Response{Status: 200, Text: []byte(strings.Repeat("x", c.size))}
	if id == 5 {
		<-ctx.Done()
		r = &sdkcall.Response{Fail: sdkcall.Upstream, Message: "sdk.slow: " + ctx.Err().Error()}
	}
	done := false
	r.Release = func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if done {
			c.twice = true
		}
		done = true
		c.released++
	}
	c.mu.Lock()
	c.returned++
	c.mu.Unlock()
	return r
}

func TestSDKResponsesReleased(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		src    string
		size   int
		limits luau.Limits
		check  func(*result.Result) bool
	}{
		{name: "one call", size: 100, src: `return #sdk.list_pets()`,
			check: func(r *result.Result) bool { return string(r.Value) == "100" }},
		{name: "parallel, more than one sdk_wait's worth",
			size: 700_000, src: `
			local fns = {}
			for i = 1, 6 do fns[i] = function() return #sdk.list_pets() end end
			local total = 0
			for _, n in parallel(fns) do total += n end
			return total`,
			check: func(r *result.Result) bool { return string(r.Value) == "4200000" }},
		{name: "the execution ends with calls in flight", size: 10, src: `
			parallel({function() return sdk.list_pets() end, function() sdk.slow() end, function() sdk.slow() end})`,
			limits: luau.Limits{Timeout: 200 * time.Millisecond},
			check:  func(r *result.Result) bool { return r.Error != nil && r.Error.Kind == result.Timeout }},
		{name: "a response larger than the script's memory", size: 16 << 20, src: `return #sdk.list_pets()`,
			limits: luau.Limits{HeapBytes: 4 << 20},
			check:  func(r *result.Result) bool { return r.Error != nil && r.Error.Kind == result.Memory }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			caller := &releaseCaller{size: c.size}
			res := runSDK(t, c.src, caller, c.limits)
			if !c.check(res) {
				t.Fatalf("result %s, error %+v", res.Value, res.Error)
			}
			caller.mu.Lock()
			defer caller.mu.Unlock()
			if caller.returned == 0 || caller.released != caller.returned || caller.twice {
				t.Errorf("%d responses returned, %d released (one twice: %v)", caller.returned, caller.released, caller.twice)
			}
		})
	}
}
