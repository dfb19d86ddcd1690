package lint_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/lint"
	"github.com/toolscript/toolscript/host/runtime/typecheck"
	"github.com/toolscript/toolscript/host/runtime/typecheck/typechecktest"
)

// typesDefinitions declare testSDK's get_pet for the type checker.
const typesDefinitions = `
type Pet = { id: number, name: string, tag: string? }
declare sdk: { get_pet: (params: { pet_id: number, fields: string? }) -> Pet }
`

func newTypeChecker(t *testing.T, cfg typecheck.Config, definitions string) *typecheck.Checker {
	t.Helper()
	cfg.CacheDir = t.TempDir()
	return typechecktest.Loaded(t, cfg, []byte(definitions))
}

// TestTypes: lint with a type checker reports what it finds under the rule
// type (an error where the run fails, a warning for a value that may be
// nil), one line each, in characters; a script with a syntax error is not
// type-checked; --disable type drops the rule; a script the checker
// cannot finish gets one warning that says so.
func TestTypes(t *testing.T) {
	rt := newRuntime(t)
	checker := newTypeChecker(t, typecheck.Config{}, typesDefinitions)
	tests := []struct {
		name    string
		source  string
		disable []string
		want    []string // "line:column severity", rule type
	}{
		{"a field the response lacks", "local p = sdk.get_pet({pet_id = 1})\nreturn p.nmae\n", nil, []string{"2:8 error"}},
		{"columns in characters", "local p = sdk.get_pet({pet_id = 1})\nreturn {\"é\", p.nmae}\n", nil, []string{"2:14 error"}},
		{"a string where a number goes", "return sdk.get_pet({pet_id = \"1\"}).name\n", nil, []string{"1:20 error"}},
		{"a value that may be nil", "local p = sdk.get_pet({pet_id = 1})\nreturn string.upper(p.tag)\n", nil, []string{"2:21 warning"}},
		{"a correct script", "local p = sdk.get_pet({pet_id = 1})\nif p.tag then return string.upper(p.tag) end\nreturn p.name\n", nil, nil},
		{"said by the module's sdk rule", "return sdk.get_pet({fields = \"name\"}).name\n", nil, nil},
		{"a syntax error", "local p = sdk.get_pet({pet_id = \"1\"})\nreturn p.nmae +\n", nil, nil},
		{"disabled", "return sdk.get_pet({pet_id = 1}).nmae\n", []string{lint.RuleType}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := lint.Run(context.Background(), rt, []lint.Source{{Name: "t.luau", Text: []byte(tt.source)}},
				lint.Options{Types: checker, Disable: tt.disable})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range rep.Diagnostics {
				if d.Rule != lint.RuleType {
					continue
				}
				if strings.Contains(d.Message, "\n") {
					t.Errorf("a message of more than one line: %q", d.Message)
				}
				got = append(got, strings.Join([]string{strconv.Itoa(d.Line) + ":" + strconv.Itoa(d.Column), string(d.Severity)}, " "))
			}
			if strings.Join(got, ", ") != strings.Join(tt.want, ", ") {
				t.Errorf("got %v, want %v (%+v)", got, tt.want, rep.Diagnostics)
			}
		})
	}

	t.Run("unchecked", func(t *testing.T) {
		var big strings.Builder
		big.WriteString("declare sdk: {\n")
		for i := range 20000 {
			big.WriteString("\tf" + strconv.Itoa(i) + ": (args: { a: string, b: number, c: boolean? }) -> { x: string, y: number, z: { string } },\n")
		}
		big.WriteString("}\n")
		small := newTypeChecker(t, typecheck.Config{MaxMemoryBytes: 8 << 20}, big.String())
		rep, err := lint.Run(context.Background(), rt, []lint.Source{{Name: "t.luau", Text: []byte("return 1\n")}}, lint.Options{Types: small})
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Diagnostics) != 1 || rep.Diagnostics[0].Rule != lint.RuleType || rep.Diagnostics[0].Severity != lint.Warning ||
			!strings.Contains(rep.Diagnostics[0].Message, "script unchecked") {
			t.Fatalf("want one unchecked warning, got %+v", rep.Diagnostics)
		}
	})
}

