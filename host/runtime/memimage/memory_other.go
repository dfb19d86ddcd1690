//go:build !unix

package memimage

import "context"

// WithAllocator leaves wazero's default slice-backed memory in place where
// mmap is not available; there are no templates there.
func WithAllocator(ctx context.Context, _ *Template, _ func()) context.Context {
	return ctx
}
