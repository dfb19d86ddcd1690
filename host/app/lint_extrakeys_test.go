package app_test

import (
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/app"
	"github.com/toolscript/toolscript/host/lint"
	"github.com/toolscript/toolscript/host/runtime/typecheck"
	"github.com/toolscript/toolscript/host/runtime/typecheck/typechecktest"
	"github.com/toolscript/toolscript/internal/testspecs"
	"github.com/toolscript/toolscript/internal/testwait"
)

// TestTypesExtraKeys: against GitHub's real definitions, Luau's checker
// itself reports a key of a literal table of parameters that is no
// parameter (the definitions' [string]: nil indexer), and nothing for
// the same call with the right key; lint --types still reports it as the
// module's sdk_unknown_parameter, once.
func TestTypesExtraKeys(t *testing.T) {
	spec := testspecs.GitHub(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	file := configFile(t, "[apis.gh]\nspec = "+strconv.Quote(spec)+"\n")
	opts := app.SDKOptions{Stderr: io.Discard}
	d, err := app.Docs(testwait.Context(t), file, opts, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	checker := typechecktest.Loaded(t, typecheck.Config{CacheDir: t.TempDir()}, []byte(d.Definitions()))
	for _, tc := range []struct {
		src  string
		want string // in a diagnostic's message; "" for none
	}{
		{`return sdk.gh.issues_list({ownr = "x"})` + "\n", "'ownr'"},
		{`return sdk.gh.issues_list_for_repo({owner = "o", repo = "r", sate = "open"})` + "\n", "'sate'"},
		{`return sdk.gh.issues_list_for_repo({owner = "o", repo = "r", state = "open"})` + "\n", ""},
		{`return sdk.gh.issues_list({filter = "assigned"})` + "\n", ""},
	} {
		found, err := checker.Check(testwait.Context(t), tc.src)
		if err != nil {
			t.Fatal(err)
		}
		var messages []string
		for _, f := range found {
			messages = append(messages, f.Category+": "+strings.Join(strings.Fields(f.Message), " "))
		}
		got := strings.Join(messages, "\n")
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s: got %q, want %q", tc.src, got, tc.want)
		}
	}

	report, err := app.Lint(testwait.Context(t), app.LintConfig{File: file, SDK: opts, Types: true,
		Sources: []lint.Source{{Name: "t.luau", Text: []byte(`return sdk.gh.issues_list({ownr = "x"})` + "\n")}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(report.Diagnostics) != 1 || report.Diagnostics[0].Rule != lint.RuleSDKUnknownParameter || report.Diagnostics[0].Severity != lint.Error {
		t.Errorf("lint --types: want one sdk_unknown_parameter error, got %+v", report.Diagnostics)
	}
}
