package app_test

import (
	"io"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/app"
	"github.com/toolscript/toolscript/host/lint"
	"github.com/toolscript/toolscript/internal/testapi"
	"github.com/toolscript/toolscript/internal/testspecs"
	"github.com/toolscript/toolscript/internal/testwait"
)

// summary is a script's effects in one line: "unsafe A (does), B; safe C;
// io D; unnamed E", parts left out when empty.
func summary(e lint.Effects) string {
	if !e.Checked {
		return "not checked"
	}
	var parts []string
	for _, group := range []struct {
		name    string
		reaches []lint.Reach
	}{{"unsafe", e.Unsafe}, {"safe", e.Safe}, {"io", e.IO}, {"unnamed", e.Unnamed}} {
		if len(group.reaches) == 0 {
			continue
		}
		list := make([]string, len(group.reaches))
		for i, r := range group.reaches {
			list[i] = r.What
			if r.Does != "" {
				list[i] += " (" + r.Does + ")"
			}
		}
		parts = append(parts, group.name+" "+strings.Join(list, ", "))
	}
	return strings.Join(parts, "; ")
}

// lintEffects lints sources with --effects against a configuration of
// the test API whose [apis.pets] section gets keys.
func lintEffects(t *testing.T, keys string, sources ...lint.Source) *lint.Report {
	t.Helper()
	api := testapi.New(t)
	file := configFile(t, "[apis.pets]\nspec = "+strconv.Quote(testapi.SpecPath())+"\nbase_url = "+strconv.Quote(api.URL)+"\n"+keys)
	report, err := app.Lint(testwait.Context(t), app.LintConfig{File: file, SDK: app.SDKOptions{Stderr: io.Discard},
		Sources: sources, Options: lint.Options{IO: true, Effects: true}})
	if err != nil {
		t.Fatal(err)
	}
	if len(report.Effects) != len(sources) {
		t.Fatalf("effects of %d scripts, want %d", len(report.Effects), len(sources))
	}
	return report
}

