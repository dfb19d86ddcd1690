//go:build !linux

package memimage

import "errors"

// Template exists on Linux only (template_linux.go): elsewhere every
// instance gets its memory from an image by copying (Apply).
type Template struct {
	Hot []PageRange
}

// Supported reports whether instances can start from a template.
const Supported = false

// NewTemplate fails: templates need Linux.
func NewTemplate([]byte) (*Template, error) {
	return nil, errors.New("memimage: memory templates need Linux")
}

func (t *Template) mapInto([]byte) error {
	return errors.New("memimage: memory templates need Linux")
}

// Size is zero: there is no template.
func (t *Template) Size() uint64 { return 0 }

// ReadAt fails: there is no template.
func (t *Template) ReadAt([]byte, int64) (int, error) {
	return 0, errors.New("memimage: memory templates need Linux")
}

// Close does nothing.
func (t *Template) Close() {}

// WrittenPages is nil: there is no template.
func (t *Template) WrittenPages([]byte) []PageRange { return nil }
