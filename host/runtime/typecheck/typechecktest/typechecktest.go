// Package typechecktest owns how tests make a type checker: a Checker of
// the test's configuration, with definitions loaded when the test gives
// them, closed when the test ends. Any failure ends the test.
package typechecktest

import (
	"context"
	"testing"

	"github.com/toolscript/toolscript/host/runtime/typecheck"
)

// New returns a Checker of cfg that is closed when tb ends.
func New(tb testing.TB, cfg typecheck.Config) *typecheck.Checker {
	tb.Helper()
	c, err := typecheck.New(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// Loaded returns a Checker of cfg with definitions loaded, closed when tb
// ends.
func Loaded(tb testing.TB, cfg typecheck.Config, definitions []byte) *typecheck.Checker {
	tb.Helper()
	c := New(tb, cfg)
	if err := c.Load(definitions); err != nil {
		tb.Fatal(err)
	}
	return c
}
