package lint

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/toolscript/toolscript/host/runtime/luau"
)

// Options configures a lint run.
type Options struct {
	// IO lints for an environment with the io library (io, os.remove,
	// file). Without it, using them is an io_disabled error.
	IO bool
	// Disable names rules whose diagnostics are dropped. Syntax errors
	// cannot be disabled.
	Disable []string
	// Workers is how many scripts are linted at once, each worker in its
	// own module instance. Zero means GOMAXPROCS.
	Workers int
	// Effects also finds what each script can change (Report.Effects):
	// the sdk functions it names, its io writes, and what it reaches
	// without naming it.
	Effects bool
	// Functions says, for Effects, whether an sdk function (by its
	// qualified name, sdk.api.fn) is unsafe and what it does; a function
	// it does not know counts as unsafe.
	Functions func(name string) (Function, bool)
	// FileTimeout is how long linting one file may take; a file that takes
	// longer gets a lint_failed diagnostic. Zero means DefaultFileTimeout.
	// A Runtime stops the module only with luau.Config.StopOnContextDone.
	FileTimeout time.Duration
	// Stoppable, when set, returns a Runtime made with
	// luau.Config.StopOnContextDone, which lints the files larger than
	// SmallFileBytes, so that FileTimeout can stop the module wherever it
	// is; the Runtime Run is given lints the others, whose time their size
	// bounds. It is called once, when the first such file comes; the
	// caller closes the Runtime. Without it, Run's Runtime lints every file.
	Stoppable func() (*luau.Runtime, error)
	// Types, when set, also type-checks every script that parses against
	// the sdk's definitions (lint --types): diagnostics of rule type.
	Types TypeChecker
}

// SmallFileBytes is the size up to which a file is linted without the
// deadline's checks (Options.Stoppable), which make linting about four
// times as slow (BenchmarkLint1000): the slowest such file found, 64 KiB
// of ")" (a syntax error per byte), lints in about a second.
const SmallFileBytes = 64 << 10

// Validate checks that Disable names existing rules that may be disabled.
func (o Options) Validate() error {
	for _, name := range o.Disable {
		if name == RuleSyntax || reportedByHost(name) {
			return fmt.Errorf("lint: the %s rule cannot be disabled", name)
		}
		if _, ok := findRule(Rules(), name); !ok {
			return fmt.Errorf("lint: unknown rule %q (rules: %s)", name, strings.Join(RuleNames(), ", "))
		}
	}
	return nil
}

// Diagnostic is one problem in one script. Lines and columns are 1-based;
// columns count characters (Unicode code points). EndLine and EndColumn
// mark the position just past the end of the problem's text.
type Diagnostic struct {
	File      string   `json:"file"`
	Line      int      `json:"line"`
	Column    int      `json:"column"`
	EndLine   int      `json:"end_line"`
	EndColumn int      `json:"end_column"`
	Severity  Severity `json:"severity"`
	Rule      string   `json:"rule"`
	Message   string   `json:"message"`
}

// Report is the outcome of a lint run.
type Report struct {
	// Files is how many scripts were linted.
	Files int
	// Diagnostics are ordered by file (in the order the scripts were
	// given), then by position.
	Diagnostics []Diagnostic
	// Effects are, with Options.Effects, what each script can change, in
	// the order the scripts were given.
	Effects []Effects
}

// Count returns the number of errors and of warnings.
func (r *Report) Count() (errors, warnings int) {
	for _, d := range r.Diagnostics {
		if d.Severity == Error {
			errors++
		} else {
			warnings++
		}
	}
	return errors, warnings
}

// Failed reports whether the run fails: any error, or in strict mode any
// diagnostic at all.
func (r *Report) Failed(strict bool) bool {
	errors, warnings := r.Count()
	return errors > 0 || (strict && warnings > 0)
}

