package luau

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/tetratelabs/wazero/api"
)

// instance is one instantiation of the Luau module holding one Luau state.
// It runs at most one script and is then closed: instances are never reused.
type instance struct {
	// sdk is the sdk manifest the instance was made with.
	sdk    *sdkVariant
	mod    api.Module
	mem    api.Memory
	run    api.Function
	malloc api.Function
	// sdkBuffer is ts_sdk_buffer, which allocates an sdk response.
	sdkBuffer api.Function
	sp        api.MutableGlobal
	outAddr   uint32
	// inputAddr is the shim's input buffer of inputSize bytes.
	inputAddr uint32

	// trampolines[d] calls ts_trampoline at protected-call nesting depth d:
	// a wazero api.Function is not re-entrant, so each depth needs its own.
	trampolines []api.Function
	callStacks  [][3]uint64
	depth       int

	// deadline and done stop the execution: tick checks them. deadline
	// is the execution's limit (nil between executions), done the
	// caller's cancellation.
	deadline *deadline
	done     <-chan struct{}
	// stopReason is why the execution was stopped.
	stopReason stopReason

	// clock is the instance's monotonic clock.
	clock instanceClock

	closed bool
	// fromTemplate says that the memory started as a mapping of the
	// image's template, holding the image already.
	fromTemplate bool

	// exec is the execution the instance is running: where print() lines,
	// progress and file operations go.
	exec *execution
}

type stopReason int32

const (
	notStopped stopReason = iota
	stoppedByDeadline
	stoppedByCancellation
)

type instanceKey struct{}

func withInstance(ctx context.Context, inst *instance) context.Context {
	return context.WithValue(ctx, instanceKey{}, inst)
}

func instanceFrom(ctx context.Context) *instance {
	return ctx.Value(instanceKey{}).(*instance)
}

// lookup finds the exports the host calls.
func (inst *instance) lookup(mod api.Module) error {
	inst.mod = mod
	inst.mem = mod.Memory()
	var err error
	if inst.run, err = exported(mod, "ts_run"); err != nil {
		return err
	}
	// ts_malloc and ts_sdk_buffer are looked up when first called
	// (function): most scripts call neither, and each function wazero makes
	// has a stack of its own. A module of the host's ABI version exports
	// them.
	sp, ok := mod.ExportedGlobal("__stack_pointer").(api.MutableGlobal)
	if !ok {
		return errors.New("luau: the module does not export a mutable __stack_pointer")
	}
	inst.sp = sp
	// Every script runs inside a protected call at depth 0: its function is
	// made here, while the instance waits in the pool.
	inst.trampoline(0)
	return nil
}

// initialize runs the module's initialisation in mod, instantiated without
// it, and creates the Luau state: what an image spares later instances.
func (inst *instance) initialize(ctx context.Context, mod api.Module, sdkManifest []byte) error {
	if err := checkABI(ctx, mod); err != nil {
		return err
	}
	if err := inst.lookup(mod); err != nil {
		return err
	}
	for _, name := range []string{"_initialize", "ts_out_addr", "ts_input_addr"} {
		fn, err := exported(mod, name)
		if err != nil {
			return err
		}
		res, err := fn.Call(ctx)
		if err != nil {
			return fmt.Errorf("luau: calling %s: %w", name, err)
		}
		switch name {
		case "ts_out_addr":
			inst.outAddr = uint32(res[0])
		case "ts_input_addr":
			inst.inputAddr = uint32(res[0])
		}
	}

	if len(sdkManifest) > 0 {
		// ts_init builds the sdk table from the manifest and keeps nothing
		// of it: the input buffer (or a block) holds it until then.
		ptr, err := inst.write(ctx, sdkManifest)
		if err != nil {
			return fmt.Errorf("luau: handing over the sdk manifest: %w", err)
		}
		setSDK, err := exported(mod, "ts_set_sdk")
		if err != nil {
			return err
		}
		if _, err := setSDK.Call(ctx, uint64(ptr), uint64(len(sdkManifest))); err != nil {
			return fmt.Errorf("luau: calling ts_set_sdk: %w", err)
		}
	}
	initFn, err := exported(mod, "ts_init")
	if err != nil {
		return err
	}
	res, err := initFn.Call(ctx, initHeapLimit)
	if err != nil {
		return fmt.Errorf("luau: creating the Luau state: %w", err)
	}
	if res[0] != kindOK {
		return fmt.Errorf("luau: creating the Luau state failed (kind %d)", res[0])
	}
	return nil
}

