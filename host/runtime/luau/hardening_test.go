package luau_test

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/host/runtime/result"
)

// gcWatch runs garbage collections beside an execution and counts those
// that completed: C code that never reaches the host's tick keeps Go from
// stopping the world, and every collection in the process waits until the
// script ends.
type gcWatch struct {
	stop  chan struct{}
	done  chan struct{}
	mu    sync.Mutex
	count int
}

func watchGC() *gcWatch {
	w := &gcWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			select {
			case <-w.stop:
				return
			default:
			}
			_ = make([]byte, 1<<20)
			runtime.GC()
			w.mu.Lock()
			w.count++
			w.mu.Unlock()
		}
	}()
	return w
}

// finish stops the collections and tells how many completed before it.
func (w *gcWatch) finish() int {
	w.mu.Lock()
	count := w.count // only those completed while the script still ran
	w.mu.Unlock()
	close(w.stop)
	<-w.done
	return count
}

// TestCCodeReachesTheDeadline runs scripts whose work happens in C:
// loops whose work is not linear in the memory limit. Each ends with the
// answer a linear algorithm finds before the deadline, or with kind timeout
// at its deadline, while garbage collections beside it keep completing.
func TestCCodeReachesTheDeadline(t *testing.T) {
	const timeout = time.Second
	cases := []struct {
		name, src string
		want      want
	}{
		{
			name: "plain find, naive O(n*m)",
			src:  `return string.find(string.rep("a", 2^17), string.rep("a", 2^16) .. "b", 1, true)`,
			want: want{result: "null"},
		},
		{
			name: "plain find that matches",
			src:  `return {string.find(string.rep("a", 2^17) .. "b", string.rep("a", 2^16) .. "b", 1, true)}`,
			want: want{result: "[65537,131073]"},
		},
		{
			name: "find without specials, many times",
			src:  `local h = string.rep("a", 2^17) for i = 1, 1e9 do string.find(h, string.rep("a", 2^15) .. "b") end`,
			want: want{kind: result.Timeout},
		},
		{
			name: "split with a long separator",
			src:  `return #string.split(string.rep("a", 2^17), string.rep("a", 2^16) .. "b")`,
			want: want{result: "1"},
		},
		{
			name: "emptied table referenced many times, as the result",
			src: `local t = {} for i = 1, 2^20 do t[i] = i end for i = 1, 2^20 do t[i] = nil end
				local r = {} for i = 1, 10000 do r[i] = t end return r`,
			want: want{kind: result.Timeout},
		},
		{
			name: "emptied table referenced many times, json.encode",
			// 2^19 keys: 2^20 reach the 64 MiB limit at about the timeout.
			src: `local t = {} for i = 1, 2^19 do t["k" .. i] = i end for k in pairs(t) do t[k] = nil end
				local r = {} for i = 1, 10000 do r[i] = t end return #json.encode(r)`,
			want: want{kind: result.Timeout},
		},
		{
			name: "table.sort with a C comparator",
			src: `local t = table.create(2e6, 0) for i = 1, #t do t[i] = (i * 7919) % 2e6 end
				for i = 1, 1e9 do table.sort(t, rawequal) end`,
			want: want{kind: result.Timeout},
		},
		{
			name: "a DAG of shared tables",
			src:  `local t = {} for i = 1, 40 do t = {t, t} end return #json.encode(t)`,
			want: want{kind: result.Timeout},
		},
		{
			name: "a pattern that backtracks",
			src:  `return string.find(string.rep("a", 1e5), ".-.-.-.-b")`,
			want: want{kind: result.Timeout},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// The script prints first, so that the collections start
			// once it is known to be running.
			running := make(chan struct{})
			done := make(chan *result.Result, 1)
			go func() {
				done <- shared.Get(t).Execute(context.Background(), luau.Script{
					Source: []byte(`print("running") ` + c.src),
					Limits: luau.Limits{Timeout: timeout},
					OnLog:  func(string) { close(running) },
				})
			}()
			// A script whose C code never reaches the deadline check runs
			// for far longer than its timeout: the watchdog fails the
			// test instead of letting it hang.
			watchdog := time.After(time.Minute)
			var res *result.Result
			select {
			case <-running:
			case res = <-done:
				// A quick script can end right after its print: both
				// are ready, and select may take either.
				select {
				case <-running:
				default:
					t.Fatalf("the script ended before its print: %+v", res.Error)
				}
			case <-watchdog:
				t.Fatal("the script did not start within a minute")
			}
			w := watchGC()
			if res == nil {
				select {
				case res = <-done:
				case <-watchdog:
					t.Fatalf("the script ran on for a minute past its timeout of %s: its C code never reaches the deadline check", timeout)
				}
			}
			collected := w.finish()
			// A result rather than kind timeout proves the answer came
			// before the deadline; kind timeout, with its message, that
			// the deadline stopped the C loop.
			check(t, res, c.want)
			if c.want.kind == result.Timeout && !strings.Contains(res.Error.Message, "time limit") {
				t.Errorf("message = %q, want the time limit", res.Error.Message)
			}
			// A script that ran until its deadline must have let garbage
			// collections complete beside it.
			if c.want.kind == result.Timeout && collected == 0 {
				t.Errorf("no garbage collection completed beside the script while it ran to its deadline: it stalled the process")
			}
		})
	}
}

