package luau

import (
	"fmt"

	"github.com/tetratelabs/wazero/api"
)

// Guest memory, every access checked: the one place the host reads or
// writes the module's linear memory. An address or length the guest hands
// over that falls outside its memory is a broken module (or a broken ABI),
// never the script's doing; inside a host function it panics with a
// memRangeError, which wazero turns into the call's error and the
// execution reports as an internal error.

// memRangeError is an access outside guest memory.
type memRangeError struct {
	what      string
	ptr, size uint64
	memSize   uint32
}

func (e *memRangeError) Error() string {
	return fmt.Sprintf("luau: %s: %d bytes at %#x are outside guest memory (%d bytes)", e.what, e.size, e.ptr, e.memSize)
}

// tryView returns the size bytes of guest memory at ptr (memory the guest
// owns: valid until it next grows its memory), or an error naming what
// when they are out of range.
func tryView(mem api.Memory, what string, ptr, size uint32) ([]byte, error) {
	b, ok := mem.Read(ptr, size)
	if !ok {
		return nil, &memRangeError{what: what, ptr: uint64(ptr), size: uint64(size), memSize: mem.Size()}
	}
	return b, nil
}

// view is tryView for host functions: out of range panics.
func view(mem api.Memory, what string, ptr, size uint32) []byte {
	b, err := tryView(mem, what, ptr, size)
	if err != nil {
		panic(err)
	}
	return b
}

// read32 reads the little-endian 32-bit word at ptr; out of range panics.
func read32(mem api.Memory, what string, ptr uint32) uint32 {
	v, ok := mem.ReadUint32Le(ptr)
	if !ok {
		panic(&memRangeError{what: what, ptr: uint64(ptr), size: 4, memSize: mem.Size()})
	}
	return v
}

// tryWrite copies data into guest memory at ptr.
func tryWrite(mem api.Memory, what string, ptr uint32, data []byte) error {
	if !mem.Write(ptr, data) {
		return &memRangeError{what: what, ptr: uint64(ptr), size: uint64(len(data)), memSize: mem.Size()}
	}
	return nil
}
