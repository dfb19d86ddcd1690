package memimage

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A Template is the linear memory of an initialised instance (the data
// segments, then what its initialisation wrote) in a sealed memory file.
// Each later instance maps it privately, copy-on-write, as the start of
// its memory: the kernel shares the template's pages until the instance
// writes one, and then gives that instance its own copy. So an instance
// costs no copy of the image and no write of the data segments, and pages
// an execution never touches are never copied. Writes
// never reach the file (the mapping is private and the file sealed
// against writes), so no execution sees another's.
type Template struct {
	file *os.File
	size uint64
	// Hot are the pages an execution writes in any case, which instances
	// copy as soon as they map the template. Set it before the template
	// is first used (WrittenPages of an instance that ran).
	Hot []PageRange
}

// Supported reports whether instances can start from a template.
const Supported = true

// NewTemplate puts mem in a sealed memory file. Only the pages that are
// not zero are written: the rest of the file reads as zeros.
func NewTemplate(mem []byte) (*Template, error) {
	if len(mem)%os.Getpagesize() != 0 {
		return nil, fmt.Errorf("memimage: a memory of %d bytes is not whole pages", len(mem))
	}
	fd, err := unix.MemfdCreate("toolscript-image", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("memimage: creating the memory template: %w", err)
	}
	f := os.NewFile(uintptr(fd), "toolscript-image")
	if err := fillTemplate(f, mem); err != nil {
		f.Close()
		return nil, err
	}
	return &Template{file: f, size: uint64(len(mem))}, nil
}

func fillTemplate(f *os.File, mem []byte) error {
	if err := f.Truncate(int64(len(mem))); err != nil {
		return fmt.Errorf("memimage: sizing the memory template: %w", err)
	}
	page := os.Getpagesize()
	zero := make([]byte, page)
	for off := 0; off < len(mem); {
		if bytes.Equal(mem[off:off+page], zero) {
			off += page
			continue
		}
		end := off + page
		for end < len(mem) && !bytes.Equal(mem[end:end+page], zero) {
			end += page
		}
		if _, err := f.WriteAt(mem[off:end], int64(off)); err != nil {
			return fmt.Errorf("memimage: writing the memory template: %w", err)
		}
		off = end
	}
	seals := unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, seals); err != nil {
		return fmt.Errorf("memimage: sealing the memory template: %w", err)
	}
	return nil
}

// mapInto maps the template, private, copy-on-write, readable and
// writable, over the start of reserved, the address space of a memory.
func (t *Template) mapInto(reserved []byte) error {
	if t.size == 0 || t.size > uint64(len(reserved)) {
		return fmt.Errorf("memimage: a template of %d bytes does not fit a memory of %d", t.size, len(reserved))
	}
	addr := unsafe.Pointer(unsafe.SliceData(reserved))
	_, err := unix.MmapPtr(int(t.file.Fd()), 0, addr, uintptr(t.size),
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_FIXED)
	runtime.KeepAlive(t)
	if err != nil {
		return fmt.Errorf("memimage: mapping the memory template: %w", err)
	}
	// Copy the pages every execution writes now, while the instance waits
	// in the pool, rather than during the execution: a write that changes
	// nothing (adding zero, atomically, to a page's first word) makes the
	// kernel give the instance its copy. One write fault a page costs
	// about a quarter less than MADV_POPULATE_WRITE over the same pages,
	// and needs no lock on the process's whole memory map.
	for _, h := range t.Hot {
		for off := h.Offset; off < h.Offset+h.Length; off += pageSize {
			atomic.AddUint32((*uint32)(unsafe.Pointer(&reserved[off])), 0)
		}
	}
	return nil
}

// pageSize is the host's page size: the unit the kernel copies.
var pageSize = uint64(os.Getpagesize())

// Size is the template's length in bytes.
func (t *Template) Size() uint64 { return t.size }

// ReadAt reads the template's file, as io.ReaderAt.
func (t *Template) ReadAt(p []byte, off int64) (int, error) { return t.file.ReadAt(p, off) }

// Close releases the file; instances mapped from it keep their mappings.
// A nil template is closed already.
func (t *Template) Close() {
	if t != nil {
		_ = t.file.Close()
	}
}

// WrittenPages returns the pages of mem, a memory that started as a
// mapping of t, that the instance has written since: those the kernel
// has given the instance its own copy of, as /proc/self/pagemap says (a
// present page that is not the file's). It returns nil if pagemap cannot
// be read.
func (t *Template) WrittenPages(mem []byte) []PageRange {
	page := uint64(os.Getpagesize())
	n := min(uint64(len(mem)), t.size) / page
	if n == 0 {
		return nil
	}
	f, err := os.Open("/proc/self/pagemap")
	if err != nil {
		return nil
	}
	defer f.Close()
	entries := make([]byte, 8*n)
	first := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(mem)))) / page
	if _, err := f.ReadAt(entries, int64(first*8)); err != nil {
		return nil
	}
	const present, fileOrShared = 1 << 63, 1 << 61
	var ranges []PageRange
	for i := range n {
		e := binary.LittleEndian.Uint64(entries[8*i:])
		if e&present == 0 || e&fileOrShared != 0 {
			continue
		}
		if k := len(ranges); k > 0 && ranges[k-1].Offset+ranges[k-1].Length == i*page {
			ranges[k-1].Length += page
		} else {
			ranges = append(ranges, PageRange{Offset: i * page, Length: page})
		}
	}
	return ranges
}
