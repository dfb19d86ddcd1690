package lint_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/contract/sdkcall"
	"github.com/toolscript/toolscript/host/lint"
	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/internal/testfile"
	"github.com/toolscript/toolscript/internal/testruntime"
)

// testSDK is what a configured API gives lint to check sdk calls against.
var testSDK = &sdkcall.Manifest{APIs: []sdkcall.API{
	{Name: "pets", Functions: []sdkcall.Function{
		{Name: "list_pets", ID: 1, Flat: true, Kind: "openapi", Params: []string{"limit", "tag"}},
		{Name: "get_pet", ID: 2, Flat: true, Kind: "openapi", Params: []string{"pet_id", "fields"}, Required: []string{"pet_id"}},
		{Name: "create_pet", ID: 3, Flat: true, Kind: "openapi"},
	}},
	{Name: "files", Functions: []sdkcall.Function{
		{Name: "read_file", ID: 4, Kind: "mcp", Params: []string{"path", "head"}, Required: []string{"path"}},
	}},
}}

func newRuntime(t testing.TB) *luau.Runtime {
	t.Helper()
	return testruntime.New(t, luau.Config{SDK: testSDK})
}

// triggers holds, for every rule, a script that breaks it.
var triggers = map[string]string{
	lint.RuleSyntax:          "local = 1\n",
	lint.RuleUnknownGlobal:   "pirnt(1)\n",
	lint.RuleReadonlyGlobal:  "string.x = 1\n",
	lint.RuleIODisabled:      "return io.open('a')\n",
	lint.RuleUnusedLocal:     "local a = 1\n",
	lint.RuleShadowedLocal:   "local a = 1\ndo local a = 2 print(a) end\nprint(a)\n",
	lint.RuleUnreachableCode: "do return end\nprint(1)\n",
	lint.RuleAssignmentCount: "local a, b = 1\nprint(a, b)\n",
	lint.RuleInvalidNolint:   "--!nolint nope\n",

	lint.RuleSDKUnknownFunction:  "sdk.list_pest()\n",
	lint.RuleSDKUnknownParameter: "sdk.list_pets({limt = 1})\n",
	lint.RuleSDKMissingParameter: "sdk.get_pet({fields = 'name'})\n",
}

// The sdk checks, against the functions the configuration defines.
func TestSDKChecks(t *testing.T) {
	rt := newRuntime(t)
	for _, c := range []struct {
		src  string
		want []string // rule: message, in order
	}{
		{"sdk.list_pets({limit = 5})\nsdk.pets.get_pet({pet_id = 1})\nsdk.create_pet({name = 'Rex'})\nsdk.files.read_file({path = 'a'})\n", nil},
		{"sdk.list_pest()\n", []string{"sdk_unknown_function: 'sdk.list_pest' is not a function of the sdk; did you mean 'sdk.list_pets'?"}},
		{"sdk.pets.get_pets({pet_id = 1})\n", []string{"sdk_unknown_function: 'sdk.pets.get_pets' is not a function of the sdk; did you mean 'sdk.pets.get_pet'?"}},
		{"sdk.pest.get_pet({pet_id = 1})\n", []string{"sdk_unknown_function: 'sdk.pest' is not a configured API or MCP server; did you mean 'sdk.pets'?"}},
		{"sdk.read_file({path = 'a'})\n", []string{"sdk_unknown_function: 'sdk.read_file' is not a function of the sdk"}},
		{"sdk.list_pets({limt = 5, tag = 'x'})\n", []string{"sdk_unknown_parameter: 'sdk.list_pets' has no parameter 'limt'; did you mean 'limit'?"}},
		{"sdk.get_pet({fields = 'name'})\n", []string{"sdk_missing_parameter: 'sdk.get_pet' requires the parameter 'pet_id'"}},
		{"sdk.get_pet()\n", []string{"sdk_missing_parameter: 'sdk.get_pet' requires the parameter 'pet_id'"}},
		{"sdk.files.read_file({pth = 'a'})\n", []string{ // in the order of their places
			"sdk_missing_parameter: 'sdk.files.read_file' requires the argument 'path'",
			"sdk_unknown_parameter: 'sdk.files.read_file' has no argument 'pth'; did you mean 'path'?"}},
		// Not literal, or not all names: nothing is certain.
		{"local p = {}\nsdk.get_pet(p)\nsdk.get_pet({[p] = 1})\n", nil},
		// A script's own sdk is its own.
		{"sdk = {}\nsdk.anything()\n", nil},
	} {
		rep, err := lint.Run(context.Background(), rt, []lint.Source{{Name: "t.luau", Text: []byte(c.src)}}, lint.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, d := range rep.Diagnostics {
			got = append(got, d.Rule+": "+d.Message)
		}
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%q:\ngot  %q\nwant %q", c.src, got, c.want)
		}
	}
}

