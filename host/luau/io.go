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
	export("io_open", ioCall(ioOpen), []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32})
	export("io_read", ioCall(ioRead), []api.ValueType{i32, i32, i32}, []api.ValueType{i32})
	export("io_write", ioCall(ioWrite), []api.ValueType{i32, i32, i32}, []api.ValueType{i32})
	export("io_seek", ioCall(ioSeek), []api.ValueType{i32, i32, i64}, []api.ValueType{i64})
	export("io_flush", ioCall(ioFlush), []api.ValueType{i32}, []api.ValueType{i32})
	export("io_close", ioCall(ioClose), []api.ValueType{i32}, []api.ValueType{i32})
	export("io_list", ioCall(ioList), []api.ValueType{i32, i32}, []api.ValueType{i32})
	export("io_remove", ioCall(ioRemove), []api.ValueType{i32, i32}, []api.ValueType{i32})
	export("io_take", ioTake, []api.ValueType{i32, i32}, []api.ValueType{i32})
}

var errIODisabled = &sandboxio.Error{Kind: sandboxio.KindIO, Op: "io", Reason: "io is not enabled for this execution"}

// ioFunc is one io host function: it returns its result, or an error.
type ioFunc func(exec *execution, mod api.Module, stack []uint64) (uint64, error)

// ioCall adapts an ioFunc: with io disabled, or on error, the result is a
// failure status (sign-extended, for the i32 and i64 results alike) and the
// message is left pending for io_take.
func ioCall(fn ioFunc) api.GoModuleFunc {
	return func(ctx context.Context, mod api.Module, stack []uint64) {
		exec := instanceFrom(ctx).exec
		var result uint64
		var err error = errIODisabled
		if exec.fs != nil {
			result, err = fn(exec, mod, stack)
		}
		if err != nil {
			result = uint64(int64(exec.fail(err)))
		}
		stack[0] = result
	}
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

func guestBytes(mod api.Module, ptr, n uint64) []byte {
	b, ok := mod.Memory().Read(uint32(ptr), uint32(n))
	if !ok {
		panic(errors.New("luau: io buffer out of range"))
	}
	return b
}

func guestString(mod api.Module, ptr, n uint64) string { return string(guestBytes(mod, ptr, n)) }

// guestPath reads a path the script named for op, refusing one too long to
// be a path before copying it: the message shows its first bytes.
func guestPath(op string, mod api.Module, ptr, n uint64) (string, error) {
	if err := sandboxio.CheckLength(int(uint32(n))); err != nil {
		shown := guestBytes(mod, ptr, 40)
		return "", &sandboxio.Error{Kind: sandboxio.KindIO, Op: op, Path: strings.ToValidUTF8(string(shown), "?") + "...", Reason: err.Error()}
	}
	return guestString(mod, ptr, n), nil
}

func ioOpen(exec *execution, mod api.Module, stack []uint64) (uint64, error) {
	path, err := guestPath("io.open", mod, stack[0], stack[1])
	if err != nil {
		return 0, err
	}
	id, err := exec.fs.Open(path, guestString(mod, stack[2], uint64(min(uint32(stack[3]), 16))))
	return uint64(id), err
}

func ioRead(exec *execution, mod api.Module, stack []uint64) (uint64, error) {
	n, err := exec.fs.Read(int32(stack[0]), guestBytes(mod, stack[1], stack[2]))
	return uint64(n), err
}

func ioWrite(exec *execution, mod api.Module, stack []uint64) (uint64, error) {
	return 0, exec.fs.Write(int32(stack[0]), guestBytes(mod, stack[1], stack[2]))
}

func ioSeek(exec *execution, _ api.Module, stack []uint64) (uint64, error) {
	pos, err := exec.fs.Seek(int32(stack[0]), int(int32(stack[1])), int64(stack[2]))
	return uint64(pos), err
}

func ioFlush(exec *execution, _ api.Module, stack []uint64) (uint64, error) {
	return 0, exec.fs.Flush(int32(stack[0]))
}

func ioClose(exec *execution, _ api.Module, stack []uint64) (uint64, error) {
	return 0, exec.fs.Close(int32(stack[0]))
}

func ioList(exec *execution, mod api.Module, stack []uint64) (uint64, error) {
	path, err := guestPath("io.list", mod, stack[0], stack[1])
	if err != nil {
		return 0, err
	}
	names, err := exec.fs.List(path)
	if err != nil {
		return 0, err
	}
	// Names cannot contain NUL: it separates them.
	exec.pending = []byte(strings.Join(names, "\x00"))
	return uint64(len(exec.pending)), nil
}

func ioRemove(exec *execution, mod api.Module, stack []uint64) (uint64, error) {
	path, err := guestPath("os.remove", mod, stack[0], stack[1])
	if err != nil {
		return 0, err
	}
	return 0, exec.fs.Remove(path)
}

// ioTake copies the pending message or listing into the guest's buffer and
// returns its length.
func ioTake(ctx context.Context, mod api.Module, stack []uint64) {
	exec := instanceFrom(ctx).exec
	n := copy(guestBytes(mod, stack[0], stack[1]), exec.pending)
	exec.pending = nil
	stack[0] = uint64(n)
}
