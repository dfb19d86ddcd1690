package luau

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// The host side of Luau's error recovery. Luau calls luaD_rawrunprotected
// to run a function in protected mode and luaD_throw to raise an error; the
// shim routes both here (see luau-build/patches/ldo-host-unwind.patch).
//
// rawrunprotected calls back into the module through ts_trampoline. throw
// panics with a luaThrow; wazero recovers the panic at the boundary of that
// nested call and hands it back as an error, and rawrunprotected restores the
// guest's stack pointer and returns the status, exactly as longjmp would.
// Panics that are not a luaThrow (a stop, a front-end abort, a trap) pass
// through every protected call up to the host's own call into the module.

// luaThrow is the panic value of luaD_throw.
type luaThrow struct{ status int32 }

func (t *luaThrow) Error() string {
	return fmt.Sprintf("luau: unprotected error (status %d)", t.status)
}

// throws holds one preallocated luaThrow per Lua status, so that raising an
// error allocates nothing.
var throws = [...]*luaThrow{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}}

// errStopRequested unwinds a script the host asked to stop.
var errStopRequested = errors.New("luau: execution stopped by the host")

// frontEndAbort unwinds a C++ exception raised by Luau's compiler.
type frontEndAbort struct {
	message string
	line    int
}

func (a *frontEndAbort) Error() string { return "luau: compiler error: " + a.message }

func instantiateHostModule(ctx context.Context, r wazero.Runtime) error {
	i32, f64 := api.ValueTypeI32, api.ValueTypeF64
	b := r.NewHostModuleBuilder("toolscript")
	export := func(name string, fn api.GoModuleFunc, params, results []api.ValueType) {
		b.NewFunctionBuilder().WithGoModuleFunction(fn, params, results).Export(name)
	}
	export("rawrunprotected", rawRunProtected, []api.ValueType{i32, i32, i32}, []api.ValueType{i32})
	export("throw", throw, []api.ValueType{i32, i32}, nil)
	export("tick", tick, nil, nil)
	export("print", hostPrint, []api.ValueType{i32, i32}, nil)
	export("abort", abort, []api.ValueType{i32, i32, i32}, nil)
	export("progress", progress, []api.ValueType{f64, f64, i32, i32}, nil)
	export("sdk_call", sdkCall, []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32})
	export("sdk_submit", sdkSubmit, []api.ValueType{i32, i32, i32, i32}, nil)
	export("sdk_wait", sdkWait, []api.ValueType{i32, i32, i32}, []api.ValueType{i32})
	export("sdk_take", sdkTake, []api.ValueType{i32, i32}, []api.ValueType{i32})
	exportIO(export)
	_, err := b.Instantiate(ctx)
	return err
}

func rawRunProtected(ctx context.Context, _ api.Module, stack []uint64) {
	inst := instanceFrom(ctx)
	sp := inst.sp.Get()
	fn, call := inst.trampoline(inst.depth)
	call[0], call[1], call[2] = stack[1], stack[0], stack[2] // f, L, ud
	inst.depth++
	err := fn.CallWithStack(ctx, call)
	inst.depth--
	if err == nil {
		stack[0] = 0
		return
	}
	var t *luaThrow
	if errors.As(err, &t) {
		inst.sp.Set(sp)
		stack[0] = uint64(t.status)
		return
	}
	panic(err)
}

func throw(_ context.Context, _ api.Module, stack []uint64) {
	status := int32(stack[1])
	if status >= 0 && int(status) < len(throws) {
		panic(throws[status])
	}
	panic(&luaThrow{status})
}

// tick runs every few thousand Luau safepoints. Calling into Go gives the
// scheduler a safe point, which a goroutine running compiled wasm code
// otherwise lacks, and is where the deadline and cancellation stop the
// script: checking them here costs less than arming timers per execution.
func tick(ctx context.Context, _ api.Module, _ []uint64) {
	instanceFrom(ctx).checkStop()
}

// checkStop stops the execution, by unwinding it through the host, when
// its caller cancelled it or its deadline passed.
func (inst *instance) checkStop() {
	select {
	case <-inst.done:
		inst.stopReason = stoppedByCancellation
		panic(errStopRequested)
	default:
	}
	if !inst.deadline.IsZero() && time.Now().After(inst.deadline) {
		inst.stopReason = stoppedByDeadline
		panic(errStopRequested)
	}
}

// checkStopAfterCall is checkStop after an sdk call made under ctx, which
// ends at the execution's deadline: ctx's error tells a passed deadline
// without reading the clock on every call (tick reads it anyway, a few
// thousand safepoints later).
func (inst *instance) checkStopAfterCall(ctx context.Context) {
	select {
	case <-inst.done:
		inst.stopReason = stoppedByCancellation
		panic(errStopRequested)
	default:
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		inst.stopReason = stoppedByDeadline
		panic(errStopRequested)
	}
}

func hostPrint(ctx context.Context, mod api.Module, stack []uint64) {
	inst := instanceFrom(ctx)
	if inst.exec == nil {
		return
	}
	line, ok := mod.Memory().Read(uint32(stack[0]), uint32(stack[1]))
	if !ok {
		panic(fmt.Errorf("luau: print line out of range"))
	}
	inst.exec.logs.add(line)
}

func abort(_ context.Context, mod api.Module, stack []uint64) {
	msg, _ := mod.Memory().Read(uint32(stack[0]), uint32(stack[1]))
	panic(&frontEndAbort{message: string(msg), line: int(int32(stack[2]))})
}

func progress(ctx context.Context, mod api.Module, stack []uint64) {
	inst := instanceFrom(ctx)
	if inst.exec == nil || inst.exec.onProgress == nil {
		return
	}
	done := api.DecodeF64(stack[0])
	total := api.DecodeF64(stack[1])
	msg, _ := mod.Memory().Read(uint32(stack[2]), uint32(stack[3]))
	var totalPtr *float64
	if total >= 0 && !math.IsNaN(total) {
		totalPtr = &total
	}
	inst.exec.onProgress(done, totalPtr, progressMessage(msg))
}

// progressMessage copies a progress message out of guest memory, cut to
// MaxProgressMessageBytes: notifications carry it to the client as often as
// ten times a second.
func progressMessage(msg []byte) string {
	if len(msg) <= MaxProgressMessageBytes {
		return string(msg)
	}
	cut := MaxProgressMessageBytes - len(progressCutMarker)
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return string(msg[:cut]) + progressCutMarker
}