// TestLintEffects: lint --effects lists the unsafe sdk functions a script
// names (literally, flat, or taken as a value), its io writes, and what it
// reaches without naming it, against the test API's real spec; the
// configuration's safe and unsafe apply, and --!nolint hides nothing.
func TestLintEffects(t *testing.T) {
	for _, tc := range []struct {
		name, keys, source, want string
	}{
		{"nothing", "", "return 1 + 1\n", ""},
		{"a GET", "", "return sdk.pets.get_pet({petId = 1})\n", "safe sdk.pets.get_pet (GET /pets/{petId})"},
		{"a POST", "", "sdk.pets.create_pet({name = 'Rex'})\n", "unsafe sdk.pets.create_pet (POST /pets)"},
		{"flat and once", "", "sdk.delete_pet({petId = 1})\nsdk.pets.delete_pet({petId = 2})\nsdk.list_pets()\n",
			"unsafe sdk.pets.delete_pet (DELETE /pets/{petId}); safe sdk.pets.list_pets (GET /pets)"},
		{"taken as a value", "", "local update = sdk.pets.update_pet\nupdate({petId = 1}, {})\n", "unsafe sdk.pets.update_pet (PUT /pets/{petId})"},
		{"in a function and under nolint", "", "--!nolint\nlocal function go() return sdk.pets['create_pet']({name = 'x'}) end\nreturn go\n",
			"unsafe sdk.pets.create_pet (POST /pets)"},
		{"by a name it computes", "", "local n = 'create_pet'\nsdk.pets[n]({name = 'x'})\nsdk[n]()\n",
			"unnamed sdk.pets[...], sdk[...]"},
		{"the API as a value", "", "local pets = sdk.pets\npets.create_pet({name = 'x'})\nfor k in pairs(sdk) do print(k) end\n",
			"unnamed sdk.pets (the API's table as a value), sdk (the whole sdk as a value)"},
		{"io", "", "local f = io.open('out.csv', 'w')\nf:write('x')\nf:close()\nos.remove('tmp')\nio.open('in.csv'):close()\nio.open('in.csv', 'rb'):close()\nfile.save('a', 'b')\n",
			`io io.open(..., "w"), os.remove, file.save`},
		{"io it cannot name", "", "local mode = 'a'\nio.open('x', mode):close()\nlocal ok = pcall(io.open, 'x', 'w')\nreturn ok\n",
			"unnamed io.open with a mode that is not a literal, io.open as a value (its mode is not known)"},
		{"overridden", "safe = [\"createPet\"]\nunsafe = [\"get_pet\"]\n",
			"sdk.create_pet({name = 'x'})\nreturn sdk.get_pet({petId = 1})\n", "unsafe sdk.pets.get_pet (GET /pets/{petId}); safe sdk.pets.create_pet (POST /pets)"},
		{"a syntax error", "", "local x = \n", "not checked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			report := lintEffects(t, tc.keys, lint.Source{Name: "script.luau", Text: []byte(tc.source)})
			if got := summary(report.Effects[0]); got != tc.want {
				t.Errorf("effects:\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestLintEffectsGitHub: against GitHub's real spec, the text output has
// one block per script, a POST declared safe ([apis.gh] safe) is not
// listed, and a script without unsafe calls says so.
func TestLintEffectsGitHub(t *testing.T) {
	spec := testspecs.GitHub(t)
	file := configFile(t, "[apis.gh]\nspec = "+strconv.Quote(spec)+"\nsafe = [\"markdown/render\"]\n")
	sources := []lint.Source{
		{Name: "triage.luau", Text: []byte("local issue = sdk.gh.issues_get({owner = 'o', repo = 'r', issue_number = 1})\n" +
			"sdk.gh.issues_add_labels({owner = 'o', repo = 'r', issue_number = 1}, {labels = {'bug'}})\n" +
			"sdk.gh.issues_create_comment({owner = 'o', repo = 'r', issue_number = 1}, {body = 'seen'})\n" +
			"return issue\n")},
		{Name: "render.luau", Text: []byte("return sdk.gh.markdown_render({}, {text = '# hi'})\n")},
		{Name: "report.luau", Text: []byte("local f = io.open('report.md', 'w')\nf:write(sdk.gh.repos_get({owner = 'o', repo = 'r'}).full_name)\nf:close()\n")},
	}
	report, err := app.Lint(testwait.Context(t), app.LintConfig{File: file, SDK: app.SDKOptions{Stderr: io.Discard},
		Sources: sources, Options: lint.Options{IO: true, Effects: true}})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := lint.Write(&out, lint.FormatText, report, lint.Tool{}); err != nil {
		t.Fatal(err)
	}
	want := "triage.luau: can change the world through sdk.gh.issues_add_labels (POST /repos/{owner}/{repo}/issues/{issue_number}/labels), " +
		"sdk.gh.issues_create_comment (POST /repos/{owner}/{repo}/issues/{issue_number}/comments)\n" +
		"render.luau: no unsafe sdk calls\n" +
		"report.luau: no unsafe sdk calls\n" +
		"report.luau: writes files: io.open(..., \"w\") (1:11)\n"
	if out.String() != want {
		t.Errorf("text output:\n%s\nwant:\n%s", out.String(), want)
	}
}

// TestLintEffectsRules: lint --effects names the rule that would decide
// each unsafe call, from what the function tells (its method, operation);
// a rule on the arguments depends on them; the rest get the default.
func TestLintEffectsRules(t *testing.T) {
	rules := `
[[policy]]
name = "no deletes"
when = 'effect.method == "DELETE"'
action = "deny"

[[policy]]
name = "rex"
when = 'effect.operation == "createPet" && effect.body.name == "Rex"'
action = "ask"

[effects]
default = "ask"
`
	report := lintEffects(t, rules, lint.Source{Name: "script.luau", Text: []byte(
		"sdk.pets.delete_pet({petId = 1})\nsdk.pets.create_pet({name = 'x'})\nsdk.pets.update_pet({petId = 1}, {})\nsdk.pets.get_pet({petId = 1})\n")})
	got := map[string]string{}
	for _, r := range append(report.Effects[0].Unsafe, report.Effects[0].Safe...) {
		got[r.What] = r.Decided
	}
	want := map[string]string{
		"sdk.pets.delete_pet": `rule "no deletes": deny`,
		"sdk.pets.create_pet": `rule "rex" depends on arguments`,
		"sdk.pets.update_pet": `[effects] default: ask`,
		"sdk.pets.get_pet":    ``,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decided %q, want %q", got, want)
	}
}