// TestNolintType: --!nolint type (and a --!nolint naming no rule) disables
// the type checker's rule as it does the module's rules: for the whole
// file before any code, for its own line after code; the module's
// invalid_nolint for the name type is not reported, with or without a
// type checker; a --!nolint in a string is none.
func TestNolintType(t *testing.T) {
	rt := newRuntime(t)
	checker := newTypeChecker(t, typecheck.Config{}, typesDefinitions)
	const mistake = "return sdk.get_pet({pet_id = 1}).nmae"
	tests := []struct {
		name   string
		source string
		types  bool
		want   []string // "line rule"
	}{
		{"reported", mistake + "\n", true, []string{"1 type"}},
		{"file-wide", "--!nolint type\n" + mistake + "\n", true, nil},
		{"file-wide among others", "--!nolint unused_local, type\nlocal a = 1\n" + mistake + "\n", true, nil},
		{"file-wide after a block comment", "--[[ about\nthis ]]\n--!nolint type\n" + mistake + "\n", true, nil},
		{"every rule", "--!nolint\n" + mistake + "\n", true, nil},
		{"another rule only", "--!nolint unused_local\n" + mistake + "\n", true, []string{"2 type"}},
		{"its own line", mistake + " --!nolint type\n", true, nil},
		{"every rule of its line", mistake + " --!nolint\n", true, nil},
		{"not another line", "local p = sdk.get_pet({pet_id = 1}) --!nolint type\nreturn p.nmae\n", true, []string{"2 type"}},
		{"after code is not file-wide", "local p = sdk.get_pet({pet_id = 1})\n--!nolint type\nreturn p.nmae\n", true, []string{"3 type"}},
		{"in a string", "local _s = \"--!nolint type\" return sdk.get_pet({pet_id = 1}).nmae\n", true, []string{"1 type"}},
		{"in a long string", "local _s = [==[\n--!nolint type\n]==]\nreturn sdk.get_pet({pet_id = 1}).nmae\n", true, []string{"4 type"}},
		{"in an interpolated string", "local _s = `{\"x\"}--!nolint type` return sdk.get_pet({pet_id = 1}).nmae\n", true, []string{"1 type"}},
		{"in a block comment", "--[[\n--!nolint type\n]] " + mistake + "\n", true, []string{"3 type"}},
		{"without a type checker", "--!nolint type\nreturn 1\n", false, nil},
		{"a misspelled name", "--!nolint typ\nreturn 1\n", false, []string{"1 invalid_nolint"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := lint.Options{}
			if tt.types {
				opts.Types = checker
			}
			rep, err := lint.Run(context.Background(), rt, []lint.Source{{Name: "t.luau", Text: []byte(tt.source)}}, opts)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range rep.Diagnostics {
				got = append(got, strconv.Itoa(d.Line)+" "+d.Rule)
			}
			if strings.Join(got, ", ") != strings.Join(tt.want, ", ") {
				t.Errorf("got %v, want %v (%+v)", got, tt.want, rep.Diagnostics)
			}
		})
	}
}

// FuzzHotComments: finding a source's hot comments never panics and
// finds each on a line of the source.
func FuzzHotComments(f *testing.F) {
	for _, s := range []string{"--!nolint type\nreturn 1", "local _s = `a{ {1} }b` --!nolint\n", "--[==[ x ]==] [[ y ]] '\\\n' --!x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		lines := strings.Count(src, "\n") + 1
		for _, hc := range lint.HotComments([]byte(src)) {
			if hc.Line < 1 || hc.Line > lines {
				t.Fatalf("line %d of %d", hc.Line, lines)
			}
		}
	})
}