// Run lints sources with the module of rt and returns their diagnostics,
// at most MaxDiagnosticsPerFile per file. A file the module fails on (it
// runs out of memory or of time, or traps) gets a lint_failed diagnostic
// and the others are reported. An error means linting itself failed (ctx
// ended, the module could not be instantiated), not that a script has
// problems.
func Run(ctx context.Context, rt *luau.Runtime, sources []Source, opts Options) (*Report, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	rules := Rules()
	disabled := make(map[string]bool, len(opts.Disable))
	for _, name := range opts.Disable {
		disabled[name] = true
	}

	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, len(sources))
	timeout := cmp.Or(opts.FileTimeout, DefaultFileTimeout)

	results := make([][]Diagnostic, len(sources))
	var effects []Effects
	if opts.Effects {
		effects = make([]Effects, len(sources))
	}
	jobs := make(chan int)
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		failOnce sync.Once
		failure  error
	)
	// fail ends the run with the first error linting itself met.
	fail := func(name string, err error) {
		failOnce.Do(func() {
			failure = fmt.Errorf("lint: %s: %w", name, err)
			cancel()
		})
	}

	lintOptions := luau.LintOptions{IO: opts.IO, Effects: opts.Effects}
	var stoppable func() (*luau.Runtime, error)
	if opts.Stoppable != nil {
		stoppable = sync.OnceValues(opts.Stoppable)
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			linter := rt.NewLinter(lintOptions)
			defer linter.Close()
			var large *luau.Linter // of the stoppable Runtime, made for the first large file
			defer func() {
				if large != nil {
					large.Close()
				}
			}()
			for i := range jobs {
				use := linter
				if stoppable != nil && len(sources[i].Text) > SmallFileBytes {
					if large == nil {
						srt, err := stoppable()
						if err != nil {
							fail(sources[i].Name, err)
							continue
						}
						large = srt.NewLinter(lintOptions)
					}
					use = large
				}
				diags, failed, err := lintFile(ctx, use, sources[i], timeout)
				if err != nil {
					fail(sources[i].Name, err)
					continue // drain the remaining jobs
				}
				if failed != nil {
					results[i] = []Diagnostic{*failed}
					if opts.Effects {
						effects[i] = uncheckedEffects(sources[i])
					}
					continue
				}
				found, eff, err := diagnose(ctx, opts, rules, disabled, sources[i], diags)
				if opts.Effects {
					effects[i] = eff
				}
				if err != nil {
					fail(sources[i].Name, err)
					continue
				}
				results[i] = found
			}
		})
	}
feed:
	for i := range sources {
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()

	if err := parent.Err(); err != nil {
		return nil, err
	}
	if failure != nil {
		return nil, failure
	}
	report := &Report{Files: len(sources), Effects: effects}
	for _, diags := range results {
		report.Diagnostics = append(report.Diagnostics, diags...)
	}
	return report, nil
}

// diagnose makes the module's diagnostics of src its Diagnostics (the
// rules' severities, columns in characters, disabled rules dropped), with
// the type checker's when opts asks for them, and its Effects when opts
// asks for them. An error means the type checker could not be used.
func diagnose(ctx context.Context, opts Options, rules []Rule, disabled map[string]bool, src Source, diags []luau.LintDiagnostic) ([]Diagnostic, Effects, error) {
	diags = withoutNolintType(diags)
	charColumns(src.Text, diags)
	var eff Effects
	if opts.Effects {
		eff = effectsOf(src, diags, opts.Functions)
	}
	found := convert(src, diags, rules, disabled)
	if opts.Types != nil && !disabled[RuleType] && !hasSyntaxError(diags) {
		var err error
		if found, err = withTypes(ctx, opts.Types, src, found); err != nil {
			return nil, eff, err
		}
	}
	return capDiagnostics(found), eff, nil
}

// convert turns the module's diagnostics for one source, their columns
// already in characters (charColumns), into Diagnostics: named, with a
// severity, disabled rules dropped, in the order of their positions.
func convert(src Source, diags []luau.LintDiagnostic, rules []Rule, disabled map[string]bool) []Diagnostic {
	if len(diags) == 0 {
		return nil
	}
	out := make([]Diagnostic, 0, len(diags))
	for _, d := range diags {
		if disabled[d.Rule] || isEffect(d.Rule) {
			continue
		}
		severity := Error
		if rule, ok := findRule(rules, d.Rule); ok {
			severity = rule.Severity
		}
		out = append(out, Diagnostic{
			File:      src.Name,
			Line:      d.Line,
			Column:    d.Column,
			EndLine:   d.EndLine,
			EndColumn: d.EndColumn,
			Severity:  severity,
			Rule:      d.Rule,
			Message:   d.Message,
		})
	}
	return sortByPosition(out)
}

// sortByPosition orders one file's diagnostics by their positions, in
// place, and returns them.
func sortByPosition(diags []Diagnostic) []Diagnostic {
	slices.SortStableFunc(diags, func(a, b Diagnostic) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	return diags
}

// hasSyntaxError reports whether the module found a syntax error: then
// the script is not type-checked (it would not run at all).
func hasSyntaxError(diags []luau.LintDiagnostic) bool {
	return slices.ContainsFunc(diags, func(d luau.LintDiagnostic) bool { return d.Rule == RuleSyntax })
}
