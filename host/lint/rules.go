// Package lint checks Luau scripts for the toolscript sandbox before they
// are deployed: `toolscript lint`.
//
// The checks themselves run inside the Luau module (luau-build/shim/lint.cpp):
// every script is parsed and compiled by the real Luau front end, and the
// sandbox checks walk its syntax tree against the globals of the module's
// live Luau state. This package describes the rules, applies the
// configuration, gathers the files to check, lints them in parallel (one
// module instance per worker, reused for all of its files) and writes the
// results as text, JSON, GitHub workflow annotations or SARIF 2.1.0.
package lint

import "slices"

// Severity is how serious a diagnostic is. Errors fail a lint run; warnings
// fail it only in strict mode.
type Severity string

// The severities.
const (
	Error   Severity = "error"
	Warning Severity = "warning"
)

// Rule describes one check.
type Rule struct {
	// Name identifies the rule in diagnostics, --!nolint comments and the
	// configuration.
	Name     string
	Severity Severity
	// Summary is one sentence on what the rule reports.
	Summary string
	// Help says why it matters and how to fix it.
	Help string
}

// The rules' names.
const (
	RuleSyntax          = "syntax"
	RuleUnknownGlobal   = "unknown_global"
	RuleReadonlyGlobal  = "readonly_global"
	RuleIODisabled      = "io_disabled"
	RuleUnusedLocal     = "unused_local"
	RuleShadowedLocal   = "shadowed_local"
	RuleUnreachableCode = "unreachable_code"
	RuleAssignmentCount = "assignment_count"
	RuleInvalidNolint   = "invalid_nolint"

	RuleSDKUnknownFunction  = "sdk_unknown_function"
	RuleSDKUnknownParameter = "sdk_unknown_parameter"
	RuleSDKMissingParameter = "sdk_missing_parameter"

	// Reported by this package rather than the module (reportedByHost).
	RuleLintFailed         = "lint_failed"
	RuleTooManyDiagnostics = "too_many_diagnostics"
)

// reportedByHost reports whether the rule named name is this package's
// rather than the module's: it says what lint could not do, and cannot be
// disabled.
func reportedByHost(name string) bool {
	return name == RuleLintFailed || name == RuleTooManyDiagnostics
}

// Rules returns every rule, errors first. The module reports exactly these
// names but those reportedByHost (a test checks it).
func Rules() []Rule {
	return []Rule{
		{RuleSyntax, Error,
			"The script does not parse or does not compile.",
			"Luau's parser recovers from an error and goes on, so every syntax error in the file is reported, each at its own line and column. A compile error is a limit of the Luau compiler (too many constants, registers or upvalues in one function); split the function. Syntax errors cannot be disabled."},
		{RuleUnknownGlobal, Error,
			"A global, or a field of a library table, that does not exist in the toolscript sandbox.",
			"The sandbox has no require, load, loadstring, dofile, getfenv/setfenv, string.dump, os.execute, os.exit, os.getenv, io.popen or debug library; reading any of them gives nil and calling it fails at run time. A misspelled name gets a suggestion. Globals the script assigns anywhere count as defined."},
		{RuleReadonlyGlobal, Error,
			"A write to a field of a read-only library table, such as string.foo = 1.",
			"The sandbox freezes the library tables (string, table, math, os, json, ...) and _G: writing to them fails at run time. Keep your own functions in a local table instead."},
		{RuleLintFailed, Error,
			"The file could not be checked: linting it ran out of memory or of time, or the linter failed on it.",
			"Nothing in the file is checked, so it fails the run. Linting one file may take 10 seconds and the linter's memory (256 MiB); a file that needs more, such as one with hundreds of thousands of syntax errors, is not a script to run. The other files are checked and reported. This rule cannot be disabled."},
		{RuleIODisabled, Error,
			"io, os.remove or file is used but the configuration disables io.",
			"Enable io for the scripts ([io] enabled = true, or [lint] io = true) or do not use the io library."},
		{RuleSDKUnknownFunction, Error,
			"A call of sdk.fn or sdk.api.fn that no configured API or MCP server defines.",
			"The sdk holds the operations of the configured OpenAPI specs and the tools of the configured MCP servers (--api, --mcp, [apis], [mcp_servers]); a misspelled name gets a suggestion. Without sources configured, lint does not know them: configure the same sources as the runtime."},
		{RuleSDKUnknownParameter, Error,
			"A literal table of parameters (or, for an MCP tool, of arguments) names one the function does not have.",
			"The call would fail before any request with the same message; a misspelled name gets a suggestion. Only literal tables are checked."},
		{RuleSDKMissingParameter, Error,
			"A literal table of parameters (or, for an MCP tool, of arguments) leaves out one the function requires.",
			"The call would fail before any request. Only literal tables whose keys are all names are checked."},
		{RuleType, Error,
			"With --types: Luau's type checker, in strict mode against the sdk's definitions, finds a mistake in how the script uses a value.",
			"An error where the sdk's types make the run fail: a key the response or argument type does not have, a required field left out, a wrong literal (an enum value the API does not take) or primitive. Everything else the checker finds (a value that may be nil, a count of values, what it cannot follow) is a warning. A script the checker cannot finish gets one warning saying so. Disable it with --disable type ([lint] disable), or with --!nolint type for the file (at the top) or a line (after code)."},
		{RuleUnusedLocal, Warning,
			"A local variable, local function or loop variable that is never read.",
			"Remove it, or start its name with an underscore (_) to say it is unused on purpose. Function parameters are not reported."},
		{RuleShadowedLocal, Warning,
			"A local or parameter that hides another local of the same name.",
			"The outer variable cannot be reached while the inner one is in scope, which is often a mistake. Rename one of them; names starting with an underscore are not reported."},
		{RuleUnreachableCode, Warning,
			"Statements that can never run: after return, break, continue, error(), an if whose branches all leave, or a loop that never ends.",
			"Remove the dead statements or fix the control flow that skips them."},
		{RuleAssignmentCount, Warning,
			"An assignment with more variables than values (the last ones are always nil) or more values than variables (the extra ones are discarded).",
			"A call or ... as the last value may fill several variables and is not reported; neither is `local a, b = nil`."},
		{RuleTooManyDiagnostics, Warning,
			"The file has more diagnostics than lint reports for one file (1,000): this one counts the rest.",
			"It is an error when any of the diagnostics not shown is one. Fix the ones shown and lint again. This rule cannot be disabled."},
		{RuleInvalidNolint, Warning,
			"A --!nolint comment names a rule that does not exist, or tries to disable syntax errors.",
			"--!nolint takes rule names separated by spaces; without names it disables every rule. At the top of the file it applies to the whole file; after code, to its own line."},
	}
}

// RuleNames returns the names of every rule.
func RuleNames() []string {
	var names []string
	for _, r := range Rules() {
		names = append(names, r.Name)
	}
	return names
}

// findRule returns the rule named name.
func findRule(rules []Rule, name string) (Rule, bool) {
	i := slices.IndexFunc(rules, func(r Rule) bool { return r.Name == name })
	if i < 0 {
		return Rule{}, false
	}
	return rules[i], true
}
