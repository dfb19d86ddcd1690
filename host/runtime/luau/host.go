package luau

import (
	"context"
	"errors"
	"fmt"
	"math"
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

// instantiateHostModule instantiates the "toolscript" module the Luau
// module imports: each capability registers its own host functions.
func instantiateHostModule(ctx context.Context, r wazero.Runtime) error {
	b := r.NewHostModuleBuilder("toolscript")
	exportCore(b)
	exportIO(b)
	exportSDK(b)
	exportParallel(b)
	_, err := b.Instantiate(ctx)
	return err
}

// exportCore registers the host functions every script uses: Luau's error
// recovery, the tick, print, progress and the front end's abort.
func exportCore(b wazero.HostModuleBuilder) {
	exportIIII(b, "rawrunprotected", rawRunProtected)
	exportVII(b, "throw", throw)
	exportVV(b, "tick", tick)
	exportVII(b, "print", hostPrint)
	exportVIII(b, "abort", abort)
	exportVFFII(b, "progress", progress)
}

// rawRunProtected is ts_host_rawrunprotected(L, f, ud).
func rawRunProtected(ctx context.Context, _ api.Module, L, f, ud uint32) int32 {
	inst := instanceFrom(ctx)
	sp := inst.sp.Get()
	fn, call := inst.trampoline(inst.depth)
	call[0], call[1], call[2] = uint64(f), uint64(L), uint64(ud)
	inst.depth++
	err := fn.CallWithStack(ctx, call)
	inst.depth--
	if err == nil {
		return 0
	}
	var t *luaThrow
	if errors.As(err, &t) {
		inst.sp.Set(sp)
		return t.status
	}
	panic(err)
}

// throw is ts_host_throw(L, status).
func throw(_ context.Context, _ api.Module, _ uint32, status int32) {
	if status >= 0 && int(status) < len(throws) {
		panic(throws[status])
	}
	panic(&luaThrow{status})
}

// tick runs every few thousand Luau safepoints. Calling into Go gives the
// scheduler a safe point, which a goroutine running compiled wasm code
// otherwise lacks, and is where the deadline and cancellation stop the
// script: checking them here costs less than arming timers per execution.
func tick(ctx context.Context, _ api.Module) {
	instanceFrom(ctx).checkStop()
}

// checkStop stops the execution, by unwinding it through the host, when
// its caller cancelled it or its deadline passed.
func (inst *instance) checkStop() {
	inst.stopIf(inst.deadline != nil && inst.deadline.passed())
}

// checkStopAfterCall is checkStop after an sdk call made under ctx, which
// ends at the execution's deadline: ctx's error tells a passed deadline
// without reading the clock on every call (tick reads it anyway, a few
// thousand safepoints later).
func (inst *instance) checkStopAfterCall(ctx context.Context) {
	inst.stopIf(errors.Is(ctx.Err(), context.DeadlineExceeded))
}

// stopIf unwinds the execution when its effects layer stopped an effect,
// its caller cancelled it, or (the caller's check of the clock)
// deadlinePassed, in that order of precedence.
func (inst *instance) stopIf(deadlinePassed bool) {
	inst.checkEffects()
	select {
	case <-inst.done:
		inst.stopReason = stoppedByCancellation
		panic(errStopRequested)
	default:
	}
	if deadlinePassed {
		inst.stopReason = stoppedByDeadline
		panic(errStopRequested)
	}
}

// checkEffects stops the execution once its effects layer stopped an
// effect. In a real run it costs a nil check.
func (inst *instance) checkEffects() {
	if exec := inst.exec; exec != nil {
		exec.checkEffects()
	}
}

// errEffectsStopped unwinds a script whose effects layer stopped an
// effect (a plan run's effect the plan does not hold): effects.Run.Err
// says why. Like a stop it passes every protected call: a script must
// not catch it (pcall) and run on.
var errEffectsStopped = errors.New("luau: an effect was stopped")

// checkEffects unwinds the execution once its effects layer stopped an
// effect.
func (e *execution) checkEffects() {
	if e.fx != nil && e.fx.Err() != nil {
		panic(errEffectsStopped)
	}
}

// hostPrint is ts_host_print(line, len).
func hostPrint(ctx context.Context, mod api.Module, ptr, n uint32) {
	inst := instanceFrom(ctx)
	if inst.exec == nil {
		return
	}
	inst.exec.logs.add(view(mod.Memory(), "print line", ptr, n))
}

// abort is ts_host_abort(message, len, line).
func abort(_ context.Context, mod api.Module, ptr, n uint32, line int32) {
	msg := view(mod.Memory(), "abort message", ptr, n)
	panic(&frontEndAbort{message: string(msg), line: int(line)})
}

// progress is ts_host_progress(done, total, message, len).
func progress(ctx context.Context, mod api.Module, done, total float64, ptr, n uint32) {
	inst := instanceFrom(ctx)
	if inst.exec == nil || inst.exec.onProgress == nil {
		return
	}
	msg := view(mod.Memory(), "progress message", ptr, n)
	var totalPtr *float64
	if total >= 0 && !math.IsNaN(total) {
		totalPtr = &total
	}
	inst.exec.onProgress(done, totalPtr, progressMessage(msg))
}

// MaxProgressMessageBytes caps a progress() message; a longer one is cut at
// a character boundary and ends with progressCutMarker.
const MaxProgressMessageBytes = 1024

const progressCutMarker = "... (cut)"

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
