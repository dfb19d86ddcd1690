package luau_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/contract/sdkcall"
	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/host/runtime/result"
)

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
