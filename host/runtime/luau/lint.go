package luau

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/tetratelabs/wazero/api"
)

// LintOptions configures a Linter.
type LintOptions struct {
	// IO lints for an environment that has the io library (io, os.remove
	// and file). Without it, using them is reported as io_disabled.
	IO bool
	// Effects adds, after the diagnostics, a record of each thing the
	// script names that can change the world (lint --effects): its Rule is
	// one of the Effects* kinds, and these are never disabled by --!nolint.
	Effects bool
}

// The kinds of the records Effects adds (LintDiagnostic.Rule).
const (
	// EffectsSDK: the script names an sdk function (called or taken as a
	// value); Message is its qualified name, sdk.api.fn.
	EffectsSDK = "effects_sdk"
	// EffectsIO: the script calls an io function that writes; Message is
	// it ("os.remove", `io.open(..., "w")`).
	EffectsIO = "effects_io"
	// EffectsUnnamed: the script reaches the sdk or io in a way that names
	// nothing (sdk[name], an API's table as a value, io.open with a mode
	// that is not a literal); Message says how.
	EffectsUnnamed = "effects_unnamed"
)

// LintDiagnostic is one problem the module's linter found in a script.
type LintDiagnostic struct {
	// Rule names the check, e.g. "syntax" or "unknown_global".
	Rule    string
	Message string
	// Line and Column are 1-based; Column counts bytes from the start of
	// the line. EndLine and EndColumn mark the position just past the end
	// of the problem's text.
	Line, Column, EndLine, EndColumn int
}

// RuleSyntax is the rule of syntax and compile errors.
const RuleSyntax = "syntax"

// A Linter parses, checks and compiles scripts with the Luau front end in
// the module, one after another in a single instance: nothing runs, so no
// fresh instance per script is needed. The instance is replaced only after
// a compile error, which unwinds the module. A Linter is not safe for
// concurrent use; use one per goroutine.
type Linter struct {
	rt    *Runtime
	flags uint64

	inst     *instance
	lint     api.Function
	input    api.Function
	inputPtr uint32
	inputCap uint32
	outAddr  uint32
}

// NewLinter returns a Linter that creates its instance on first use.
func (r *Runtime) NewLinter(opts LintOptions) *Linter {
	l := &Linter{rt: r}
	if opts.IO {
		l.flags |= flagIO
	}
	if opts.Effects {
		l.flags |= flagEffects
	}
	return l
}

// Close releases the Linter's instance.
func (l *Linter) Close() {
	if l.inst != nil {
		l.inst.close()
		l.inst = nil
	}
}

// Lint checks one script and returns its diagnostics in source order.
// Problems in the script, syntax errors included, are diagnostics. An
// error means the script could not be linted at all: a *LintFailure when
// the module failed on this script (it ran out of memory or, with
// Config.StopOnContextDone, of time, or it trapped), after which the
// Linter goes on with a new instance; any other error is the Linter's own
// (its instance could not be created, ctx was done before it started).
func (l *Linter) Lint(ctx context.Context, source []byte) ([]LintDiagnostic, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if uint64(len(source))+MemoryOverheadBytes > l.rt.maxMemory {
		return []LintDiagnostic{{Rule: RuleSyntax, Line: 1, Column: 1, EndLine: 1, EndColumn: 1,
			Message: fmt.Sprintf("the script is too large to compile (%d bytes)", len(source))}}, nil
	}
	if err := l.ensureInstance(ctx); err != nil {
		return nil, err
	}
	inst := l.inst
	ctx = withInstance(ctx, inst)

	size := max(uint32(len(source)), 1)
	if size > l.inputCap {
		res, err := l.input.Call(ctx, uint64(size))
		if err != nil {
			defer l.Close()
			return nil, l.failure(ctx, "reserving the input buffer", err)
		}
		l.inputPtr, l.inputCap = uint32(res[0]), size
	}
	if err := tryWrite(inst.mem, "lint source", l.inputPtr, source); err != nil {
		l.Close()
		return nil, err
	}

	_, err := l.lint.Call(ctx, uint64(len(source)), l.flags)
	if err == nil {
		return l.readDiagnostics()
	}

	// The module unwound: a compile error (or the front end ran out of
	// memory). Diagnostics found before compiling were published first.
	defer l.Close()
	var abort *frontEndAbort
	if !errors.As(err, &abort) {
		return nil, l.failure(ctx, "linting", err)
	}
	diags, readErr := l.readDiagnostics()
	if readErr != nil {
		return nil, readErr
	}
	line := max(abort.line, 1)
	return append(diags, LintDiagnostic{
		Rule: RuleSyntax, Message: abort.message,
		Line: line, Column: 1, EndLine: line, EndColumn: 1,
	}), nil
}

