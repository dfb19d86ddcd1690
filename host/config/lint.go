package config

// Lint is the [lint] section: the defaults of `toolscript lint`. Its rule
// names are lint's to check (host/app does, after Load).
type Lint struct {
	// Disable names rules whose diagnostics are dropped.
	Disable []string `toml:"disable"`
	// IO lints scripts for an environment with the io library. Unset, it
	// follows [io] enabled (default true, as for run).
	IO *bool `toml:"io"`
	// Strict makes warnings fail the run too.
	Strict bool `toml:"strict"`
	// Types also type-checks the scripts against the sdk's definitions
	// (lint --types).
	Types bool `toml:"types"`
}

// LintFlags are the command-line flags of lint. Zero values mean "not given".
type LintFlags struct {
	// Disable adds rules to those the file disables.
	Disable []string
	// IO, when not nil, overrides the file.
	IO *bool
	// Strict, when true, overrides the file.
	Strict bool
	// Types, when true, overrides the file.
	Types bool
}

// LintSettings are what lint runs with.
type LintSettings struct {
	// Disable are the rules whose diagnostics are dropped: the file's,
	// then the flags'.
	Disable []string
	// IO lints for an environment with the io library.
	IO     bool
	Strict bool
	// Types type-checks the scripts against the sdk's definitions.
	Types bool
}

// ResolveLint combines the [lint] section (and [io] enabled) with the flags,
// which win.
func ResolveLint(f *File, flags LintFlags) LintSettings {
	if f == nil {
		f = &File{}
	}
	s := LintSettings{Strict: f.Lint.Strict || flags.Strict, Types: f.Lint.Types || flags.Types}
	s.Disable = append(append([]string(nil), f.Lint.Disable...), flags.Disable...)

	io := f.IO
	if io == nil {
		io = f.Output
	}
	s.IO = true
	switch {
	case flags.IO != nil:
		s.IO = *flags.IO
	case f.Lint.IO != nil:
		s.IO = *f.Lint.IO
	case io != nil && io.Enabled != nil:
		s.IO = *io.Enabled
	}
	return s
}
