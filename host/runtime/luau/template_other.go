//go:build !linux

package luau

import "errors"

// memoryTemplate exists on Linux only (template_linux.go): elsewhere every
// instance gets its memory from the image by copying.
type memoryTemplate struct {
	size uint64
	hot  []pageRange
}

const templatesSupported = false

func newMemoryTemplate([]byte) (*memoryTemplate, error) {
	return nil, errors.New("luau: memory templates need Linux")
}

func (t *memoryTemplate) mapInto([]byte) error {
	return errors.New("luau: memory templates need Linux")
}

func (t *memoryTemplate) close() {}

type pageRange struct{ offset, length uint64 }

func (t *memoryTemplate) writtenPages([]byte) []pageRange { return nil }
