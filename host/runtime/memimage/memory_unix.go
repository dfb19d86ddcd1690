//go:build unix

package memimage

import (
	"context"

	"github.com/tetratelabs/wazero/experimental"
	"golang.org/x/sys/unix"
)

// WithAllocator makes the instance created with ctx use mmap-backed linear
// memory: the maximum is reserved once and committed as the module grows,
// so growing never copies. With wazero's default slice-backed memory a
// fresh instance that grows runs 2 to 7 times slower.
//
// With a template, the memory starts as a private copy-on-write mapping of
// it (template_linux.go), and mapped is called to say so: its pages are
// shared with the template until the instance writes them. If the mapping
// fails the memory starts zeroed, as without a template, and mapped is not
// called.
func WithAllocator(ctx context.Context, tmpl *Template, mapped func()) context.Context {
	return experimental.WithMemoryAllocator(ctx, experimental.MemoryAllocatorFunc(func(_, max uint64) experimental.LinearMemory {
		m := newMappedMemory(max)
		if tmpl != nil && cap(m.buf) > 0 && tmpl.mapInto(m.buf[:cap(m.buf)]) == nil {
			m.usable = tmpl.Size()
			if mapped != nil {
				mapped()
			}
		}
		return m
	}))
}

type mappedMemory struct {
	buf []byte // len: the memory's bytes; cap: reserved bytes
	// usable is how many bytes from the start are readable and writable:
	// at least len(buf), more when a template was mapped.
	usable uint64
}

func newMappedMemory(max uint64) *mappedMemory {
	// Reserve address space only; pages are committed by Reallocate.
	buf, err := unix.Mmap(-1, 0, int(max), unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANON|unix.MAP_NORESERVE)
	if err != nil {
		return &mappedMemory{}
	}
	return &mappedMemory{buf: buf[:0]}
}

func (m *mappedMemory) Reallocate(size uint64) []byte {
	if size > uint64(cap(m.buf)) {
		return nil
	}
	if size > m.usable {
		if err := unix.Mprotect(m.buf[m.usable:size], unix.PROT_READ|unix.PROT_WRITE); err != nil {
			return nil
		}
		m.usable = size
	}
	if size > uint64(len(m.buf)) {
		m.buf = m.buf[:size]
	}
	return m.buf
}

func (m *mappedMemory) Free() {
	if cap(m.buf) > 0 {
		_ = unix.Munmap(m.buf[:cap(m.buf)])
		m.buf = nil
	}
}
