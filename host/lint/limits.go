package lint

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/toolscript/toolscript/host/runtime/luau"
)

// What one file may cost a lint run. A script under review can be hostile
// (a pull request's): whatever it holds, it is reported as far as these
// allow, and it cannot take the other files' reports down with it.
const (
	// MaxDiagnosticsPerFile is how many diagnostics a file reports; a
	// final too_many_diagnostics diagnostic counts the rest.
	MaxDiagnosticsPerFile = 1000
	// DefaultFileTimeout is how long linting one file may take
	// (Options.FileTimeout).
	DefaultFileTimeout = 10 * time.Second
)

// lintFile lints one source within the time allowed per file. When the
// module fails on the source (it runs out of memory or of time, or traps)
// the source gets one lint_failed diagnostic that says so, and the run
// goes on; an error is the run's own failure (its context ended, an
// instance could not be created).
func lintFile(ctx context.Context, linter *luau.Linter, src Source, timeout time.Duration) ([]luau.LintDiagnostic, *Diagnostic, error) {
	fileCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	diags, err := linter.Lint(fileCtx, src.Text)
	if err == nil {
		return diags, nil, nil
	}
	if ctx.Err() != nil {
		return nil, nil, ctx.Err()
	}
	var (
		failure *luau.LintFailure
		why     string
	)
	switch {
	case fileCtx.Err() != nil:
		why = fmt.Sprintf("linting it took longer than the %s allowed per file", timeout)
	case errors.Is(err, luau.ErrOutOfMemory):
		why = "linting it ran out of the linter's memory (a file with a very large number of errors does this)"
	case errors.As(err, &failure):
		why = "the linter failed on it: " + firstLine(err.Error())
	default:
		return nil, nil, err
	}
	return nil, &Diagnostic{
		File: src.Name, Line: 1, Column: 1, EndLine: 1, EndColumn: 1,
		Severity: Error, Rule: RuleLintFailed,
		Message: "the file is not checked: " + why,
	}, nil
}

// firstLine drops what follows the first line of a module's error: its
// wasm stack trace.
func firstLine(s string) string {
	for i := range len(s) {
		if s[i] == '\n' {
			return s[:i]
		}
	}
	return s
}

// capDiagnostics keeps a file's first MaxDiagnosticsPerFile diagnostics
// (in the order of their positions) and, past them, adds one that counts
// the rest, at the first one left out, as severe as the most severe of
// them.
func capDiagnostics(diags []Diagnostic) []Diagnostic {
	if len(diags) <= MaxDiagnosticsPerFile {
		return diags
	}
	rest := diags[MaxDiagnosticsPerFile:]
	errs := 0
	for _, d := range rest {
		if d.Severity == Error {
			errs++
		}
	}
	summary := rest[0]
	summary.Rule, summary.Severity = RuleTooManyDiagnostics, Warning
	if errs > 0 {
		summary.Severity = Error
	}
	summary.Message = fmt.Sprintf("%d more diagnostics not shown (%d errors, %d warnings): lint reports at most %d per file",
		len(rest), errs, len(rest)-errs, MaxDiagnosticsPerFile)
	return append(diags[:MaxDiagnosticsPerFile:MaxDiagnosticsPerFile], summary)
}

// uncheckedEffects are the effects of a file lint could not check:
// nothing is known.
func uncheckedEffects(src Source) Effects {
	return Effects{File: src.Name, Unsafe: []Reach{}, Safe: []Reach{}, IO: []Reach{}, Unnamed: []Reach{}}
}
