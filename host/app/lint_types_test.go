package app_test

import (
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/app"
	"github.com/toolscript/toolscript/host/lint"
	"github.com/toolscript/toolscript/internal/testspecs"
	"github.com/toolscript/toolscript/internal/testwait"
)

// githubPlanted is a script against GitHub's API with a mistake planted on
// each line the test names.
const githubPlanted = `local issue = sdk.gh.issues_get({owner = "o", repo = "r", issue_number = 1})
local count = issue.comment_count
local open = sdk.gh.issues_list_for_repo({owner = "o", repo = "r", state = "opened"})
local one = sdk.gh.issues_get({owner = "o", repo = "r", issue_number = "12"})
local other = sdk.gh.issues_get({owner = "o", issue_number = 3})
sdk.gh.issues_update({owner = "o", repo = "r", issue_number = 1}, {labels = "bug"})
return {count = count, open = #open, one = one.title, other = other.title}
`

// TestLintTypesGitHub: lint --types against GitHub's real spec reports
// each planted mistake as an error on its line (of rule type, or the
// module's sdk rule, which the type checker does not repeat), and nothing
// for a working script.
func TestLintTypesGitHub(t *testing.T) {
	file := configFile(t, "[apis.gh]\nspec = "+strconv.Quote(testspecs.GitHub(t))+"\n")
	report, err := app.Lint(testwait.Context(t), app.LintConfig{File: file, SDK: app.SDKOptions{Stderr: io.Discard},
		Sources: []lint.Source{{Name: "planted.luau", Text: []byte(githubPlanted)}, {Name: "correct.luau", Text: []byte(testspecs.GitHubScript)}},
		Options: lint.Options{IO: true}, Types: true})
	if err != nil {
		t.Fatal(err)
	}
	errorLines := map[int]string{}
	for _, d := range report.Diagnostics {
		if d.File == "correct.luau" {
			t.Errorf("correct.luau: %d:%d %s %s: %s", d.Line, d.Column, d.Severity, d.Rule, d.Message)
			continue
		}
		if d.Severity == lint.Error {
			errorLines[d.Line] = d.Rule + ": " + d.Message
		}
		if d.Line == 5 && d.Rule == lint.RuleType {
			t.Errorf("planted.luau:5: the type checker repeats the module's sdk_missing_parameter: %s", d.Message)
		}
		if strings.Contains(d.Message, "\n") {
			t.Errorf("%s:%d: a message of more than one line: %q", d.File, d.Line, d.Message)
		}
	}
	for line, what := range map[int]string{
		2: "a response field that does not exist",
		3: "an enum value the API does not take",
		4: "a string where a number goes",
		5: "a required parameter left out (the module's sdk_missing_parameter)",
		6: "a string where the body takes a list",
	} {
		if _, ok := errorLines[line]; !ok {
			t.Errorf("planted.luau:%d (%s): no type error; got %v", line, what, errorLines)
		}
	}
	if t.Failed() {
		for _, d := range report.Diagnostics {
			t.Logf("%s:%d:%d %s %s: %s", d.File, d.Line, d.Column, d.Severity, d.Rule, d.Message)
		}
	}

	var out strings.Builder
	for _, format := range []lint.Format{lint.FormatText, lint.FormatJSON, lint.FormatGitHub, lint.FormatSARIF} {
		out.Reset()
		if err := lint.Write(&out, format, report, lint.Tool{}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "comment_count") {
			t.Errorf("format %s does not carry the type diagnostics:\n%s", format, out.String())
		}
	}
}

// TestLintTypesExamples: the examples' scripts, which run, get no
// diagnostic from lint --types: hello.luau without an sdk, the pet store's
// scripts against its spec (adopt.luau reads response.dry_run).
func TestLintTypesExamples(t *testing.T) {
	spec, err := filepath.Abs("../../examples/petstore/petstore.yaml")
	if err != nil {
		t.Fatal(err)
	}
	file := configFile(t, "[apis.petstore]\nspec = "+strconv.Quote(spec)+"\n")
	sources, err := app.CollectLintSources([]string{"../../examples/hello.luau", "../../examples/petstore"}, nil, app.LintStdinName)
	if err != nil {
		t.Fatal(err)
	}
	if len(sources) < 3 {
		t.Fatalf("%d sources", len(sources))
	}
	report, err := app.Lint(testwait.Context(t), app.LintConfig{File: file, SDK: app.SDKOptions{Stderr: io.Discard},
		Sources: sources, Options: lint.Options{IO: true}, Types: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range report.Diagnostics {
		t.Errorf("%s:%d:%d %s %s: %s", d.File, d.Line, d.Column, d.Severity, d.Rule, d.Message)
	}
}