// checkABI checks, before anything else is called, that mod speaks the
// host's ABI version: a module built from another version of the shim
// would read and write the host's numbers and layouts wrongly.
func checkABI(ctx context.Context, mod api.Module) error {
	fn, err := exported(mod, "ts_abi_version")
	if err != nil {
		return err
	}
	res, err := fn.Call(ctx)
	if err != nil {
		return fmt.Errorf("luau: calling ts_abi_version: %w", err)
	}
	if v := uint32(res[0]); v != abiVersion {
		return fmt.Errorf("luau: luau.wasm has ABI version %d, this host speaks %d: rebuild the wasm", v, abiVersion)
	}
	return nil
}

// function returns *fn, the export name, looking it up the first time.
func (inst *instance) function(fn *api.Function, name string) (api.Function, error) {
	if *fn == nil {
		f, err := exported(inst.mod, name)
		if err != nil {
			return nil, err
		}
		*fn = f
	}
	return *fn, nil
}

// trampoline returns the ts_trampoline function for nesting depth d.
func (inst *instance) trampoline(d int) (api.Function, []uint64) {
	for len(inst.trampolines) <= d {
		inst.trampolines = append(inst.trampolines, inst.mod.ExportedFunction("ts_trampoline"))
		inst.callStacks = append(inst.callStacks, [3]uint64{})
	}
	return inst.trampolines[d], inst.callStacks[d][:]
}

// write copies data into guest memory, the input buffer when it fits, and
// returns its address.
func (inst *instance) write(ctx context.Context, data []byte) (uint32, error) {
	if len(data) <= inputSize {
		if err := tryWrite(inst.mem, "input", inst.inputAddr, data); err != nil {
			return 0, err
		}
		return inst.inputAddr, nil
	}
	malloc, err := inst.function(&inst.malloc, "ts_malloc")
	if err != nil {
		return 0, err
	}
	res, err := malloc.Call(ctx, uint64(len(data)))
	if err != nil {
		return 0, fmt.Errorf("luau: allocating %d bytes in the module: %w", len(data), err)
	}
	ptr := uint32(res[0])
	if ptr == 0 && len(data) > 0 {
		return 0, ErrOutOfMemory
	}
	if err := tryWrite(inst.mem, "input", ptr, data); err != nil {
		return 0, err
	}
	return ptr, nil
}

// tableUsed returns the indices of the function table's filled entries,
// with the module's ts_table_used; nil if it has none. It writes them into
// the input buffer, which the instance needs no more: it is used.
func (inst *instance) tableUsed(ctx context.Context) []uint32 {
	fn := inst.mod.ExportedFunction(tableExports.Used)
	if fn == nil {
		return nil
	}
	res, err := fn.Call(ctx, uint64(inst.inputAddr), inputSize/4)
	if err != nil {
		return nil
	}
	raw, ok := inst.mem.Read(inst.inputAddr, uint32(res[0])*4)
	if !ok {
		return nil
	}
	used := make([]uint32, len(raw)/4)
	for i := range used {
		used[i] = binary.LittleEndian.Uint32(raw[4*i:])
	}
	return used
}

// fillTable fills the function table's entries at indices, with the
// module's ts_table_fill. The indices travel in the input buffer, whose
// bytes are put back afterwards: the memory is the image's again, byte
// for byte.
func (inst *instance) fillTable(ctx context.Context, indices []uint32) error {
	if len(indices) == 0 {
		return nil
	}
	size := uint32(4 * len(indices))
	if size > inputSize {
		return fmt.Errorf("luau: %d table entries to fill do not fit the input buffer", len(indices))
	}
	buf, ok := inst.mem.Read(inst.inputAddr, size)
	if !ok {
		return fmt.Errorf("luau: the input buffer at %d is outside the memory", inst.inputAddr)
	}
	saved := bytes.Clone(buf)
	for k, i := range indices {
		binary.LittleEndian.PutUint32(buf[4*k:], i)
	}
	fn, err := exported(inst.mod, tableExports.Fill)
	if err != nil {
		copy(buf, saved)
		return err
	}
	if _, err := fn.Call(ctx, uint64(inst.inputAddr), uint64(len(indices))); err != nil {
		// The memory is not touched again: with Config.StopOnContextDone
		// a call that ctx stopped has closed the module and unmapped its
		// memory, and buf with it. The caller drops the instance.
		return fmt.Errorf("luau: filling the function table: %w", err)
	}
	if buf, ok = inst.mem.Read(inst.inputAddr, size); !ok {
		return fmt.Errorf("luau: the input buffer at %d is outside the memory", inst.inputAddr)
	}
	copy(buf, saved)
	return nil
}

// initHeapLimit bounds the Luau heap while ts_init builds the environment,
// before ts_run sets the script's own limit.
const initHeapLimit = 16 << 20

// ErrOutOfMemory is the error of a call into the module that needed more
// memory than the instance may have.
var ErrOutOfMemory = errors.New("luau: the module is out of memory")

func (inst *instance) close() {
	if !inst.closed {
		inst.closed = true
		_ = inst.mod.Close(context.Background())
	}
}
