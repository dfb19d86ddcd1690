package lint

import (
	"context"
	"errors"
	"strings"

	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/host/runtime/typecheck"
)

// RuleType is the rule of lint --types: what Luau's type checker finds
// against the sdk's definitions. The type checker, not the module, reports
// it; --disable type and --!nolint type (applied here: nolint.go) disable it.
const RuleType = "type"

// TypeChecker checks a script's types against the sdk's definitions: a
// *typecheck.Checker with them loaded.
type TypeChecker interface {
	Check(ctx context.Context, source string) ([]typecheck.Diagnostic, error)
}

// typeErrorCategories are the checker's categories of mistake that make a
// run fail with the sdk's types: a key the type does not have (on a
// response or an argument), a required field left out, a wrong literal or
// primitive. The others (a value that may be nil, a count of values, what
// the checker cannot follow in a working script) are warnings.
var typeErrorCategories = map[string]bool{
	"unknown_property":   true,
	"missing_properties": true,
	"type_mismatch":      true,
}

// typeSeverity is the severity of a diagnostic of the checker.
func typeSeverity(d typecheck.Diagnostic) Severity {
	if typeErrorCategories[d.Category] {
		return Error
	}
	return Warning
}

// withTypes adds to found, the module's diagnostics of src, the type
// checker's, but those --!nolint type silences and those on the mistakes
// the module's sdk rules already name.
func withTypes(ctx context.Context, checker TypeChecker, src Source, found []Diagnostic) ([]Diagnostic, error) {
	typed, err := typeDiagnostics(ctx, checker, src)
	if err != nil {
		return nil, err
	}
	typed = withoutNolinted(typed, nolintOfType(src.Text))
	return sortByPosition(append(found, withoutSDKDuplicates(typed, found)...)), nil
}

// typeDiagnostics type-checks src (which parses: syntax errors are the
// module's) and returns the checker's diagnostics under RuleType, their
// columns in characters. A script the checker could not finish gets one
// warning that says so; an error means the definitions do not load.
func typeDiagnostics(ctx context.Context, checker TypeChecker, src Source) ([]Diagnostic, error) {
	found, err := checker.Check(ctx, string(src.Text))
	if errors.Is(err, typecheck.ErrUnchecked) && ctx.Err() == nil {
		return []Diagnostic{{File: src.Name, Line: 1, Column: 1, EndLine: 1, EndColumn: 1,
			Severity: Warning, Rule: RuleType, Message: err.Error()}}, nil
	}
	if err != nil {
		return nil, err
	}
	records := make([]luau.LintDiagnostic, 0, len(found))
	severities := make([]Severity, 0, len(found))
	for _, d := range found {
		if d.Category == "syntax" {
			continue // the VM's parser is the one that decides
		}
		// The checker's messages span lines (the types, then "caused
		// by:"); a diagnostic is one line in every format.
		records = append(records, luau.LintDiagnostic{Rule: RuleType, Message: strings.Join(strings.Fields(d.Message), " "),
			Line: d.Line, Column: d.Column, EndLine: d.EndLine, EndColumn: d.EndColumn})
		severities = append(severities, typeSeverity(d))
	}
	charColumns(src.Text, records)
	out := make([]Diagnostic, len(records))
	for i, r := range records {
		out[i] = Diagnostic{File: src.Name, Line: r.Line, Column: r.Column, EndLine: r.EndLine, EndColumn: r.EndColumn,
			Severity: severities[i], Rule: RuleType, Message: r.Message}
	}
	return out, nil
}

// sdkRules are the module's rules on sdk calls, which name a mistake more
// plainly than the type checker does.
var sdkRules = map[string]bool{
	RuleSDKUnknownFunction:  true,
	RuleSDKUnknownParameter: true,
	RuleSDKMissingParameter: true,
}

// withoutSDKDuplicates drops the type diagnostics on the lines where the
// module reported an sdk rule: the same mistake, said twice.
func withoutSDKDuplicates(typed, found []Diagnostic) []Diagnostic {
	lines := map[int]bool{}
	for _, d := range found {
		if sdkRules[d.Rule] {
			lines[d.Line] = true
		}
	}
	if len(lines) == 0 {
		return typed
	}
	kept := typed[:0]
	for _, d := range typed {
		if !lines[d.Line] {
			kept = append(kept, d)
		}
	}
	return kept
}
