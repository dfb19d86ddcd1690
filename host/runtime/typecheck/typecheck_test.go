package typecheck_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/runtime/typecheck"
	"github.com/toolscript/toolscript/host/runtime/typecheck/typechecktest"
)

// definitions is a small sdk: one API whose operation takes a required
// owner and an enum state and answers an issue.
const definitions = `
type Issue = {
	number: number,
	title: string,
	state: "open" | "closed",
	comments: number,
	body: string?,
}

declare sdk: {
	github: {
		get_issue: (args: { owner: string, number: number, state: ("open" | "closed")? }) -> Issue,
	},
}
`

// cacheDir is the compilation cache the package's tests share, filled
// once by TestMain: a test's checks do not wait for the modules to
// compile (minutes under the race detector).
var cacheDir string

func TestMain(m *testing.M) {
	os.Exit(runWithCache(m))
}

func runWithCache(m *testing.M) int {
	dir, err := os.MkdirTemp("", "typecheck-cache")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	cacheDir = filepath.Join(dir, "wazero")
	c, err := typecheck.New(context.Background(), typecheck.Config{CacheDir: cacheDir, LoadTimeout: time.Hour})
	if err == nil {
		_, err = c.Check(context.Background(), "return 1\n")
		c.Close(context.Background())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "filling the compilation cache:", err)
		return 1
	}
	return m.Run()
}

// newChecker is a Checker of cfg, with the package's compilation cache
// unless cfg names another.
func newChecker(t *testing.T, cfg typecheck.Config) *typecheck.Checker {
	t.Helper()
	return typechecktest.New(t, withCache(cfg))
}

// loadedChecker is newChecker's Checker with the package's definitions
// loaded.
func loadedChecker(t *testing.T, cfg typecheck.Config) *typecheck.Checker {
	t.Helper()
	return typechecktest.Loaded(t, withCache(cfg), []byte(definitions))
}

// withCache is cfg with the package's compilation cache unless it names
// another.
func withCache(cfg typecheck.Config) typecheck.Config {
	if cfg.CacheDir == "" {
		cfg.CacheDir = cacheDir
	}
	return cfg
}

// TestCheckFindsPlantedMistakes checks scripts against the small sdk: each
// planted mistake is reported on its line with its category, and a correct
// script (optional fields checked with if, pcall's error value) gives
// nothing.
func TestCheckFindsPlantedMistakes(t *testing.T) {
	c := loadedChecker(t, typecheck.Config{})
	tests := []struct {
		name     string
		source   string
		line     int
		category string
	}{
		{"unknown response field", "local i = sdk.github.get_issue({owner = \"o\", number = 1})\nreturn i.comment_count\n", 2, "unknown_property"},
		{"wrong primitive", "local i = sdk.github.get_issue({owner = \"o\", number = \"1\"})\nreturn i.title\n", 1, "type_mismatch"},
		{"wrong literal", "local i = sdk.github.get_issue({owner = \"o\", number = 1, state = \"opened\"})\nreturn i.title\n", 1, "type_mismatch"},
		{"missing required argument", "local i = sdk.github.get_issue({number = 1})\nreturn i.title\n", 1, ""},
		{"unknown function", "return sdk.github.get_issues({owner = \"o\", number = 1})\n", 1, "unknown_property"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			diags, err := c.Check(context.Background(), tt.source)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, d := range diags {
				if d.Line == tt.line && (tt.category == "" || d.Category == tt.category) {
					found = true
				}
			}
			if !found {
				t.Errorf("want a %q diagnostic on line %d, got %+v", tt.category, tt.line, diags)
			}
		})
	}

	correct := `local i = sdk.github.get_issue({owner = "o", number = 1, state = "open"})
local n = i.comments + 1
if i.body then
	print(string.upper(i.body))
end
local ok, err = pcall(function()
	return sdk.github.get_issue({owner = "o", number = 2})
end)
if not ok then
	print(tostring(err))
end
return {title = i.title, n = n}
`
	diags, err := c.Check(context.Background(), correct)
	if err != nil {
		t.Fatal(err)
	}
	if len(diags) != 0 {
		t.Errorf("a correct script got diagnostics: %+v", diags)
	}
}

// TestVMSyntax checks that the checker takes the syntax the VM (0.745)
// takes: const locals.
func TestVMSyntax(t *testing.T) {
	c := newChecker(t, typecheck.Config{})
	diags, err := c.Check(context.Background(), "const x = 1\nreturn x + 1\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(diags) != 0 {
		t.Errorf("const local: got %+v", diags)
	}
}

// TestDefinitionsOverCapRefused checks that definitions larger than the
// cap are refused before anything loads them.
func TestDefinitionsOverCapRefused(t *testing.T) {
	c := newChecker(t, typecheck.Config{MaxDefinitionsBytes: 1024})
	err := c.Load([]byte(strings.Repeat("-- padding\n", 200)))
	if !errors.Is(err, typecheck.ErrDefinitions) || !strings.Contains(err.Error(), "over the limit of 1024 bytes") {
		t.Fatalf("want the definitions refused over the cap, got %v", err)
	}
}

