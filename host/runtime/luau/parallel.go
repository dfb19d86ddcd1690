package luau

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/toolscript/toolscript/host/contract/sdkcall"
)

// DefaultMaxParallel is how many sdk calls one execution may have in flight
// at once by default ([sdk] max_parallel), and parallel's default limit.
const DefaultMaxParallel = sdkcall.DefaultMaxParallel

// The host side of parallel (luau-build/shim/parallel.cpp). The shim hands
// over the requests its coroutines yielded, in one batch (sdk_submit); each
// is begun (checked, counted, decided by the effects layer) in the batch's
// order, and those left to send run concurrently here, at most the batch's limit at once and at most
// MaxParallel for the whole execution; sdk_wait says which have completed,
// and each coroutine then takes its own response (sdk_take) into its own
// stack, so that a response the memory limit has no room for is that
// coroutine's memory error, which a pcall inside it catches, exactly as for
// a call made outside parallel. Every request runs under one context per
// execution, carrying its deadline and cancellation and cancelled when the
// execution ends, which waits for them: no request outlives its execution.
//
// parallel's limit is checked by the shim: nil (sent as 0) means the
// execution's MaxParallel, a whole number >= 1 is used up to MaxParallel,
// and anything else is the script's error.

// calls are an execution's sdk requests made through parallel.
type calls struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	slots  chan struct{} // MaxParallel for the execution

	mu   sync.Mutex
	done map[uint32]*sdkcall.Response // completed, not yet handed back
	// ready is signalled when a request completes.
	ready chan struct{}
}

// start sends one request of a batch whose slots bound its concurrency.
func (c *calls) start(send sdkcall.Send, batch chan struct{}, token uint32) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		var resp *sdkcall.Response
		if acquire(c.ctx, batch) && acquire(c.ctx, c.slots) {
			resp = send(c.ctx)
			<-c.slots
			<-batch
		} else {
			resp = &sdkcall.Response{Fail: sdkcall.Upstream, Message: "sdk: the execution ended before the call was made"}
		}
		c.finish(token, resp)
	}()
}

// finish hands over the response of token.
func (c *calls) finish(token uint32, resp *sdkcall.Response) {
	c.mu.Lock()
	c.done[token] = resp
	c.mu.Unlock()
	select {
	case c.ready <- struct{}{}:
	default:
	}
}

// begin decides one call of a batch now, in the batch's order
// (sdkcall.Beginner): its response when nothing is to be sent, else how
// to send it. A Caller that is no Beginner only sends.
func begin(sdk sdkcall.Caller, id uint32, args []byte) (*sdkcall.Response, sdkcall.Send) {
	if b, ok := sdk.(sdkcall.Beginner); ok {
		return b.Begin(id, args, false)
	}
	return nil, func(ctx context.Context) *sdkcall.Response { return sdk.Call(ctx, id, args) }
}

func acquire(ctx context.Context, slots chan struct{}) bool {
	select {
	case slots <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// completed moves the tokens whose requests have completed to the front of
// tokens, keeping their order, and returns how many they are.
//
// A completed response whose token the guest does not wait for belongs to
// an outer parallel, which an inner one (run by one of its functions)
// keeps from taking it until the inner one returns: its host bytes are
// released now, lest the inner parallel's calls wait for them forever.
// (The bytes stay in memory until it is taken: one response per function
// of the outer parallel at most.)
func (c *calls) completed(tokens []uint32) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for t, resp := range c.done {
		if resp.Release != nil && !slices.Contains(tokens, t) {
			resp.ReleaseOnce()
		}
	}
	n := 0
	for i, t := range tokens {
		if _, ok := c.done[t]; ok {
			tokens[n], tokens[i] = t, tokens[n]
			n++
		}
	}
	return n
}

// take removes and returns the completed response of token, nil when there
// is none.
func (c *calls) take(token uint32) *sdkcall.Response {
	c.mu.Lock()
	defer c.mu.Unlock()
	resp := c.done[token]
	delete(c.done, token)
	return resp
}

// close cancels the requests still in flight, waits for them, and releases
// the responses the guest never took.
func (c *calls) close() {
	if c == nil {
		return
	}
	c.cancel()
	c.wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	for t, resp := range c.done {
		resp.ReleaseOnce()
		delete(c.done, t)
	}
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
			done:   make(map[uint32]*sdkcall.Response),
			ready:  make(chan struct{}, 1),
		}
	}
	return exec.calls
}

// exportParallel registers parallel's host functions.
func exportParallel(b wazero.HostModuleBuilder) {
	exportVIIII(b, "sdk_submit", sdkSubmit)
	exportIIII(b, "sdk_wait", sdkWait)
	exportIII(b, "sdk_take", sdkTake)
}

