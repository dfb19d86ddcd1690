package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/toolscript/toolscript/internal/testapi"
	"github.com/toolscript/toolscript/internal/testconfig"
	"github.com/toolscript/toolscript/internal/testfile"
	"github.com/toolscript/toolscript/internal/vtscreen"
)

// The tests below run the command in process, show what it wrote to a
// terminal emulator and assert the screen: what a person reviewing the
// output sees.

// toolscriptRun runs the command with args and returns its standard
// output and error and its exit status.
func toolscriptRun(t *testing.T, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	return toolscriptRunIn(t, "", args...)
}

// toolscriptRunIn is toolscriptRun with stdin as the standard input.
func toolscriptRunIn(t *testing.T, stdin string, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	var out, errOut bytes.Buffer
	status = run(append([]string{"toolscript"}, args...), strings.NewReader(stdin), &out, &errOut)
	return out.String(), errOut.String(), status
}

// shopConfig starts the test API, served for real, and writes a
// configuration with it as the API "shop"; it returns the API, the path of
// the configuration and an io directory beside it.
func shopConfig(t *testing.T) (api *testapi.Server, config, ioDir string) {
	t.Helper()
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	api = testapi.New(t)
	dir := t.TempDir()
	ioDir = filepath.Join(dir, "files")
	if err := os.Mkdir(ioDir, 0o755); err != nil {
		t.Fatal(err)
	}
	testconfig.Write(t, dir, "[apis.shop]\nspec = "+testconfig.Quote(testapi.SpecPath())+"\nbase_url = "+testconfig.Quote(api.URL)+"\nauth = \"t\"\n")
	return api, filepath.Join(dir, testconfig.Name), ioDir
}

// forgedDryRun deletes a pet, then writes a file whose diff, on a
// terminal, moves the cursor up over the listing, clears it and prints a
// harmless listing of its own; a second file's name clears its line.
const forgedDryRun = `
sdk.shop.delete_pet({ petId = 7 })
local f = io.open("notes.txt", "w")
f:write("\27[6A\r\27[Jdry run: 1 effect (nothing was changed):\n  1. write  notes.txt (6 bytes)\n       +hello\n")
f:close()
local g = io.open("a\27[2K\rb.txt", "w")
g:write("x")
g:close()
`

func TestDryRunListingShowsEveryEffect(t *testing.T) {
	_, config, ioDir := shopConfig(t)
	script := testfile.Temp(t, "script.luau", forgedDryRun)
	_, stderr, status := toolscriptRun(t, "run", "--config", config, "--io-dir", ioDir, "--dry-run", script)
	if status != 0 {
		t.Fatalf("status %d: %s", status, stderr)
	}
	screen, _ := vtscreen.Render(stderr)
	for _, want := range []string{
		"dry run: 3 effects (nothing was changed):",
		"  1. call   sdk.shop.delete_pet: DELETE ",
		`       +\x1b[6A\r\x1b[Jdry run: 1 effect (nothing was changed):`,
		`       +  1. write  notes.txt (6 bytes)`,
		`  3. write  a\x1b[2K\rb.txt (1 byte, sha256 `,
	} {
		if !strings.Contains(screen, want) {
			t.Errorf("the screen does not show %q:\n%s", want, screen)
		}
	}
}

func TestPlanListingShowsFileNames(t *testing.T) {
	_, config, ioDir := shopConfig(t)
	script := testfile.Temp(t, "script.luau", `
local g = io.open("a\27[2K\rb.txt", "w")
g:write("x")
g:close()
local h = io.open("c\nd.txt", "w")
h:write("y")
h:close()
`)
	plan, stderr, status := toolscriptRun(t, "run", "--config", config, "--io-dir", ioDir, "--dry-run", "--json", script)
	if status != 0 {
		t.Fatalf("dry run: status %d: %s", status, stderr)
	}
	planFile := filepath.Join(t.TempDir(), "plan.json")
	testfile.Write(t, planFile, plan)
	_, stderr, status = toolscriptRun(t, "run", "--config", config, "--io-dir", ioDir, "--plan", planFile, script)
	if status != 0 {
		t.Fatalf("plan: status %d: %s", status, stderr)
	}
	screen, _ := vtscreen.Render(stderr)
	want := "plan: 2 effects applied:\n" +
		`  1. write  a\x1b[2K\rb.txt (1 byte, sha256 2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881)` + "\n" +
		`  2. write  c\nd.txt (1 byte, sha256 a1fce4363854ff888cff4b8e7875d600c2682390412a8cf79b37d0b11148b0fa)`
	if screen != want {
		t.Errorf("the screen shows\n%s\nwant\n%s", screen, want)
	}
}