// The module and this package know the same rules: each rule's trigger is
// reported under that name, --!nolint accepts every name but syntax, and
// disabling a rule drops exactly its diagnostics.
func TestRulesAgreeWithModule(t *testing.T) {
	rt := newRuntime(t)
	hostRules := 0
	for _, rule := range lint.Rules() {
		if rule.Name == lint.RuleLintFailed || rule.Name == lint.RuleTooManyDiagnostics || rule.Name == lint.RuleType {
			hostRules++ // this package's or the type checker's (types_test.go), not the module's
			continue
		}
		t.Run(rule.Name, func(t *testing.T) {
			src, ok := triggers[rule.Name]
			if !ok {
				t.Fatalf("no trigger for rule %s", rule.Name)
			}
			rep, err := lint.Run(context.Background(), rt, []lint.Source{{Name: "t.luau", Text: []byte(src)}}, lint.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Diagnostics) == 0 || rep.Diagnostics[0].Rule != rule.Name || rep.Diagnostics[0].Severity != rule.Severity {
				t.Fatalf("trigger of %s: got %+v", rule.Name, rep.Diagnostics)
			}

			nolint := "--!nolint " + rule.Name + "\n" + src
			rep, err = lint.Run(context.Background(), rt, []lint.Source{{Name: "t.luau", Text: []byte(nolint)}}, lint.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range rep.Diagnostics {
				if d.Rule == lint.RuleInvalidNolint && rule.Name != lint.RuleSyntax && rule.Name != lint.RuleInvalidNolint {
					t.Errorf("--!nolint %s: %s", rule.Name, d.Message)
				}
			}

			if rule.Name == lint.RuleSyntax {
				return
			}
			rep, err = lint.Run(context.Background(), rt, []lint.Source{{Name: "t.luau", Text: []byte(src)}}, lint.Options{Disable: []string{rule.Name}})
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range rep.Diagnostics {
				if d.Rule == rule.Name {
					t.Errorf("disabled %s is still reported: %+v", rule.Name, d)
				}
			}
		})
	}
	if len(triggers) != len(lint.Rules())-hostRules {
		t.Errorf("%d triggers for %d rules of the module", len(triggers), len(lint.Rules())-hostRules)
	}
}

func TestOptionsValidate(t *testing.T) {
	cases := []struct {
		disable []string
		err     string
	}{
		{nil, ""},
		{[]string{"unused_local", "shadowed_local"}, ""},
		{[]string{"syntax"}, "cannot be disabled"},
		{[]string{"lint_failed"}, "the lint_failed rule cannot be disabled"},
		{[]string{"too_many_diagnostics"}, "cannot be disabled"},
		{[]string{"no_such_rule"}, `unknown rule "no_such_rule"`},
	}
	for _, c := range cases {
		err := lint.Options{Disable: c.disable}.Validate()
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("Validate(%v) = %v, want %q", c.disable, err, c.err)
		}
	}
}