// sdkSubmit is ts_host_sdk_submit(L, batch, len, limit).
func sdkSubmit(ctx context.Context, mod api.Module, _, batchPtr, batchLen, limit32 uint32) {
	inst := instanceFrom(ctx)
	exec := inst.exec
	batch := view(mod.Memory(), "sdk batch", batchPtr, batchLen)
	limit := int(limit32)
	if limit <= 0 || limit > exec.maxParallel {
		limit = exec.maxParallel
	}
	c := inst.callsOf(ctx)
	slots := make(chan struct{}, max(limit, 1))
	for len(batch) >= batchHeader {
		token := binary.LittleEndian.Uint32(batch)
		id := binary.LittleEndian.Uint32(batch[4:])
		n := binary.LittleEndian.Uint32(batch[8:])
		if uint64(n) > uint64(len(batch)-batchHeader) {
			panic(errors.New("luau: malformed sdk batch"))
		}
		args := bytes.Clone(batch[batchHeader : batchHeader+n])
		batch = batch[batchHeader+n:]
		if exec.sdk == nil {
			c.finish(token, noSDK)
			continue
		}
		// Every call of the batch is decided here, in the script's order,
		// before any is sent; only the sending is concurrent.
		if out, send := begin(exec.sdk, id, args); out != nil {
			c.finish(token, out)
			inst.checkEffects() // a call the plan does not hold: nothing after it is sent
		} else {
			c.start(send, slots, token)
		}
	}
}

var noSDK = &sdkcall.Response{Fail: sdkcall.Argument, Message: "sdk: no API or MCP server is configured for this execution"}

// sdkWait is ts_host_sdk_wait(L, tokens, count): it waits until at least
// one of the requests named by tokens has completed, moves the tokens of
// those that have to the front of the guest's array and returns how many.
// It allocates nothing in the guest: the responses wait for sdkTake.
func sdkWait(ctx context.Context, mod api.Module, _, tokensPtr, count uint32) uint32 {
	inst := instanceFrom(ctx)
	mem := mod.Memory()
	if count > mem.Size()/4 { // 4*count would wrap
		panic(&memRangeError{what: "sdk tokens", ptr: uint64(tokensPtr), size: 4 * uint64(count), memSize: mem.Size()})
	}
	raw := view(mem, "sdk tokens", tokensPtr, 4*count)
	tokens := make([]uint32, len(raw)/4)
	for i := range tokens {
		tokens[i] = binary.LittleEndian.Uint32(raw[4*i:])
	}
	c := inst.callsOf(ctx)
	var n int
	for {
		if n = c.completed(tokens); n > 0 {
			break
		}
		select {
		case <-c.ready:
		case <-inst.done:
		case <-inst.deadline.Done():
		}
		inst.checkStop()
	}
	for i, t := range tokens[:n] {
		binary.LittleEndian.PutUint32(raw[4*i:], t)
	}
	return uint32(n)
}

// sdkTake is ts_host_sdk_take(L, token): it writes the envelope of token's
// completed response straight into a buffer the guest allocates on L, the
// coroutine that made the request (writeSDKBuffer), and returns its
// length. The response is handed over once, and its host bytes released;
// running out of memory for it raises the script's memory error in that
// coroutine.
func sdkTake(ctx context.Context, mod api.Module, L, token uint32) uint32 {
	inst := instanceFrom(ctx)
	inst.checkEffects() // a call the plan does not hold stops the script
	resp := inst.callsOf(ctx).take(token)
	if resp == nil {
		panic(fmt.Errorf("luau: sdk_take of request %d, which has not completed", token))
	}
	defer resp.ReleaseOnce() // the bytes are the guest's below, or dropped
	env := (*envelope)(resp)
	return inst.writeSDKBuffer(ctx, mod, L, env.size(), env.write)
}

// writeSDKBuffer has the guest allocate a buffer of size bytes on L's
// stack (ts_sdk_buffer), has fill write into it in place, and returns
// size. Running out of memory there raises the script's memory error from
// this host call.
func (inst *instance) writeSDKBuffer(ctx context.Context, mod api.Module, L uint32, size int, fill func([]byte)) uint32 {
	sdkBuffer, err := inst.function(&inst.sdkBuffer, "ts_sdk_buffer")
	if err != nil {
		panic(err)
	}
	buf, err := sdkBuffer.Call(ctx, uint64(L), uint64(size))
	if err != nil {
		var t *luaThrow
		if errors.As(err, &t) {
			panic(t)
		}
		panic(err)
	}
	// Read after the call: allocating may have grown (moved) the memory.
	fill(view(mod.Memory(), "sdk response buffer", uint32(buf[0]), uint32(size)))
	return uint32(size)
}
