package luau_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/internal/testruntime"
)

// lintRuntime returns a Runtime for one test, without a pool: a Linter
// creates its own instance. The compilation cache makes creating it cheap.
func lintRuntime(t testing.TB) *luau.Runtime {
	t.Helper()
	return testruntime.New(t, luau.Config{})
}

// diag formats a diagnostic compactly for comparisons:
// "rule@line:col-endline:endcol".
func diag(d luau.LintDiagnostic) string {
	return fmt.Sprintf("%s@%d:%d-%d:%d", d.Rule, d.Line, d.Column, d.EndLine, d.EndColumn)
}

func lintOne(t *testing.T, l *luau.Linter, source string) []luau.LintDiagnostic {
	t.Helper()
	diags, err := l.Lint(context.Background(), []byte(source))
	if err != nil {
		t.Fatalf("Lint: %v", err)
	}
	return diags
}

func TestLintRules(t *testing.T) {
	cases := []struct {
		name   string
		source string
		io     bool
		want   []string // diag() of each diagnostic, in order
		// message, if set, must be part of the first diagnostic's message.
		message string
	}{
		{name: "clean", source: "local x = 1\nprint(x)\nreturn string.upper('a')\n"},
		{name: "misspelled global", source: "pirnt('hi')\n",
			want: []string{"unknown_global@1:1-1:6"}, message: "unknown global 'pirnt': it does not exist in the toolscript sandbox; did you mean 'print'?"},
		{name: "require", source: "local m = require('x')\nreturn m\n",
			want: []string{"unknown_global@1:11-1:18"}, message: "'require'"},
		{name: "loadstring", source: "return loadstring('return 1')\n", want: []string{"unknown_global@1:8-1:18"}},
		{name: "os.execute", source: "os.execute('ls')\n",
			want: []string{"unknown_global@1:1-1:11"}, message: "'os.execute' does not exist in the toolscript sandbox"},
		{name: "string.dump", source: "return string.dump\n", want: []string{"unknown_global@1:8-1:19"}},
		{name: "misspelled member", source: "return string.lenn('x')\n",
			want: []string{"unknown_global@1:8-1:19"}, message: "did you mean 'string.len'?"},
		{name: "member by constant key", source: "return os['getenv']\n", want: []string{"unknown_global@1:8-1:20"}},
		{name: "removed base functions", source: "return getfenv, setfenv, collectgarbage, gcinfo, newproxy\n",
			want: []string{"unknown_global@1:8-1:15", "unknown_global@1:17-1:24", "unknown_global@1:26-1:40",
				"unknown_global@1:42-1:48", "unknown_global@1:50-1:58"}},
		{name: "sandbox globals", source: "print(json.encode({}), typeof(1), buffer.create(1), utf8.char(65), bit32.band(1, 1))\nprogress(1, 2, 'x')\nreturn os.time(), os.clock(), os.date(), os.difftime(1, 2)\n"},
		{name: "script globals", source: "function helper() return counter end\ncounter = 1\nreturn helper()\n"},
		{name: "global assigned in a function", source: "local function init() state = {} end\ninit()\nreturn state\n"},
		{name: "locals and parameters", source: "local t = {}\nlocal function f(a, ...) return a, ... end\nreturn f(t)\n"},
		{name: "io enabled", io: true, source: "local f = io.open('x')\nos.remove('y')\nfile.save('a', 'b')\nfor line in io.lines('z') do print(line) end\nreturn f, io.type(f), io.list(), os.time()\n"},
		{name: "io part two", io: true, source: "local s = io.stat('x')\nlocal g = io.glob('*')\nlocal m = io.grep('a', '.', {glob = '*.txt'})\nio.edit('x', 'a', 'b', true)\nos.rename('x', 'y')\nreturn s, g, m\n"},
		{name: "io part two disabled", source: "os.rename('x', 'y')\n",
			want: []string{"io_disabled@1:1-1:10"}, message: "'os.rename' is not available: io is disabled by the configuration"},
		{name: "io stand-ins do not exist", io: true, source: "return io.popen, io.read, io.stdin, os.execute\n",
			want:    []string{"unknown_global@1:8-1:16", "unknown_global@1:18-1:25", "unknown_global@1:27-1:35", "unknown_global@1:37-1:47"},
			message: "'io.popen' does not exist in the toolscript sandbox"},
		{name: "io tables are read-only", io: true, source: "io.x = 1\nos.y = 2\n", want: []string{"readonly_global@1:1-1:5", "readonly_global@2:1-2:5"}},
		{name: "io disabled", source: "local f = io.open('x')\nos.remove('y')\nreturn f, file\n",
			want: []string{"io_disabled@1:11-1:13", "io_disabled@2:1-2:10", "io_disabled@3:11-3:15"}, message: "'io' is not available: io is disabled by the configuration"},
		{name: "readonly library", source: "string.foo = 1\ntable['x'] = 2\nfunction math.sq(x) return x * x end\nbit32.y += 1\n_G.z = 1\n",
			want:    []string{"readonly_global@1:1-1:11", "readonly_global@2:1-2:11", "readonly_global@3:10-3:17", "readonly_global@4:1-4:8", "readonly_global@5:1-5:5"},
			message: "'string' is a read-only table in the toolscript sandbox: assigning 'string.foo' fails at run time"},
		{name: "own table is writable", source: "local M = {}\nM.x = 1\nfunction M.f() end\nstring = {}\nstring.foo = 1\nreturn M\n"},
		{name: "unused local", source: "local a = 1\nlocal _b = 2\nlocal function helper() end\nfor i = 1, 3 do end\nfor _, v in pairs({}) do end\n",
			want:    []string{"unused_local@1:7-1:8", "unused_local@3:16-3:22", "unused_local@4:5-4:6", "unused_local@5:8-5:9"},
			message: "local 'a' is never used; remove it or prefix its name with '_'"},
		{name: "written but never read", source: "local a\na = 1\n", want: []string{"unused_local@1:7-1:8"}},
		{name: "read in a closure", source: "local a = 1\nreturn function() return a end\n"},
		{name: "unused parameter is fine", source: "return function(a, b) return a end\n"},
		{name: "shadowed local", source: "local x = 1\ndo\n  local x = 2\n  print(x)\nend\nlocal function f(x) return x end\nprint(x, f)\n",
			want: []string{"shadowed_local@3:9-3:10", "shadowed_local@6:18-6:19"}, message: "local 'x' shadows the variable of the same name declared at line 1"},
		{name: "underscore may shadow", source: "local _ = 1\nfor _ = 1, 2 do end\n"},
		{name: "unreachable after error", source: "local function f()\n  error('x')\n  print('never')\n  return 1\nend\nreturn f\n",
			want: []string{"unreachable_code@3:3-4:11"}, message: "unreachable code after a call to error()"},
		{name: "unreachable after if with returns", source: "local function f(c)\n  if c then return 1 else return 2 end\n  print('never')\nend\nreturn f\n",
			want: []string{"unreachable_code@3:3-3:17"}},
		{name: "unreachable after break in do", source: "for i = 1, 2 do\n  do break end\n  print(i)\nend\n",
			want: []string{"unreachable_code@3:3-3:11"}, message: "after break"},
		{name: "unreachable after endless loop", source: "while true do end\nprint('never')\n",
			want: []string{"unreachable_code@2:1-2:15"}, message: "after a loop that never ends"},
		{name: "loop with break ends", source: "while true do break end\nprint('ok')\n"},
		{name: "if without else", source: "local function f(c)\n  if c then return 1 end\n  return 2\nend\nreturn f\n"},
		{name: "shadowed error is not known", source: "error = print\nerror('x')\nprint('reached')\n"},
		{name: "too few values", source: "local a, b = 1\nreturn a, b\n",
			want: []string{"assignment_count@1:1-1:15"}, message: "local declaration has 2 variables but 1 value: the last variable is always nil"},
		{name: "too many values", source: "local a = 1, 2\nreturn a\n", want: []string{"assignment_count@1:1-1:15"}, message: "evaluated and discarded"},
		{name: "assignment count", source: "local a, b\na, b = 1\nreturn a, b\n", want: []string{"assignment_count@2:1-2:9"}},
		{name: "call fills the rest", source: "local a, b = pcall(print)\nlocal c, d = ...\nlocal e, f = nil\nreturn a, b, c, d, e, f\n"},
		{name: "nolint all", source: "--!nolint\npirnt(1)\nlocal a = 1\n"},
		{name: "nolint one rule", source: "--!nolint unused_local\npirnt(1)\nlocal a = 1\n", want: []string{"unknown_global@2:1-2:6"}},
		{name: "nolint on a line", source: "pirnt(1) --!nolint unknown_global\npirnt(2)\n", want: []string{"unknown_global@2:1-2:6"}},
		{name: "nolint unknown rule", source: "--!nolint no_such_rule\n",
			want: []string{"invalid_nolint@1:1-1:23"}, message: "--!nolint names an unknown rule 'no_such_rule'"},
		{name: "nolint cannot hide syntax", source: "--!nolint\nlocal = 1\n", want: []string{"syntax@2:7-2:8"}},
		{name: "several syntax errors", source: "local x = = 1\nprint(x\nlocal y = (2\n",
			want: []string{"syntax@1:11-1:12", "syntax@3:1-3:6", "syntax@4:1-4:1"}},
		{name: "bytecode refused", source: "\x1bLua", want: []string{"syntax@1:1-1:2"}, message: "binary chunks are not accepted"},
	}
	rt := lintRuntime(t)
	linters := map[bool]*luau.Linter{false: rt.NewLinter(luau.LintOptions{}), true: rt.NewLinter(luau.LintOptions{IO: true})}
	defer linters[false].Close()
	defer linters[true].Close()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			diags := lintOne(t, linters[c.io], c.source)
			var got []string
			for _, d := range diags {
				got = append(got, diag(d))
			}
			if strings.Join(got, " ") != strings.Join(c.want, " ") {
				t.Errorf("got  %v\nwant %v\nmessages: %v", got, c.want, diags)
			}
			if c.message != "" && len(diags) > 0 && !strings.Contains(diags[0].Message, c.message) {
				t.Errorf("message %q does not contain %q", diags[0].Message, c.message)
			}
		})
	}
}

