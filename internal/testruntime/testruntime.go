// Package testruntime makes the luau Runtimes tests run scripts on: one
// per test, closed when the test ends, or one shared by a whole test
// package, made on first use (compiling the module is the expensive part).
package testruntime

import (
	"context"
	"sync"
	"testing"

	"github.com/toolscript/toolscript/host/runtime/luau"
)

// New returns a Runtime of cfg that is closed when tb ends.
func New(tb testing.TB, cfg luau.Config) *luau.Runtime {
	tb.Helper()
	rt, err := luau.New(context.Background(), cfg)
	if err != nil {
		tb.Fatalf("luau.New: %v", err)
	}
	tb.Cleanup(func() { rt.Close(context.Background()) })
	return rt
}

// Shared is one Runtime for a test package, made by its first Get.
type Shared struct {
	cfg  luau.Config
	once sync.Once
	rt   *luau.Runtime
	err  error
}

// NewShared returns a Shared that makes its Runtime with cfg.
func NewShared(cfg luau.Config) *Shared {
	return &Shared{cfg: cfg}
}

// Get returns the shared Runtime, made on the first call.
func (s *Shared) Get(tb testing.TB) *luau.Runtime {
	tb.Helper()
	s.once.Do(func() {
		s.rt, s.err = luau.New(context.Background(), s.cfg)
	})
	if s.err != nil {
		tb.Fatalf("luau.New: %v", s.err)
	}
	return s.rt
}

// Close closes the Runtime if one was made; TestMain calls it after the
// package's tests.
func (s *Shared) Close() {
	if s.rt != nil {
		s.rt.Close(context.Background())
	}
}
