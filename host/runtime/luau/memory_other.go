//go:build !unix

package luau

import "context"

// withMemoryAllocator leaves wazero's default slice-backed memory in place
// where mmap is not available; there are no templates there.
func withMemoryAllocator(ctx context.Context, _ *instance, _ *memoryTemplate) context.Context {
	return ctx
}
