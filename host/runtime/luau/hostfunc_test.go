package luau

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// TestTypedHostFunctions checks that the typed adapters hand the wasm
// arguments over with their types (an i32 sign-extended into int32, an
// f64 decoded) and write the result back as wasm reads it (an i32 in the
// low word, an i64 whole, negative statuses included), allocating nothing.
func TestTypedHostFunctions(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		fn    api.GoModuleFunction
		stack []uint64
		want  uint64 // stack[0] after the call
	}{
		{"IIII sums", funcIIII[uint32, uint32, uint32, uint32](func(_ context.Context, _ api.Module, a, b, c uint32) uint32 {
			return a + b + c
		}), []uint64{1, 2, 3}, 6},
		{"IIII negative result is the low word", funcIIII[int32, int32, uint32, uint32](func(_ context.Context, _ api.Module, h int32, _, _ uint32) int32 {
			return h - 3
		}), []uint64{1, 0, 0}, 0xfffffffe},
		{"i32 argument is sign-extended", funcII[int32, int32](func(_ context.Context, _ api.Module, a int32) int32 {
			if a != -1 {
				return 0
			}
			return 7
		}), []uint64{0xffffffff}, 7},
		{"JIIJ negative result is sign-extended", funcJIIJ[int64, int32, int32, int64](func(_ context.Context, _ api.Module, _, _ int32, off int64) int64 {
			return off - 1
		}), []uint64{0, 0, uint64(1<<64 - 1)}, uint64(1<<64 - 2)},
		{"VFFII decodes floats", funcVFFII[uint32, uint32](func(_ context.Context, _ api.Module, done, total float64, _, _ uint32) {
			if done != 1.5 || total != -1 {
				panic("floats")
			}
		}), []uint64{api.EncodeF64(1.5), api.EncodeF64(-1), 0, 0}, api.EncodeF64(1.5)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stack := make([]uint64, len(tt.stack))
			allocs := testing.AllocsPerRun(100, func() {
				copy(stack, tt.stack)
				tt.fn.Call(ctx, nil, stack)
			})
			if stack[0] != tt.want {
				t.Errorf("stack[0] = %#x, want %#x", stack[0], tt.want)
			}
			if allocs != 0 {
				t.Errorf("%v allocations per call", allocs)
			}
		})
	}
}

// TestGuestMemoryChecked checks the accessor against a real module's one
// page of memory: in range it reads and writes, out of range it panics
// (or returns) a memRangeError naming what was accessed.
func TestGuestMemoryChecked(t *testing.T) {
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	mod, err := r.Instantiate(ctx, versionModule(abiVersion))
	if err != nil {
		t.Fatal(err)
	}
	mem := mod.Memory()
	const page = 65536

	if err := tryWrite(mem, "test", page-4, []byte{1, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	if v := read32(mem, "test", page-4); v != 1 {
		t.Fatalf("read32 = %d", v)
	}
	if b := view(mem, "test", page-4, 4); len(b) != 4 || b[0] != 1 {
		t.Fatalf("view = %v", b)
	}

	outOfRange := []struct {
		name string
		do   func()
	}{
		{"view past the end", func() { view(mem, "print line", page-2, 4) }},
		{"view with a huge length", func() { view(mem, "print line", 8, 1<<32-1) }},
		{"read32 past the end", func() { read32(mem, "print line", page-3) }},
		{"tryWrite past the end", func() {
			if err := tryWrite(mem, "print line", page, []byte{1}); err != nil {
				panic(err)
			}
		}},
		{"tryView past the end", func() {
			if _, err := tryView(mem, "print line", page+1, 0); err != nil {
				panic(err)
			}
		}},
	}
	for _, tt := range outOfRange {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				err, _ := recover().(error)
				var rangeErr *memRangeError
				if !errors.As(err, &rangeErr) || !strings.Contains(err.Error(), "print line") || !strings.Contains(err.Error(), "outside guest memory (65536 bytes)") {
					t.Fatalf("recovered %v, want a memRangeError about the print line", err)
				}
			}()
			tt.do()
		})
	}
}