// A compile error unwinds the module; the Linter reports it and goes on
// with a new instance.
func TestLintCompileErrorReplacesInstance(t *testing.T) {
	l := lintRuntime(t).NewLinter(luau.LintOptions{})
	defer l.Close()

	// Returning more values than a function has registers is a limit the
	// compiler, not the parser, enforces.
	var b strings.Builder
	b.WriteString("local function f()\n  return ")
	for i := range 300 {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "{%d}", i)
	}
	b.WriteString("\nend\nreturn f\n")
	diags := lintOne(t, l, b.String())
	if len(diags) != 1 || diags[0].Rule != luau.RuleSyntax || diags[0].Line != 2 {
		t.Fatalf("got %+v, want one syntax diagnostic on line 2", diags)
	}
	if !strings.Contains(diags[0].Message, "Exceeded") {
		t.Errorf("message %q is not the compiler's", diags[0].Message)
	}
	if diags := lintOne(t, l, "pirnt(1)\n"); len(diags) != 1 || diags[0].Rule != "unknown_global" {
		t.Fatalf("after a compile error: got %+v", diags)
	}
}

// One instance lints many scripts: the environment is read once and
// nothing from one script leaks into the next.
func TestLintManyScripts(t *testing.T) {
	l := lintRuntime(t).NewLinter(luau.LintOptions{})
	defer l.Close()
	for i := range 200 {
		src := fmt.Sprintf("g%d = 1\nreturn g%d\n", i, i)
		if diags := lintOne(t, l, src); len(diags) != 0 {
			t.Fatalf("script %d: %+v", i, diags)
		}
		// A global defined by the previous script is unknown here.
		if diags := lintOne(t, l, fmt.Sprintf("return g%d\n", i)); len(diags) != 1 {
			t.Fatalf("script %d: want one diagnostic, got %+v", i, diags)
		}
	}
}

