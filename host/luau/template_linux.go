package luau

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A memoryTemplate is the linear memory of an initialised instance (the
// data segments, then what _initialize and ts_init wrote) in a sealed
// memory file. Each later instance maps it privately, copy-on-write, as
// the start of its memory: the kernel shares the template's pages until
// the instance writes one, and then gives that instance its own copy. So
// an instance costs no copy of the image and no write of the data
// segments, and pages an execution never touches are never copied. Writes
// never reach the file (the mapping is private and the file sealed
// against writes), so no execution sees another's.
type memoryTemplate struct {
	file *os.File
	size uint64
}

// templatesSupported reports whether instances can start from a template.
const templatesSupported = true

// newMemoryTemplate puts mem in a sealed memory file. Only the pages that
// are not zero are written: the rest of the file reads as zeros.
func newMemoryTemplate(mem []byte) (*memoryTemplate, error) {
	if len(mem)%os.Getpagesize() != 0 {
		return nil, fmt.Errorf("luau: a memory of %d bytes is not whole pages", len(mem))
	}
	fd, err := unix.MemfdCreate("toolscript-image", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("luau: creating the memory template: %w", err)
	}
	f := os.NewFile(uintptr(fd), "toolscript-image")
	if err := fillTemplate(f, mem); err != nil {
		f.Close()
		return nil, err
	}
	return &memoryTemplate{file: f, size: uint64(len(mem))}, nil
}

func fillTemplate(f *os.File, mem []byte) error {
	if err := f.Truncate(int64(len(mem))); err != nil {
		return fmt.Errorf("luau: sizing the memory template: %w", err)
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
			return fmt.Errorf("luau: writing the memory template: %w", err)
		}
		off = end
	}
	seals := unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, seals); err != nil {
		return fmt.Errorf("luau: sealing the memory template: %w", err)
	}
	return nil
}

// mapInto maps the template, private, copy-on-write, readable and
// writable, over the start of reserved, the address space of a memory.
func (t *memoryTemplate) mapInto(reserved []byte) error {
	if t.size == 0 || t.size > uint64(len(reserved)) {
		return fmt.Errorf("luau: a template of %d bytes does not fit a memory of %d", t.size, len(reserved))
	}
	addr := unsafe.Pointer(unsafe.SliceData(reserved))
	_, err := unix.MmapPtr(int(t.file.Fd()), 0, addr, uintptr(t.size),
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_FIXED)
	runtime.KeepAlive(t)
	if err != nil {
		return fmt.Errorf("luau: mapping the memory template: %w", err)
	}
	return nil
}

// close releases the file; instances mapped from it keep their mappings.
func (t *memoryTemplate) close() {
	if t != nil {
		_ = t.file.Close()
	}
}
