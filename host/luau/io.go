package luau

import (
	"context"
	"errors"
	"strings"

	"github.com/tetratelabs/wazero/api"

	"github.com/toolscript/toolscript/host/sandboxio"
)

// The host side of the io library (luau-build/shim/io.cpp). Every call moves
// bytes directly between a file and guest memory in bounded chunks the
// guest chooses, so host memory stays bounded whatever the file sizes.
//
// A failed call returns ioFailed or ioOverLimit and leaves its message
// pending; the guest fetches it (or a listing) with io_take and raises it.

const (
	ioFailed    = -1 // a sandbox refusal or I/O failure: error kind io
	ioOverLimit = -2 // a budget: error kind limit
)

func exportIO(export func(string, api.GoModuleFunc, []api.ValueType, []api.ValueType)) {
	i32, i64 := api.ValueTypeI32, api.ValueTypeI64
	export("io_open", ioOpen, []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32})
	export("io_read", ioRead, []api.ValueType{i32, i32, i32}, []api.ValueType{i32})
	export("io_write", ioWrite, []api.ValueType{i32, i32, i32}, []api.ValueType{i32})
	export("io_seek", ioSeek, []api.ValueType{i32, i32, i64}, []api.ValueType{i64})
	export("io_flush", ioFlush, []api.ValueType{i32}, []api.ValueType{i32})
	export("io_close", ioClose, []api.ValueType{i32}, []api.ValueType{i32})
	export("io_list", ioList, []api.ValueType{i32, i32}, []api.ValueType{i32})
	export("io_remove", ioRemove, []api.ValueType{i32, i32}, []api.ValueType{i32})
	export("io_take", ioTake, []api.ValueType{i32, i32}, []api.ValueType{i32})
}

var errIODisabled = &sandboxio.Error{Kind: sandboxio.KindIO, Op: "io", Reason: "io is not enabled for this execution"}

// ioState returns the execution and its file system.
func ioState(ctx context.Context) (*execution, *sandboxio.FS) {
	exec := instanceFrom(ctx).exec
	if exec == nil {
		return nil, nil
	}
	return exec, exec.fs
}

// fail leaves err's message pending and returns its status code.
func (e *execution) fail(err error) int32 {
	e.pending = []byte(err.Error())
	var se *sandboxio.Error
	if errors.As(err, &se) && se.Kind == sandboxio.KindLimit {
		return ioOverLimit
	}
	return ioFailed
}

func guestString(mod api.Module, ptr, n uint64) string {
	b, ok := mod.Memory().Read(uint32(ptr), uint32(n))
	if !ok {
		panic(errors.New("luau: io argument out of range"))
	}
	return string(b)
}

func guestBytes(mod api.Module, ptr, n uint64) []byte {
	b, ok := mod.Memory().Read(uint32(ptr), uint32(n))
	if !ok {
		panic(errors.New("luau: io buffer out of range"))
	}
	return b
}

func status(v int32) uint64 { return uint64(uint32(v)) }

func ioOpen(ctx context.Context, mod api.Module, stack []uint64) {
	exec, fs := ioState(ctx)
	if fs == nil {
		stack[0] = status(exec.fail(errIODisabled))
		return
	}
	id, err := fs.Open(guestString(mod, stack[0], stack[1]), guestString(mod, stack[2], stack[3]))
	if err != nil {
		stack[0] = status(exec.fail(err))
		return
	}
	stack[0] = status(id)
}

func ioRead(ctx context.Context, mod api.Module, stack []uint64) {
	exec, fs := ioState(ctx)
	if fs == nil {
		stack[0] = status(exec.fail(errIODisabled))
		return
	}
	n, err := fs.Read(int32(stack[0]), guestBytes(mod, stack[1], stack[2]))
	if err != nil {
		stack[0] = status(exec.fail(err))
		return
	}
	stack[0] = status(int32(n))
}

func ioWrite(ctx context.Context, mod api.Module, stack []uint64) {
	exec, fs := ioState(ctx)
	if fs == nil {
		stack[0] = status(exec.fail(errIODisabled))
		return
	}
	if err := fs.Write(int32(stack[0]), guestBytes(mod, stack[1], stack[2])); err != nil {
		stack[0] = status(exec.fail(err))
		return
	}
	stack[0] = 0
}

func ioSeek(ctx context.Context, _ api.Module, stack []uint64) {
	exec, fs := ioState(ctx)
	if fs == nil {
		stack[0] = uint64(int64(exec.fail(errIODisabled)))
		return
	}
	pos, err := fs.Seek(int32(stack[0]), int(int32(stack[1])), int64(stack[2]))
	if err != nil {
		stack[0] = uint64(int64(exec.fail(err)))
		return
	}
	stack[0] = uint64(pos)
}

func ioFlush(ctx context.Context, _ api.Module, stack []uint64) {
	exec, fs := ioState(ctx)
	if fs == nil {
		stack[0] = status(exec.fail(errIODisabled))
		return
	}
	if err := fs.Flush(int32(stack[0])); err != nil {
		stack[0] = status(exec.fail(err))
		return
	}
	stack[0] = 0
}

func ioClose(ctx context.Context, _ api.Module, stack []uint64) {
	exec, fs := ioState(ctx)
	if fs == nil {
		stack[0] = status(exec.fail(errIODisabled))
		return
	}
	if err := fs.Close(int32(stack[0])); err != nil {
		stack[0] = status(exec.fail(err))
		return
	}
	stack[0] = 0
}

func ioList(ctx context.Context, mod api.Module, stack []uint64) {
	exec, fs := ioState(ctx)
	if fs == nil {
		stack[0] = status(exec.fail(errIODisabled))
		return
	}
	names, err := fs.List(guestString(mod, stack[0], stack[1]))
	if err != nil {
		stack[0] = status(exec.fail(err))
		return
	}
	// Names cannot contain NUL: it separates them.
	exec.pending = []byte(strings.Join(names, "\x00"))
	stack[0] = status(int32(len(exec.pending)))
}

func ioRemove(ctx context.Context, mod api.Module, stack []uint64) {
	exec, fs := ioState(ctx)
	if fs == nil {
		stack[0] = status(exec.fail(errIODisabled))
		return
	}
	if err := fs.Remove(guestString(mod, stack[0], stack[1])); err != nil {
		stack[0] = status(exec.fail(err))
		return
	}
	stack[0] = 0
}

// ioTake copies the pending message or listing into the guest's buffer and
// returns its length.
func ioTake(ctx context.Context, mod api.Module, stack []uint64) {
	exec := instanceFrom(ctx).exec
	buf := guestBytes(mod, stack[0], stack[1])
	n := copy(buf, exec.pending)
	exec.pending = nil
	stack[0] = status(int32(n))
}