// TestBrokenDefinitionsNamed checks that definitions that do not parse
// give an error naming the line, not an unchecked script.
func TestBrokenDefinitionsNamed(t *testing.T) {
	c := newChecker(t, typecheck.Config{})
	if err := c.Load([]byte("declare sdk: {\n\tgithub: {\n")); err != nil {
		t.Fatal(err)
	}
	_, err := c.Check(context.Background(), "return 1\n")
	if !errors.Is(err, typecheck.ErrDefinitions) || errors.Is(err, typecheck.ErrUnchecked) || !strings.Contains(err.Error(), "line ") {
		t.Fatalf("want the definitions' error with its line, got %v", err)
	}
}

// TestTrapIsUnchecked checks that a check the checker cannot finish (its
// memory runs out loading definitions: operator new aborts, which traps)
// is an UncheckedError, and that the Checker works again afterwards with
// definitions it can hold.
func TestTrapIsUnchecked(t *testing.T) {
	c := newChecker(t, typecheck.Config{MaxMemoryBytes: 8 << 20})
	var big strings.Builder
	big.WriteString("declare sdk: {\n")
	for i := range 20000 {
		big.WriteString("\tf")
		big.WriteString(strings.Repeat("x", 10))
		big.WriteString(strconv.Itoa(i))
		big.WriteString(": (args: { a: string, b: number, c: boolean? }) -> { x: string, y: number, z: { string } },\n")
	}
	big.WriteString("}\n")
	if err := c.Load([]byte(big.String())); err != nil {
		t.Fatal(err)
	}
	_, err := c.Check(context.Background(), "return 1\n")
	var unchecked *typecheck.UncheckedError
	if !errors.As(err, &unchecked) || !errors.Is(err, typecheck.ErrUnchecked) || !strings.Contains(unchecked.Reason, "failed inside the checker") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("want an UncheckedError in one line, got %v", err)
	}

	if err := c.Load([]byte(definitions)); err != nil {
		t.Fatal(err)
	}
	diags, err := c.Check(context.Background(), "return sdk.github.get_issue({owner = \"o\", number = 1}).title\n")
	if err != nil || len(diags) != 0 {
		t.Fatalf("after a trap: got %+v, %v", diags, err)
	}
}

// TestRunawayCheckStopped checks that a check whose time is up (its own
// limit, or its caller's context) is stopped inside the module (wazero
// closes it when its context is done) and reported unchecked; the next
// check starts a fresh instance.
func TestRunawayCheckStopped(t *testing.T) {
	expired, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel()
	tests := []struct {
		name   string
		cfg    typecheck.Config
		ctx    context.Context
		reason string
	}{
		// A nanosecond is over before any check gets through the module.
		{"its time limit", typecheck.Config{CheckTimeout: time.Nanosecond}, context.Background(), "ran over its time limit of 1ns"},
		{"the caller's context", typecheck.Config{}, expired, "was stopped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := loadedChecker(t, tt.cfg)
			_, err := c.Check(tt.ctx, "local x: number = \"s\"\nreturn x\n")
			var unchecked *typecheck.UncheckedError
			if !errors.As(err, &unchecked) || !strings.Contains(unchecked.Reason, tt.reason) {
				t.Fatalf("want an unchecked script (%s), got %v", tt.reason, err)
			}
		})
	}

	c := loadedChecker(t, typecheck.Config{})
	if _, err := c.Check(expired, "return 1\n"); !errors.Is(err, typecheck.ErrUnchecked) {
		t.Fatalf("want an unchecked script, got %v", err)
	}
	diags, err := c.Check(context.Background(), "local x: number = \"s\"\nreturn x\n")
	if err != nil || len(diags) != 1 || diags[0].Category != "type_mismatch" {
		t.Fatalf("after a stopped check: got %+v, %v", diags, err)
	}
}

// FuzzCheck: whatever the script, a check answers diagnostics inside the
// script's lines or says the script is unchecked; it never fails
// otherwise (the checker's JSON, with messages quoting the script's own
// names and bytes, always decodes).
func FuzzCheck(f *testing.F) {
	for _, seed := range []string{
		"return 1\n",
		"local x: number = \"s\"\n",
		"local t = {[\"\\1\\\"\\n\"] = 1}\nreturn t.nope\n",
		"local \xff = 1\n",
		"type T = { [\"a\\\"b\"]: number }\nlocal v: T = { [\"a\\\"b\"] = \"x\" }\n",
		"return sdk.github.get_issue({owner = 1, number = \"x\", extra\x01 = 2})\n",
		strings.Repeat("(", 300) + strings.Repeat(")", 300),
	} {
		f.Add(seed)
	}
	c := typechecktest.Loaded(f, typecheck.Config{CacheDir: cacheDir}, []byte(definitions))
	f.Fuzz(func(t *testing.T, source string) {
		diags, err := c.Check(context.Background(), source)
		if err != nil {
			if !errors.Is(err, typecheck.ErrUnchecked) {
				t.Fatalf("%q: %v", source, err)
			}
			return
		}
		lines := strings.Count(source, "\n") + 1
		for _, d := range diags {
			if d.Line < 1 || d.Line > lines+1 || d.Column < 1 || d.Message == "" {
				t.Fatalf("%q: diagnostic out of the script: %+v", source, d)
			}
		}
	})
}
