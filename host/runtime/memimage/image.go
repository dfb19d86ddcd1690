// Package memimage keeps the linear memory of an initialised WebAssembly
// instance as an image that later instances of the same module start from,
// so that each gets the initialised state, byte for byte, without running
// the initialisation again. It owns the two forms an image takes:
//   - runs (Diff, Apply): the pages that differ from a fresh
//     instantiation, which a new instance copies in;
//   - a template (Template, Linux only): the whole memory in a sealed
//     memory file, which a new instance maps privately, copy-on-write, as
//     the start of its memory (WithAllocator), so that it costs no copy and
//     no instance's writes reach another.
//
// WithAllocator also gives every instance mmap-backed memory that grows
// without copying. What an image must hold beside the memory (globals, the
// module's own buffers) is its user's: host/runtime/luau (the VM) and
// host/runtime/typecheck (the type checker) use it.
package memimage

import "bytes"

// PageRange is a run of whole pages of a memory.
type PageRange struct{ Offset, Length uint64 }

// Run is a run of consecutive pages of an image.
type Run struct {
	Offset uint32
	Data   []byte
}

// PageSize is the granularity of runs: the host's page size on the
// platforms toolscript runs on, so that applying them touches no page they
// do not write.
const PageSize = 4096

// Diff returns the pages of mem that differ from fresh, the memory of an
// instance as wazero instantiates it (zeros beyond its end), as runs.
func Diff(mem, fresh []byte) []Run {
	var runs []Run
	var zero [PageSize]byte
	size := uint32(len(mem))
	for off := uint32(0); off < size; off += PageSize {
		page := mem[off:min(off+PageSize, size)]
		base := zero[:len(page)]
		if off < uint32(len(fresh)) {
			base = fresh[off:min(off+PageSize, uint32(len(fresh)))]
			if len(base) < len(page) { // the fresh memory ends inside the page
				base = append(append([]byte(nil), base...), zero[:len(page)-len(base)]...)
			}
		}
		if bytes.Equal(page, base) {
			continue
		}
		if n := len(runs); n > 0 && runs[n-1].Offset+uint32(len(runs[n-1].Data)) == off {
			runs[n-1].Data = append(runs[n-1].Data, page...)
		} else {
			runs = append(runs, Run{Offset: off, Data: append([]byte(nil), page...)})
		}
	}
	return runs
}

// Apply copies runs into mem, the memory of a fresh instance.
func Apply(mem []byte, runs []Run) {
	for _, run := range runs {
		copy(mem[run.Offset:], run.Data)
	}
}