func TestRunOrderAndColumns(t *testing.T) {
	rt := newRuntime(t)
	sources := []lint.Source{
		{Name: "b.luau", Text: []byte("pirnt(1)\n")},
		{Name: "a.luau", Text: []byte("local s = 'héllo' .. pirnt\nreturn s\n")},
		{Name: "ok.luau", Text: []byte("return 1\n")},
	}
	rep, err := lint.Run(context.Background(), rt, sources, lint.Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := []lint.Diagnostic{
		{File: "b.luau", Line: 1, Column: 1, EndLine: 1, EndColumn: 6, Severity: lint.Error, Rule: "unknown_global"},
		// pirnt starts at byte 23; é is two bytes but one character.
		{File: "a.luau", Line: 1, Column: 22, EndLine: 1, EndColumn: 27, Severity: lint.Error, Rule: "unknown_global"},
	}
	if len(rep.Diagnostics) != len(want) {
		t.Fatalf("got %+v", rep.Diagnostics)
	}
	for i, d := range rep.Diagnostics {
		d.Message = ""
		if d != want[i] {
			t.Errorf("diagnostic %d: got %+v, want %+v", i, d, want[i])
		}
	}
	if rep.Files != 3 {
		t.Errorf("Files = %d", rep.Files)
	}
	if errs, warns := rep.Count(); errs != 2 || warns != 0 || !rep.Failed(false) {
		t.Errorf("Count = %d, %d", errs, warns)
	}
}

func TestFailed(t *testing.T) {
	warning := lint.Report{Diagnostics: []lint.Diagnostic{{Severity: lint.Warning}}}
	if warning.Failed(false) || !warning.Failed(true) {
		t.Error("a warning fails only in strict mode")
	}
	var clean lint.Report
	if clean.Failed(true) {
		t.Error("a clean report fails")
	}
}

// Many scripts over a few workers, each reusing its instance.
func TestRunMany(t *testing.T) {
	rt := newRuntime(t)
	var sources []lint.Source
	for i := range 300 {
		text := "local x = 1\nreturn x\n"
		if i%7 == 0 {
			text = "return pirnt\n"
		}
		sources = append(sources, lint.Source{Name: filepath.Join("d", strings.Repeat("x", i%5)+".luau"), Text: []byte(text)})
	}
	rep, err := lint.Run(context.Background(), rt, sources, lint.Options{Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	if errs, _ := rep.Count(); errs != 43 {
		t.Fatalf("%d errors, want 43", errs)
	}
}

// A file reports at most lint.MaxDiagnosticsPerFile diagnostics, and one
// more that counts the rest, as severe as the worst of them.
func TestRunCapsDiagnosticsPerFile(t *testing.T) {
	rt := newRuntime(t)
	cases := []struct {
		name     string
		text     string
		shown    int
		severity lint.Severity
		message  string
	}{
		{"errors on one line", strings.Repeat(")", 1500), lint.MaxDiagnosticsPerFile, lint.Error,
			"500 more diagnostics not shown (500 errors, 0 warnings): lint reports at most 1000 per file"},
		{"warnings", strings.Repeat("local a = 1\n", 1200) + "print(a)\n", lint.MaxDiagnosticsPerFile, lint.Warning,
			"1398 more diagnostics not shown (0 errors, 1398 warnings)"}, // unused and shadowed
		{"exactly the limit", strings.Repeat(")", lint.MaxDiagnosticsPerFile), lint.MaxDiagnosticsPerFile, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep, err := lint.Run(context.Background(), rt, []lint.Source{{Name: "many.luau", Text: []byte(c.text)}, {Name: "b.luau", Text: []byte("pirnt(1)\n")}}, lint.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var mine []lint.Diagnostic
			for _, d := range rep.Diagnostics {
				if d.File == "many.luau" {
					mine = append(mine, d)
				}
			}
			if last := rep.Diagnostics[len(rep.Diagnostics)-1]; last.File != "b.luau" || last.Rule != lint.RuleUnknownGlobal {
				t.Errorf("the next file's diagnostic: %+v", last)
			}
			if c.message == "" {
				if len(mine) != c.shown || mine[len(mine)-1].Rule == lint.RuleTooManyDiagnostics {
					t.Fatalf("%d diagnostics, the last %+v", len(mine), mine[len(mine)-1])
				}
				return
			}
			if len(mine) != c.shown+1 {
				t.Fatalf("%d diagnostics, want %d and one that counts the rest", len(mine), c.shown)
			}
			summary := mine[c.shown]
			if summary.Rule != lint.RuleTooManyDiagnostics || summary.Severity != c.severity || !strings.HasPrefix(summary.Message, c.message) {
				t.Errorf("last diagnostic: %+v, want %s %q", summary, c.severity, c.message)
			}
			if before := mine[c.shown-1]; summary.Line < before.Line || summary.Line == before.Line && summary.Column < before.Column {
				t.Errorf("the summary at %d:%d is before the last shown at %d:%d", summary.Line, summary.Column, before.Line, before.Column)
			}
		})
	}
}

// A file the module fails on gets a lint_failed diagnostic that names what
// happened; the files before and after it are reported as usual, and with
// --effects it is not checked rather than harmless.
func TestRunFileFailureIsItsDiagnostic(t *testing.T) {
	ctx := context.Background()
	// A smaller memory than the default runs out sooner: 128k errors need
	// more than 48 MiB.
	rt := testruntime.New(t, luau.Config{SDK: testSDK, MaxMemoryBytes: 48 << 20})
	sources := []lint.Source{
		{Name: "a.luau", Text: []byte("local unused = 1\nsdk.pets.create_pet({})\n")},
		{Name: "parens.luau", Text: []byte(strings.Repeat(")", 128<<10))},
		{Name: "c.luau", Text: []byte("pirnt(1)\n")},
	}
	rep, err := lint.Run(ctx, rt, sources, lint.Options{Workers: 1, Effects: true, FileTimeout: time.Hour})
	if err != nil {
		t.Fatalf("one file's failure failed the run: %v", err)
	}
	var got []string
	for _, d := range rep.Diagnostics {
		got = append(got, fmt.Sprintf("%s:%d:%d %s %s", d.File, d.Line, d.Column, d.Severity, d.Rule))
	}
	want := []string{"a.luau:1:7 warning unused_local", "parens.luau:1:1 error lint_failed", "c.luau:1:1 error unknown_global"}
	if !slices.Equal(got, want) {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	if msg := rep.Diagnostics[1].Message; !strings.Contains(msg, "not checked") || !strings.Contains(msg, "ran out of the linter's memory") {
		t.Errorf("message %q does not say the file is not checked for lack of memory", msg)
	}
	if e := rep.Effects[1]; e.File != "parens.luau" || e.Checked || e.Changes() {
		t.Errorf("effects of the failed file: %+v", e)
	}
	if e := rep.Effects[0]; !e.Checked || len(e.Unsafe) != 1 {
		t.Errorf("effects of a.luau: %+v", e)
	}
	var sarif bytes.Buffer
	if err := lint.Write(&sarif, lint.FormatSARIF, rep, lint.Tool{}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"ruleId": "unused_local"`, `"ruleId": "lint_failed"`, `"ruleId": "unknown_global"`, `"uri": "parens.luau"`} {
		if !strings.Contains(sarif.String(), s) {
			t.Errorf("SARIF lacks %s", s)
		}
	}
}

// A file that takes longer than the time allowed per file gets a
// lint_failed diagnostic that says so: the module is stopped in the
// middle of parsing a file whose parse takes seconds.
func TestRunFileTimeout(t *testing.T) {
	ctx := context.Background()
	rt := testruntime.New(t, luau.Config{StopOnContextDone: true})
	src := lint.Source{Name: "slow.luau", Text: []byte(strings.Repeat(")", 1<<20))}
	rep, err := lint.Run(ctx, rt, []lint.Source{src}, lint.Options{FileTimeout: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Diagnostics) != 1 || rep.Diagnostics[0].Rule != lint.RuleLintFailed ||
		!strings.Contains(rep.Diagnostics[0].Message, "took longer than the 1ms allowed per file") {
		t.Fatalf("got %+v", rep.Diagnostics)
	}
}

// TestRunLargeFilesStoppable: with Options.Stoppable, a file larger than
// SmallFileBytes is linted by the stoppable Runtime (made once, for the
// first such file), so its deadline stops it; smaller files never make it.
func TestRunLargeFilesStoppable(t *testing.T) {
	ctx := context.Background()
	fast := newRuntime(t)
	var made int
	var stoppable *luau.Runtime
	opts := lint.Options{FileTimeout: time.Millisecond, Workers: 2, Stoppable: func() (*luau.Runtime, error) {
		made++
		rt, err := luau.New(ctx, luau.Config{StopOnContextDone: true})
		stoppable = rt
		return rt, err
	}}
	t.Cleanup(func() {
		if stoppable != nil {
			stoppable.Close(ctx)
		}
	})
	small := []lint.Source{{Name: "a.luau", Text: []byte("return 1")}, {Name: "b.luau", Text: []byte("local x = 1\nreturn x")}}
	rep, err := lint.Run(ctx, fast, small, lint.Options{FileTimeout: time.Minute, Stoppable: opts.Stoppable})
	if err != nil {
		t.Fatal(err)
	}
	if made != 0 || len(rep.Diagnostics) != 0 {
		t.Fatalf("small files: the stoppable Runtime was made %d times, diagnostics %+v", made, rep.Diagnostics)
	}
	large := lint.Source{Name: "slow.luau", Text: []byte(strings.Repeat(")", 1<<20))}
	// Only large files: under load even a small file may take longer than
	// the millisecond allowed.
	rep, err = lint.Run(ctx, fast, []lint.Source{large, large}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if made != 1 {
		t.Errorf("the stoppable Runtime was made %d times, want once", made)
	}
	if len(rep.Diagnostics) != 2 {
		t.Fatalf("got %+v, want a lint_failed per large file", rep.Diagnostics)
	}
	for _, d := range rep.Diagnostics {
		if d.Rule != lint.RuleLintFailed || !strings.Contains(d.Message, "took longer than the 1ms allowed per file") {
			t.Errorf("got %+v, want the deadline's lint_failed", d)
		}
	}
}

func TestRunCancelled(t *testing.T) {
	rt := newRuntime(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := lint.Run(ctx, rt, []lint.Source{{Name: "a", Text: []byte("return 1")}}, lint.Options{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func names(sources []lint.Source) []string {
	var out []string
	for _, s := range sources {
		out = append(out, filepath.ToSlash(s.Name))
	}
	return out
}

func TestCollect(t *testing.T) {
	root := t.TempDir()
	testfile.Tree(t, root, map[string]string{
		"a.luau":             "return 1",
		"notes.txt":          "not a script",
		"sub/b.lua":          "return 2",
		"sub/deep/c.LUAU":    "return 3",
		"sub/.git/d.luau":    "hidden",
		"sub/deep/e.luau.md": "not a script",
		"explicit.txt":       "return 4",
	})
	t.Chdir(root)

	cases := []struct {
		name  string
		paths []string
		stdin string
		want  []string
		err   string
	}{
		{name: "directory recursion", paths: []string{"."}, want: []string{"a.luau", "sub/b.lua", "sub/deep/c.LUAU"}},
		{name: "nested directory", paths: []string{"sub"}, want: []string{"sub/b.lua", "sub/deep/c.LUAU"}},
		{name: "a file whatever its name", paths: []string{"explicit.txt"}, want: []string{"explicit.txt"}},
		{name: "each script once", paths: []string{"a.luau", ".", "./a.luau"}, want: []string{"a.luau", "sub/b.lua", "sub/deep/c.LUAU"}},
		{name: "hidden directory given explicitly", paths: []string{"sub/.git"}, want: []string{"sub/.git/d.luau"}},
		{name: "standard input", paths: []string{"-", "a.luau"}, stdin: "return 5", want: []string{"<stdin>", "a.luau"}},
		{name: "standard input twice", paths: []string{"-", "-"}, err: "more than once"},
		{name: "missing file", paths: []string{"a.luau", "missing.luau"}, err: "cannot read missing.luau: no such file or directory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sources, err := lint.Collect(c.paths, strings.NewReader(c.stdin), "")
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := names(sources); !slices.Equal(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}

	empty := filepath.Join(root, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := lint.Collect([]string{empty}, nil, ""); !errors.Is(err, lint.ErrNoScripts) {
		t.Errorf("empty directory: err = %v, want ErrNoScripts", err)
	}
}

// A script that cannot be read is an error that names it; the other
// paths are still gathered so that every bad path is reported at once.
func TestCollectUnreadable(t *testing.T) {
	root := t.TempDir()
	testfile.Tree(t, root, map[string]string{"ok.luau": "return 1", "dir/x.luau": "return 2"})
	// A dangling link cannot be read, not even by root.
	if err := os.Symlink("nowhere.luau", filepath.Join(root, "dir", "broken.luau")); err != nil {
		t.Fatal(err)
	}
	paths := []string{filepath.Join(root, "ok.luau"), filepath.Join(root, "dir"), filepath.Join(root, "gone.luau")}
	_, err := lint.Collect(paths, nil, "")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want a not-exist error", err)
	}
	for _, name := range []string{"broken.luau: no such file or directory", "gone.luau: no such file or directory"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not say %q", err, name)
		}
	}

	if runtime.GOOS == "windows" || os.Geteuid() == 0 {
		return // file modes do not stop root from reading
	}
	secret := filepath.Join(root, "secret.luau")
	testfile.Tree(t, root, map[string]string{"secret.luau": "return 1"})
	if err := os.Chmod(secret, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := lint.Collect([]string{secret}, nil, ""); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("err = %v, want a permission error", err)
	}
}
