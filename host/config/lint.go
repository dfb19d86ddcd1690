package config

import (
	"fmt"

	"github.com/toolscript/toolscript/host/lint"
)

// Lint is the [lint] section: the defaults of `toolscript lint`.
type Lint struct {
	// Disable names rules whose diagnostics are dropped.
	Disable []string `toml:"disable"`
	// IO lints scripts for an environment with the io library. Unset, it
	// follows [io] enabled (default true, as for run).
	IO *bool `toml:"io"`
	// Strict makes warnings fail the run too.
	Strict bool `toml:"strict"`
}

func (l Lint) check() error {
	if err := (lint.Options{Disable: l.Disable}).Validate(); err != nil {
		return fmt.Errorf("lint.disable: %w", err)
	}
	return nil
}

// LintFlags are the command-line flags of lint. Zero values mean "not given".
type LintFlags struct {
	// Disable adds rules to those the file disables.
	Disable []string
	// IO, when not nil, overrides the file.
	IO *bool
	// Strict, when true, overrides the file.
	Strict bool
}

// LintSettings are what lint runs with.
type LintSettings struct {
	Options lint.Options
	Strict  bool
}

// ResolveLint combines the [lint] section (and [io] enabled) with the flags,
// which win.
func ResolveLint(f *File, flags LintFlags) (LintSettings, error) {
	if f == nil {
		f = &File{}
	}
	s := LintSettings{Strict: f.Lint.Strict || flags.Strict}
	s.Options.Disable = append(append([]string(nil), f.Lint.Disable...), flags.Disable...)

	io := f.IO
	if io == nil {
		io = f.Output
	}
	s.Options.IO = true
	switch {
	case flags.IO != nil:
		s.Options.IO = *flags.IO
	case f.Lint.IO != nil:
		s.Options.IO = *f.Lint.IO
	case io != nil && io.Enabled != nil:
		s.Options.IO = *io.Enabled
	}
	if err := s.Options.Validate(); err != nil {
		return s, err
	}
	return s, nil
}
