//go:build !unix

package luau

import "context"

// withMemoryAllocator leaves wazero's default slice-backed memory in place
// where mmap is not available.
func withMemoryAllocator(ctx context.Context) context.Context { return ctx }
