// Package scriptcheck checks one script before it runs: the module's lint
// rules (the VM's parser decides syntax) and Luau's type checker against
// the sdk's definitions, for the MCP tool check_script, execute_script's
// argument check and `toolscript run --check`.
//
// A Checker is the process's one type checker for a configuration: it
// creates its typecheck.Checker on the first check (a process that never
// checks compiles nothing), and loads the definitions again only when
// their text changes (the sdk grows as upstream MCP servers start),
// which a hash of the text tells; concurrent checks share one load. The
// definitions load in parts, one an API (Definitions): an API whose
// definitions do not load is declared loosely, its calls unchecked, and
// a script that names it gets a warning that says so.
package scriptcheck

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/toolscript/toolscript/host/lint"
	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/host/runtime/result"
	"github.com/toolscript/toolscript/host/runtime/typecheck"
	"github.com/toolscript/toolscript/host/sdk/sdkdocs"
)

// MaxSourceBytes is the largest script checked: the module lints a script
// of up to lint.SmallFileBytes within a second whatever it holds, and
// cannot be stopped in a larger one. A larger script is unchecked.
const MaxSourceBytes = lint.SmallFileBytes

// Checker checks scripts against the definitions of the docs each check
// names. Its methods are safe to call concurrently.
type Checker struct {
	cfg typecheck.Config

	mu      sync.Mutex
	checker *typecheck.Checker
	// docs are the docs whose definitions are loaded, hash their text's;
	// refused, when set, is why docs' definitions were not (over the
	// checker's cap): docs are immutable, so it stands for them.
	docs    *sdkdocs.Docs
	hash    [sha256.Size]byte
	loaded  bool
	refused error
	// loads counts the definitions' texts loaded, built those written
	// (tests).
	loads, built int
}

// New returns a Checker whose type checker cfg configures; nothing is
// compiled or loaded until the first check.
func New(cfg typecheck.Config) *Checker {
	return &Checker{cfg: cfg}
}

// Loads is how many definitions' texts the Checker has loaded.
func (c *Checker) Loads() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.loads
}

// Close releases the type checker.
func (c *Checker) Close(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.checker == nil {
		return nil
	}
	err := c.checker.Close(ctx)
	c.checker, c.docs, c.loaded, c.refused = nil, nil, false, nil
	return err
}

// Script is one script to check.
type Script struct {
	// Name names the script in the diagnostics ("script" when empty).
	Name   string
	Source []byte
	// IO says whether the script runs with the io library.
	IO bool
}

// Outcome is what a check found.
type Outcome struct {
	// Diagnostics are the module's and the type checker's, in the order
	// of their positions, with a warning where the script first names an
	// API whose definitions do not load (looseUses).
	Diagnostics []lint.Diagnostic
	// Unchecked, when set, says why the types were not checked: the
	// script is neither accepted nor refused by them.
	Unchecked string
	// Loose say, of each API the script names whose definitions do not
	// load, that its calls are unchecked (LooseWarning).
	Loose []string
}

// Check lints s with rt's module and type-checks it against docs'
// definitions. A script over MaxSourceBytes, or one the type checker
// cannot finish, is unchecked (Outcome.Unchecked says why); an error
// means ctx ended or the module could not run.
func (c *Checker) Check(ctx context.Context, rt *luau.Runtime, docs *sdkdocs.Docs, s Script) (*Outcome, error) {
	name := s.Name
	if name == "" {
		name = "script"
	}
	if len(s.Source) > MaxSourceBytes {
		return &Outcome{Unchecked: fmt.Sprintf("the script's %d bytes are over the %d bytes a check takes", len(s.Source), MaxSourceBytes)}, nil
	}
	types := &againstDocs{c: c, docs: docs}
	report, err := lint.Run(ctx, rt, []lint.Source{{Name: name, Text: s.Source}}, lint.Options{IO: s.IO, Workers: 1, Types: types})
	if err != nil {
		return nil, err
	}
	out := &Outcome{Diagnostics: looseUses(name, s.Source, docs, types.loose)}
	for _, d := range out.Diagnostics {
		out.Loose = append(out.Loose, d.Message)
	}
	for _, d := range report.Diagnostics {
		if d.Rule == lint.RuleType && types.unchecked != nil && strings.HasPrefix(d.Message, types.unchecked.Error()) {
			continue // said in Unchecked
		}
		out.Diagnostics = append(out.Diagnostics, d)
	}
	if len(types.loose) > 0 {
		slices.SortStableFunc(out.Diagnostics, func(a, b lint.Diagnostic) int { return cmp.Or(a.Line-b.Line, a.Column-b.Column) })
	}
	switch {
	case types.unchecked != nil:
		out.Unchecked = strings.TrimPrefix(types.unchecked.Error(), "type check: script unchecked: ")
	case !types.checked && hasRule(out.Diagnostics, lint.RuleSyntax):
		out.Unchecked = "the script does not parse (the syntax errors say where)"
	case !types.checked:
		out.Unchecked = "the linter could not finish the script (its lint_failed diagnostic says why)"
	}
	return out, nil
}