func TestRunShowsWhatAScriptPrints(t *testing.T) {
	script := testfile.Temp(t, "script.luau", `
print("copy: \27]52;c;cm0gLXJmIH4=\7 done")
print("title: \27]0;owned\7")
print("two\nlines, \\x1b and a tab:\tend")
error("boom \27[2J\27[H gone")
`)
	stdout, stderr, status := toolscriptRun(t, "run", "--no-io", script)
	if status != exitScriptError {
		t.Fatalf("status %d: %s %s", status, stdout, stderr)
	}
	screen, title := vtscreen.Render(stdout + stderr)
	want := `copy: \x1b]52;c;cm0gLXJmIH4=\x07 done` + "\n" +
		`title: \x1b]0;owned\x07` + "\n" +
		"two\n" +
		`lines, \\x1b and a tab:` + " end\n" +
		`error: ` + script + `:5: boom \x1b[2J\x1b[H gone`
	if screen != want || title != "" {
		t.Errorf("the screen shows (title %q)\n%s\nwant\n%s", title, screen, want)
	}
}

// --json is exact data, one JSON line that a CI log may show: what a
// script prints reaches it as the same JSON values, with no legacy
// workflow command ("##[", read anywhere in a line) and no character that
// acts on a terminal.
func TestRunJSONHoldsNoWorkflowCommand(t *testing.T) {
	script := testfile.Temp(t, "script.luau", `
print("##[add-matcher]m.json")
print("abc\u{202e}txt \u{9b}2J")
return "##[error]x"
`)
	stdout, stderr, status := toolscriptRun(t, "run", "--no-io", "--json", script)
	if status != 0 {
		t.Fatalf("status %d: %s %s", status, stdout, stderr)
	}
	var res struct {
		Value string   `json:"result"`
		Logs  []string `json:"logs"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("not JSON: %v: %s", err, stdout)
	}
	if res.Value != "##[error]x" || len(res.Logs) != 2 || res.Logs[0] != "##[add-matcher]m.json" || res.Logs[1] != "abc\u202etxt \u009b2J" {
		t.Errorf("the values changed: %+v", res)
	}
	if strings.Contains(stdout, "##[") || strings.ContainsAny(stdout, "\u202e\u009b") {
		t.Errorf("standard output holds a workflow command or a control: %q", stdout)
	}
}

// A pull request adds evil.luau, which deletes, and scripts whose names
// say that evil.luau is harmless: one moves the cursor up over evil.luau's
// line and clears it, one starts lines of its own.
func TestLintEffectsShowsEveryScript(t *testing.T) {
	_, config, _ := shopConfig(t)
	dir := t.TempDir()
	files := map[string]string{
		"evil.luau": "sdk.shop.delete_pet({ petId = 1 })\n",
		"zz\x1b[1A\r\x1b[2Kevil.luau: no unsafe sdk calls\x1b[1B\r\x1b[2Kzz.luau": "print(1)\n",
		"zz\nevil.luau: no unsafe sdk calls\nzz.luau":                             "print(2)\n",
	}
	testfile.Tree(t, dir, files)
	t.Chdir(dir)
	stdout, stderr, status := toolscriptRun(t, "lint", "--config", config, "--effects", ".")
	if status != 0 {
		t.Fatalf("status %d: %s %s", status, stdout, stderr)
	}
	screen, _ := vtscreen.Render(stdout)
	want := "evil.luau: can change the world through sdk.shop.delete_pet (DELETE /pets/{petId})\n" +
		`zz\nevil.luau: no unsafe sdk calls\nzz.luau: no unsafe sdk calls` + "\n" +
		`zz\x1b[1A\r\x1b[2Kevil.luau: no unsafe sdk calls\x1b[1B\r\x1b[2Kzz.luau: no unsafe sdk calls`
	if screen != want {
		t.Errorf("the screen shows\n%s\nwant\n%s", screen, want)
	}
}

// A parse error quotes the script's bytes: an OSC 52 sequence (which sets
// the clipboard) and a screen clear among them.
func TestLintShowsParseErrorsEscaped(t *testing.T) {
	dir := t.TempDir()
	source := "local x = 1 \"\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J\"\n"
	testfile.Write(t, filepath.Join(dir, "a.luau"), source)
	t.Chdir(dir)
	stdout, stderr, status := toolscriptRun(t, "lint", ".")
	if status != exitScriptError {
		t.Fatalf("status %d: %s %s", status, stdout, stderr)
	}
	screen, _ := vtscreen.Render(stdout + stderr)
	if !strings.Contains(screen, `got "\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J"`) || !strings.HasPrefix(screen, "a.luau:1:") {
		t.Errorf("the screen shows\n%s", screen)
	}
}

// lint runs in CI on pull requests: a hostile file's name (which starts
// each line of the text output) and the source a parse error quotes must
// not be workflow commands to a GitHub Actions runner, which reads "::"
// after a line's leading white space and the legacy "##[" anywhere in it.
func TestLintFileNamesAreNoWorkflowCommands(t *testing.T) {
	dir := t.TempDir()
	for name, source := range map[string]string{
		"::stop-commands::pwn.luau":    "local x = \n",
		" ::error title=a::b.luau":     "local x = \n",
		"x ##[add-matcher]m.json.luau": "local x = \n",
		"q.luau":                       "local x = 1 \"##[warning]forged\x1b]0;t\x07\"\n",
	} {
		testfile.Write(t, filepath.Join(dir, name), source)
	}
	t.Chdir(dir)
	for _, format := range []string{"text", "github", "json", "sarif"} {
		stdout, stderr, status := toolscriptRun(t, "lint", "--format", format, ".")
		if status != exitScriptError {
			t.Fatalf("--format %s: status %d: %s %s", format, status, stdout, stderr)
		}
		if format == "json" || format == "sarif" {
			if !json.Valid([]byte(stdout)) || !strings.Contains(stdout, "::stop-commands::pwn.luau") {
				t.Errorf("--format %s: not the JSON wanted: %s", format, stdout)
			}
		} else if n := strings.Count(stdout, "\n"); n != 4 {
			t.Errorf("--format %s: %d lines, want 4:\n%s", format, n, stdout)
		}
		if strings.ContainsAny(stdout, "\x1b\x07") {
			t.Errorf("--format %s: a control character on the terminal: %q", format, stdout)
		}
		for _, line := range strings.Split(stdout+stderr, "\n") {
			if strings.Contains(line, "##[") {
				t.Errorf("--format %s: a legacy workflow command: %q", format, line)
			}
			if format == "text" && strings.HasPrefix(strings.TrimLeftFunc(line, unicode.IsSpace), "::") {
				t.Errorf("--format text: a workflow command: %q", line)
			}
			if format == "github" && line != "" && !strings.HasPrefix(line, "::error file=") {
				t.Errorf("--format github: a line that is not an annotation: %q", line)
			}
		}
	}
}

// A spec's descriptions are lines of `sdk docs`: a third party's spec read
// in CI must not make one of them a workflow command.
func TestSpecDocsAreNoWorkflowCommands(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	spec := `{"openapi": "3.0.3",
  "info": {"title": "Shop", "version": "1", "description": "hi\n::warning file=README.md::from info\n##[error]x"},
  "servers": [{"url": "http://127.0.0.1:1"}],
  "paths": {"/items": {"get": {"operationId": "listItems", "summary": "List",
    "description": "Lists.\n::error::from op\n  ::stop-commands::tok",
    "responses": {"200": {"description": "ok"}}}}}}`
	path := filepath.Join(t.TempDir(), "spec.json")
	testfile.Write(t, path, spec)
	for _, name := range []string{"shop", "list_items"} {
		stdout, stderr, status := toolscriptRun(t, "sdk", "--api", "shop="+path, "docs", name)
		if status != 0 {
			t.Fatalf("status %d: %s %s", status, stdout, stderr)
		}
		if !strings.Contains(stdout, "::") {
			t.Fatalf("sdk docs %s does not show the descriptions:\n%s", name, stdout)
		}
		for _, line := range strings.Split(stdout+stderr, "\n") {
			if strings.HasPrefix(strings.TrimLeftFunc(line, unicode.IsSpace), "::") || strings.Contains(line, "##[") {
				t.Errorf("sdk docs %s: a workflow command: %q", name, line)
			}
		}
	}
}

// A spec's names reach its warnings: one that holds a line break must not
// start a line of its own on standard error, where CI reads workflow
// commands (::warning ...::, ::stop-commands::). Its title and summaries
// reach the listings.
func TestSpecTextIsShownEscaped(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	spec := `{
  "openapi": "3.0.3",
  "info": {"title": "Shop \u001b]0;owned\u0007\u001b[2J", "version": "1"},
  "servers": [{"url": "http://127.0.0.1:1"}],
  "paths": {"/items": {"get": {
    "operationId": "listItems",
    "summary": "List \u001b[31mitems\u202e\tnow",
    "parameters": [{"name": "a\n::warning file=README.md,line=1::injected", "in": "cookie2", "schema": {"type": "string"}}],
    "responses": {"200": {"description": "ok"}}
  }}}
}`
	path := filepath.Join(t.TempDir(), "spec.json")
	testfile.Write(t, path, spec)
	stdout, stderr, status := toolscriptRun(t, "sdk", "--api", "shop="+path, "list")
	if status != 0 {
		t.Fatalf("status %d: %s %s", status, stdout, stderr)
	}
	for _, line := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(line, "::") {
			t.Errorf("standard error has a workflow command: %q", line)
		}
	}
	if !strings.Contains(stderr, `parameter a\n::warning file=README.md,line=1::injected has an unknown location`) {
		t.Errorf("the warning does not name the parameter: %q", stderr)
	}
	screen, title := vtscreen.Render(stdout)
	if !strings.Contains(screen, `Shop \x1b]0;owned\x07\x1b[2J`) || title != "" {
		t.Errorf("sdk list: the screen shows (title %q)\n%s", title, screen)
	}
	stdout, _, _ = toolscriptRun(t, "sdk", "--api", "shop="+path, "list", "shop")
	if screen, _ := vtscreen.Render(stdout); !strings.Contains(screen, `list_items  List \x1b[31mitems\u202e now`) {
		t.Errorf("sdk list shop: the screen shows\n%s", screen)
	}
	stdout, _, _ = toolscriptRun(t, "sdk", "--api", "shop="+path, "docs", "list_items")
	if screen, title := vtscreen.Render(stdout); !strings.Contains(screen, `List \x1b[31mitems\u202e`) || title != "" {
		t.Errorf("sdk docs list_items: the screen shows (title %q)\n%s", title, screen)
	}
}

func TestErrorTextIsOneLinePerError(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{errors.New("plain"), "plain"},
		{errors.New("spec a\n::warning::injected \x1b[2J"), `spec a\n::warning::injected \x1b[2J`},
		{errors.Join(errors.New("api a: x\ny"), errors.New("api b: z")), "api a: x\\ny\ntoolscript: api b: z"},
	}
	for _, tt := range tests {
		if got := errorText(tt.err); got != tt.want {
			t.Errorf("errorText(%q) = %q, want %q", tt.err, got, tt.want)
		}
	}
}
