package memimage_test

import (
	"bytes"
	"testing"

	"github.com/toolscript/toolscript/host/runtime/memimage"
)

// TestDiffApplyRestoresTheMemory: applying a memory's runs to the fresh
// memory they were taken against gives the memory back, and only the pages
// that differ are kept.
func TestDiffApplyRestoresTheMemory(t *testing.T) {
	const page = memimage.PageSize
	tests := []struct {
		name      string
		freshLen  int
		writes    []int // offsets written in mem
		wantPages int
	}{
		{"nothing written", 4 * page, nil, 0},
		{"one page", 4 * page, []int{page + 7}, 1},
		{"adjacent pages make one run", 4 * page, []int{page, 2*page + 1}, 2},
		{"beyond the fresh memory", 2 * page, []int{3 * page}, 1},
		{"fresh memory ends inside a page", page + 100, []int{page + 200}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fresh := make([]byte, tt.freshLen)
			for i := range fresh {
				fresh[i] = byte(i % 251)
			}
			mem := make([]byte, 4*page)
			copy(mem, fresh)
			for _, off := range tt.writes {
				mem[off] ^= 0xff
			}
			runs := memimage.Diff(mem, fresh)
			kept := 0
			for _, r := range runs {
				kept += len(r.Data)
			}
			if kept != tt.wantPages*page {
				t.Errorf("runs keep %d bytes, want %d pages", kept, tt.wantPages)
			}
			restored := make([]byte, len(mem))
			copy(restored, fresh)
			memimage.Apply(restored, runs)
			if !bytes.Equal(restored, mem) {
				t.Error("the restored memory differs from the memory")
			}
		})
	}
}