func hasRule(diags []lint.Diagnostic, rule string) bool {
	for _, d := range diags {
		if d.Rule == rule {
			return true
		}
	}
	return false
}

// againstDocs is the lint.TypeChecker of one check: the Checker's type
// checker with docs' definitions loaded. It keeps why the check could not
// finish.
type againstDocs struct {
	c         *Checker
	docs      *sdkdocs.Docs
	checked   bool
	unchecked error
	// loose are the APIs declared loosely in the definitions checked
	// against.
	loose []typecheck.PartError
}

func (a *againstDocs) Check(ctx context.Context, source string) ([]typecheck.Diagnostic, error) {
	a.checked = true
	checker, err := a.c.withDefinitions(ctx, a.docs)
	if err == nil {
		var found []typecheck.Diagnostic
		if found, a.loose, err = checker.CheckLoose(ctx, source); err == nil {
			return found, nil
		}
	}
	if errors.Is(err, typecheck.ErrDefinitions) {
		// The configuration's, not the script's: the script is unchecked.
		err = &typecheck.UncheckedError{Reason: "the sdk's definitions do not load", Err: err}
	}
	if errors.Is(err, typecheck.ErrUnchecked) {
		a.unchecked = err
	}
	return nil, err
}

// withDefinitions returns the type checker with docs' definitions loaded: made on
// the first call, loaded again only when the definitions' text changes.
// Docs are immutable, so the same docs have the same text.
func (c *Checker) withDefinitions(ctx context.Context, docs *sdkdocs.Docs) (*typecheck.Checker, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.checker == nil {
		checker, err := typecheck.New(ctx, c.cfg)
		if err != nil {
			return nil, err
		}
		c.checker = checker
	}
	switch {
	case docs == c.docs && c.loaded:
		return c.checker, nil
	case docs == c.docs && c.refused != nil:
		// Not written again: a large sdk's text takes seconds, under
		// the lock every check takes.
		return nil, c.refused
	}
	text := []byte(docs.Definitions())
	c.built++
	hash := sha256.Sum256(text)
	if c.loaded && hash == c.hash {
		c.docs = docs
		return c.checker, nil
	}
	if err := c.checker.LoadParts(Definitions(docs, text)); err != nil {
		c.docs, c.loaded, c.refused = docs, false, err
		return nil, err
	}
	c.docs, c.hash, c.loaded, c.refused = docs, hash, true, nil
	c.loads++
	return c.checker, nil
}

// Definitions are docs' definitions in parts, one an API, whose whole
// text is text (docs.Definitions()): what every type check of the sdk
// loads.
func Definitions(docs *sdkdocs.Docs, text []byte) typecheck.Parts {
	return typecheck.Parts{Text: text, Names: docs.APINames(), Loose: func(names []string) []byte {
		return []byte(docs.DefinitionsLoose(names))
	}}
}

// LooseWarning words an API declared loosely because its definitions do
// not load: its calls are unchecked.
func LooseWarning(p typecheck.PartError) string {
	return fmt.Sprintf("type check: the definitions of sdk.%s do not load, so its calls are unchecked: %s", p.Part, p.Reason())
}

// WarnLoose is a typecheck.Config.OnLoose that says each API declared
// loosely with warn (LooseWarning).
func WarnLoose(warn func(string)) func([]typecheck.PartError) {
	return func(parts []typecheck.PartError) {
		for _, p := range parts {
			warn(LooseWarning(p))
		}
	}
}