// A LintFailure is Lint's error when the module failed on the script at
// hand. Its Err is, as errors.Is tells, ctx's error when the context ended
// (context.DeadlineExceeded, context.Canceled), ErrOutOfMemory when the
// instance's memory ran out, or else the module's trap.
type LintFailure struct{ Err error }

func (f *LintFailure) Error() string { return f.Err.Error() }
func (f *LintFailure) Unwrap() error { return f.Err }

// failure words why the module failed on the script at hand, before the
// instance is dropped.
func (l *Linter) failure(ctx context.Context, what string, err error) *LintFailure {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return &LintFailure{fmt.Errorf("luau: %s stopped: %w", what, ctxErr)}
	}
	if exhausted(l.inst.mem, l.rt.maxMemory) {
		return &LintFailure{fmt.Errorf("%w (%d MiB) %s: %w", ErrOutOfMemory, l.rt.maxMemory>>20, what, err)}
	}
	return &LintFailure{lintCallError(err, what)}
}

// exhausted reports whether a trap came from running out of memory: the C++
// front end aborts (a trap) when an allocation fails, and an allocation
// fails when it asks for more than is left. What fails is a vector or a
// string that doubles, asking for as much as it holds, so by then more
// than half of the memory is in use.
func exhausted(mem api.Memory, maxMemory uint64) bool {
	return uint64(mem.Size()) > maxMemory/2
}

func lintCallError(err error, what string) error {
	return fmt.Errorf("luau: %s in the module: %w", what, err)
}

// ensureInstance creates the Linter's instance and looks up its lint exports.
func (l *Linter) ensureInstance(ctx context.Context) error {
	if l.inst != nil {
		return nil
	}
	inst, err := l.rt.newInstance(ctx)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		inst.close()
		return err
	}
	if l.lint, err = exported(inst.mod, "ts_lint"); err != nil {
		return fail(err)
	}
	if l.input, err = exported(inst.mod, "ts_lint_input"); err != nil {
		return fail(err)
	}
	outFn, err := exported(inst.mod, "ts_lint_out")
	if err != nil {
		return fail(err)
	}
	res, err := outFn.Call(withInstance(ctx, inst))
	if err != nil {
		return fail(lintCallError(err, "locating the lint output"))
	}
	l.inst, l.outAddr = inst, uint32(res[0])
	l.inputPtr, l.inputCap = 0, 0
	return nil
}

// readDiagnostics decodes the packed diagnostics ts_lint published (see
// publish in luau-build/shim/lint.cpp).
func (l *Linter) readDiagnostics() ([]LintDiagnostic, error) {
	mem := l.inst.mem
	out, err := tryView(mem, "lint output", l.outAddr, lintOutSize)
	if err != nil {
		return nil, err
	}
	ptr := binary.LittleEndian.Uint32(out[0:])
	length := binary.LittleEndian.Uint32(out[4:])
	if length == 0 {
		return nil, nil
	}
	buf, err := tryView(mem, "lint diagnostics", ptr, length)
	if err != nil {
		return nil, err
	}
	if len(buf) < 4 {
		return nil, errors.New("luau: lint output is truncated")
	}
	count := binary.LittleEndian.Uint32(buf)
	buf = buf[4:]
	if uint64(count)*lintRecordHeader > uint64(len(buf)) {
		return nil, fmt.Errorf("luau: lint output claims %d diagnostics in %d bytes", count, len(buf))
	}
	diags := make([]LintDiagnostic, 0, count)
	for range count {
		if len(buf) < lintRecordHeader {
			return nil, errors.New("luau: lint output is truncated")
		}
		word := func(i int) int { return int(binary.LittleEndian.Uint32(buf[4*i:])) }
		ruleLen, msgLen := word(4), word(5)
		if len(buf) < lintRecordHeader+ruleLen+msgLen {
			return nil, errors.New("luau: lint output is truncated")
		}
		rest := buf[lintRecordHeader:]
		diags = append(diags, LintDiagnostic{
			Rule:      string(rest[:ruleLen]),
			Message:   string(rest[ruleLen : ruleLen+msgLen]),
			Line:      word(0) + 1,
			Column:    word(1) + 1,
			EndLine:   word(2) + 1,
			EndColumn: word(3) + 1,
		})
		buf = rest[ruleLen+msgLen:]
	}
	return diags, nil
}
