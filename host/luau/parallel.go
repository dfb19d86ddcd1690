package luau

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tetratelabs/wazero/api"
)

// DefaultMaxParallel is how many sdk calls one execution may have in flight
// at once by default ([sdk] max_parallel), and parallel's default limit.
const DefaultMaxParallel = 8

// The host side of parallel (luau-build/shim/parallel.cpp). The shim hands
// over the requests its coroutines yielded, in one batch (sdk_submit); they
// run concurrently here, at most the batch's limit at once and at most
// MaxParallel for the whole execution; sdk_wait hands back those that have
// completed. Every request runs under one context per execution, carrying
// its deadline and cancellation and cancelled when the execution ends, which
// waits for them: no request outlives its execution.

// calls are an execution's sdk requests made through parallel.
type calls struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	slots  chan struct{} // MaxParallel for the execution

	mu   sync.Mutex
	done map[uint32]*SDKResponse // completed, not yet handed back
	// ready is signalled when a request completes.
	ready chan struct{}
}

// start begins one request of a batch whose slots bound its concurrency.
func (c *calls) start(sdk SDKCaller, batch chan struct{}, token, id uint32, args []byte) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		var resp *SDKResponse
		if acquire(c.ctx, batch) && acquire(c.ctx, c.slots) {
			resp = sdk.Call(c.ctx, id, args)
			<-c.slots
			<-batch
		} else {
			resp = &SDKResponse{Fail: SDKUpstream, Message: "sdk: the execution ended before the call was made"}
		}
		c.mu.Lock()
		c.done[token] = resp
		c.mu.Unlock()
		select {
		case c.ready <- struct{}{}:
		default:
		}
	}()
}

func acquire(ctx context.Context, slots chan struct{}) bool {
	select {
	case slots <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// take removes and returns the completed responses among tokens.
func (c *calls) take(tokens []uint32) map[uint32]*SDKResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out map[uint32]*SDKResponse
	for _, t := range tokens {
		if resp, ok := c.done[t]; ok {
			if out == nil {
				out = make(map[uint32]*SDKResponse)
			}
			out[t] = resp
			delete(c.done, t)
		}
	}
	return out
}

// close cancels the requests still in flight and waits for them.
func (c *calls) close() {
	if c == nil {
		return
	}
	c.cancel()
	c.wg.Wait()
}

// callsOf returns the execution's calls, made on first use under ctx (the
// execution's context) with the instance's deadline.
func (inst *instance) callsOf(ctx context.Context) *calls {
	exec := inst.exec
	if exec.calls == nil {
		callCtx, cancel := context.WithCancel(ctx) // ctx carries the deadline
		exec.calls = &calls{
			ctx:    callCtx,
			cancel: cancel,
			slots:  make(chan struct{}, max(exec.maxParallel, 1)),
			done:   make(map[uint32]*SDKResponse),
			ready:  make(chan struct{}, 1),
		}
	}
	return exec.calls
}

// sdkSubmit is ts_host_sdk_submit(L, batch, len, limit).
func sdkSubmit(ctx context.Context, mod api.Module, stack []uint64) {
	inst := instanceFrom(ctx)
	exec := inst.exec
	batch := guestBytes(mod, stack[1], uint64(uint32(stack[2])))
	limit := int(uint32(stack[3]))
	if limit <= 0 || limit > exec.maxParallel {
		limit = exec.maxParallel
	}
	c := inst.callsOf(ctx)
	slots := make(chan struct{}, max(limit, 1))
	for len(batch) >= 12 {
		token := binary.LittleEndian.Uint32(batch)
		id := binary.LittleEndian.Uint32(batch[4:])
		n := binary.LittleEndian.Uint32(batch[8:])
		if uint64(n) > uint64(len(batch)-12) {
			panic(errors.New("luau: malformed sdk batch"))
		}
		args := bytes.Clone(batch[12 : 12+n])
		batch = batch[12+n:]
		if exec.sdk == nil {
			c.mu.Lock()
			c.done[token] = noSDK
			c.mu.Unlock()
			continue
		}
		c.start(exec.sdk, slots, token, id, args)
	}
}

var noSDK = &SDKResponse{Fail: SDKArgument, Message: "sdk: no API or MCP server is configured for this execution"}

// sdkWait is ts_host_sdk_wait(L, tokens, count).
func sdkWait(ctx context.Context, mod api.Module, stack []uint64) {
	inst := instanceFrom(ctx)
	L := stack[0]
	raw := guestBytes(mod, stack[1], 4*uint64(uint32(stack[2])))
	tokens := make([]uint32, len(raw)/4)
	for i := range tokens {
		tokens[i] = binary.LittleEndian.Uint32(raw[4*i:])
	}
	c := inst.callsOf(ctx)
	var ready map[uint32]*SDKResponse
	timer := time.NewTimer(time.Until(inst.deadline))
	defer timer.Stop()
	for {
		if ready = c.take(tokens); len(ready) > 0 {
			break
		}
		select {
		case <-c.ready:
		case <-inst.done:
		case <-timer.C:
		}
		inst.checkStop()
	}
	var out []byte
	for _, t := range tokens {
		resp, ok := ready[t]
		if !ok {
			continue
		}
		envelope := resp.envelope()
		out = binary.LittleEndian.AppendUint32(out, t)
		out = binary.LittleEndian.AppendUint32(out, uint32(len(envelope)))
		out = append(out, envelope...)
	}
	stack[0] = uint64(inst.writeSDKBuffer(ctx, mod, L, out))
}

// writeSDKBuffer copies data into a buffer the guest allocates on L's stack
// (ts_sdk_buffer) and returns its length. Running out of memory there
// raises the script's memory error from this host call.
func (inst *instance) writeSDKBuffer(ctx context.Context, mod api.Module, L uint64, data []byte) int {
	buf, err := inst.sdkBuffer.Call(ctx, L, uint64(len(data)))
	if err != nil {
		var t *luaThrow
		if errors.As(err, &t) {
			panic(t)
		}
		panic(err)
	}
	if !mod.Memory().Write(uint32(buf[0]), data) {
		panic(fmt.Errorf("luau: sdk response buffer out of range"))
	}
	return len(data)
}