// looseUses are the warnings on the first place source names each API
// of loose (sdk.<api>, sdk["<api>"], or one of its functions that are
// also sdk.<name>): its calls are unchecked. The names are found in the
// text, comments and strings included: a warning, never a refusal.
func looseUses(file string, source []byte, docs *sdkdocs.Docs, loose []typecheck.PartError) []lint.Diagnostic {
	var out []lint.Diagnostic
	for _, p := range loose {
		at := -1
		for _, name := range docs.SDKNames(p.Part) {
			if i := sdkUse(source, name); i >= 0 && (at < 0 || i < at) {
				at = i
			}
		}
		if at < 0 {
			continue
		}
		line := 1 + bytes.Count(source[:at], []byte("\n"))
		column := 1 + utf8.RuneCount(source[bytes.LastIndexByte(source[:at], '\n')+1:at])
		out = append(out, lint.Diagnostic{File: file, Line: line, Column: column, EndLine: line, EndColumn: column,
			Severity: lint.Warning, Rule: lint.RuleType, Message: LooseWarning(p)})
	}
	return out
}

// sdkUse is the offset of the first sdk.<name> or sdk["<name>"] in
// source, -1 when there is none.
func sdkUse(source []byte, name string) int {
	re := regexp.MustCompile(`\bsdk\s*(\.\s*` + regexp.QuoteMeta(name) + `\b|\[\s*["']` + regexp.QuoteMeta(name) + `["']\s*\])`)
	if loc := re.FindIndex(source); loc != nil {
		return loc[0]
	}
	return -1
}

// Refuses reports whether d stops a run that asked for a check: an error
// of the type rule, or of the module's sdk rules (the type checker leaves
// the mistakes they name to them).
func Refuses(d lint.Diagnostic) bool {
	if d.Severity != lint.Error {
		return false
	}
	switch d.Rule {
	case lint.RuleType, lint.RuleSDKUnknownFunction, lint.RuleSDKUnknownParameter, lint.RuleSDKMissingParameter:
		return true
	}
	return false
}

// Errors are the diagnostics that stop a run (Refuses).
func (o *Outcome) Errors() []lint.Diagnostic {
	var out []lint.Diagnostic
	for _, d := range o.Diagnostics {
		if Refuses(d) {
			out = append(out, d)
		}
	}
	return out
}

// MaxMessageChars bounds the diagnostics a refusal's message lists.
const MaxMessageChars = 8000

// Refusal is the error of a run that asked for a check and has type
// errors (kind type, the errors one a line, at most MaxMessageChars), nil
// when it has none.
func (o *Outcome) Refusal() *result.Error {
	errs := o.Errors()
	if len(errs) == 0 {
		return nil
	}
	lines, left := Lines(errs, MaxMessageChars)
	msg := fmt.Sprintf("the script was not run: the type check found %d error(s)", len(errs))
	if left > 0 {
		msg += fmt.Sprintf(" (%d not listed)", left)
	}
	return &result.Error{Kind: result.Type, Line: errs[0].Line, Message: msg + ":\n" + strings.Join(lines, "\n")}
}

// Warnings are what a run that asked for a check says of it: of an
// unchecked script, which runs, that it ran unchecked and why; of a
// script naming an API whose definitions do not load, that its calls
// ran unchecked; nothing for a checked one, or without a check (a nil
// Outcome).
func (o *Outcome) Warnings() []string {
	if o == nil {
		return nil
	}
	var out []string
	if o.Unchecked != "" {
		out = append(out, "the script was run unchecked: "+o.Unchecked)
	}
	for _, l := range o.Loose {
		out = append(out, "the script was run with an API unchecked: "+l)
	}
	return out
}

// Lines writes diagnostics one a line (NAME:LINE:COLUMN: severity rule:
// message), as many as fit in maxChars, and says how many were left out.
func Lines(diags []lint.Diagnostic, maxChars int) (lines []string, left int) {
	n := 0
	for i, d := range diags {
		line := fmt.Sprintf("%s:%d:%d: %s %s: %s", d.File, d.Line, d.Column, d.Severity, d.Rule, d.Message)
		if n+len(line)+1 > maxChars {
			return lines, len(diags) - i
		}
		n += len(line) + 1
		lines = append(lines, line)
	}
	return lines, 0
}