func TestLintEmptyAndCancelled(t *testing.T) {
	l := lintRuntime(t).NewLinter(luau.LintOptions{})
	defer l.Close()
	if diags := lintOne(t, l, ""); len(diags) != 0 {
		t.Fatalf("empty script: %+v", diags)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Lint(ctx, []byte("return 1")); err == nil {
		t.Fatal("Lint with a cancelled context succeeded")
	}
}

// With LintOptions.Effects, the records of what a script can change come
// after the diagnostics: each thing once, where first named, whatever
// --!nolint says; without it, none.
func TestLintEffectsRecords(t *testing.T) {
	rt := testruntime.New(t, luau.Config{SDK: sdkManifest})
	source := "--!nolint\n" + strings.Repeat("sdk.get_pet()\nsdk.store.shared()\nsdk[k]()\nos.remove('x')\n", 1000) + "io.open('a', 'w')\n" +
		"io.edit('a', 'x', 'y')\nos.rename('a', 'b')\nio.grep('x')\nio.glob('*')\nio.stat('a')\n"
	l := rt.NewLinter(luau.LintOptions{IO: true, Effects: true})
	defer l.Close()
	var got []string
	for _, d := range lintOne(t, l, source) {
		got = append(got, fmt.Sprintf("%s %s @%d:%d", d.Rule, d.Message, d.Line, d.Column))
	}
	want := []string{
		luau.EffectsSDK + " sdk.pets.get_pet @2:1",
		luau.EffectsSDK + " sdk.store.shared @3:1",
		luau.EffectsUnnamed + " sdk[...] @4:1",
		luau.EffectsIO + " os.remove @5:1",
		luau.EffectsIO + ` io.open(..., "w") @4002:1`,
		luau.EffectsIO + " io.edit @4003:1",
		luau.EffectsIO + " os.rename @4004:1",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	plain := rt.NewLinter(luau.LintOptions{IO: true})
	defer plain.Close()
	if diags := lintOne(t, plain, source); len(diags) != 0 {
		t.Errorf("without Effects: %v", diags)
	}
}

// A script the module fails on is a *LintFailure that says why (here:
// memory), and the Linter goes on with a new instance; so it does after a
// context that ended (host/lint's tests stop the module at a deadline).
func TestLintFailureThenGoesOn(t *testing.T) {
	ctx := context.Background()
	rt := testruntime.New(t, luau.Config{MaxMemoryBytes: 48 << 20})
	l := rt.NewLinter(luau.LintOptions{})
	defer l.Close()
	parens := []byte(strings.Repeat(")", 128<<10)) // more syntax errors than 48 MiB hold

	_, err := l.Lint(ctx, parens)
	var failure *luau.LintFailure
	if !errors.As(err, &failure) || !errors.Is(err, luau.ErrOutOfMemory) {
		t.Fatalf("err = %v, want a LintFailure of ErrOutOfMemory", err)
	}
	if got := lintOne(t, l, "pirnt(1)\n"); len(got) != 1 || diag(got[0]) != "unknown_global@1:1-1:6" {
		t.Fatalf("the next script: %v", got)
	}

	done, cancel := context.WithCancel(ctx)
	cancel()
	_, err = l.Lint(done, parens)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if got := lintOne(t, l, "return 1\n"); len(got) != 0 {
		t.Fatalf("after a cancellation: %v", got)
	}
}