// TestConversionsStayInsideTheMemoryLimit: buffers outside the Luau heap
// count against its limit, and running out of memory in a conversion is
// the script's own memory error, never kind internal.
func TestConversionsStayInsideTheMemoryLimit(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, src string
		heap      uint64
		want      want
	}{
		{
			name: "a result larger than its cap",
			src:  `return string.rep("\1", 50 * 2^20)`,
			want: want{kind: result.Limit, message: "too large to convert to JSON"},
		},
		{
			name: "json.encode past the memory limit is catchable",
			src: `local s = string.rep("\1", 8 * 2^20) local t = {s, s, s, s, s, s, s, s}
				local ok, err = pcall(json.encode, t) return {ok, err}`,
			want: want{result: `[false,"not enough memory"]`},
		},
		{
			name: "json.encode past the memory limit, uncaught",
			src:  `local s = string.rep("\1", 8 * 2^20) return #json.encode({s, s, s, s, s, s, s, s})`,
			want: want{kind: result.Memory},
		},
		{
			name: "a DAG as the result",
			src:  `local t = {} for i = 1, 40 do t = {t, t} end return t`,
			want: want{kind: result.Limit},
		},
		{
			// The decoder's buffer (for a string with escapes) counts
			// too: uncounted, it took the module past its memory and ended
			// as kind internal.
			name: "json.decode near the largest heap limit",
			src: `local s = string.rep("a", 90 * 2^20) s = '"\\n' .. s .. '"'
				local ok, err = pcall(json.decode, s) return {ok, err}`,
			heap: 200 << 20,
			want: want{result: `[false,"not enough memory"]`},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			check(t, run(t, c.src, luau.Limits{Timeout: 20 * time.Second, HeapBytes: c.heap}), c.want)
		})
	}
}

// A huge error object is reported cut, as the error it is.
func TestHugeErrorObject(t *testing.T) {
	t.Parallel()
	res := run(t, `error({string.rep("\1", 2e7)})`, luau.Limits{})
	if res.Error == nil || res.Error.Kind != result.Runtime {
		t.Fatalf("error = %+v, want kind runtime", res.Error)
	}
	if n := len(res.Error.Message); n > 70*1024 || !strings.HasSuffix(res.Error.Message, "... (cut)") || !strings.HasPrefix(res.Error.Message, `["\u0001`) {
		t.Errorf("message of %d bytes: %.40q...%q", n, res.Error.Message, res.Error.Message[max(0, n-20):])
	}
}

// error(nil) says nil, as Luau's tostring does.
func TestErrorNil(t *testing.T) {
	t.Parallel()
	check(t, run(t, `error(nil)`, luau.Limits{}), want{kind: result.Runtime, message: "nil"})
	if res := run(t, `error(nil)`, luau.Limits{}); res.Error == nil || res.Error.Message != "nil" {
		t.Errorf("error = %+v, want the message nil", res.Error)
	}
}

// Results and json.encode nest at most 128 levels: deeper
// values are refused with a clear error, as official MCP SDKs fail on them.
// luau.MaxNestingDepth, which the docs show, is the shim's limit.
func TestNestingDepth(t *testing.T) {
	t.Parallel()
	depth := luau.MaxNestingDepth
	nest := func(levels int, tail string) string {
		return `local t = {} for i = 2, ` + strconv.Itoa(levels) + ` do t = {t} end ` + tail
	}
	check(t, run(t, nest(depth, "return t"), luau.Limits{}), want{result: strings.Repeat("[", depth-1) + "[]" + strings.Repeat("]", depth-1)})
	check(t, run(t, nest(depth+1, "return t"), luau.Limits{}), want{kind: result.Runtime, message: "nested too deeply"})
	check(t, run(t, nest(depth+1, "return json.encode(t)"), luau.Limits{}), want{kind: result.Runtime, message: "more than 128 levels"})
	check(t, run(t, `return #json.encode(json.decode(string.rep("[", 128) .. string.rep("]", 128)))`, luau.Limits{}), want{result: "256"})
	check(t, run(t, `return json.decode(string.rep("[", 129) .. string.rep("]", 129))`, luau.Limits{}), want{kind: result.Runtime, message: "nesting too deep (more than 128 levels)"})
}

// progress messages are cut to 1 KiB, at a character boundary.
func TestProgressMessageCap(t *testing.T) {
	t.Parallel()
	var messages []string
	res := shared.Get(t).Execute(context.Background(), luau.Script{
		Source: []byte(`progress(1, 2, string.rep("é", 40 * 2^20 / 2)) progress(2, 2, "short") return true`),
		OnProgress: func(_ float64, _ *float64, message string) {
			messages = append(messages, message)
		},
	})
	check(t, res, want{result: "true"})
	if len(messages) != 2 || messages[1] != "short" {
		t.Fatalf("messages: %d", len(messages))
	}
	m := messages[0]
	if len(m) > luau.MaxProgressMessageBytes || !strings.HasSuffix(m, "... (cut)") || !utf8.ValidString(m) {
		t.Errorf("cut message of %d bytes, valid UTF-8 %v: %q", len(m), utf8.ValidString(m), m[len(m)-20:])
	}
}
