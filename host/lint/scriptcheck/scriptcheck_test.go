package scriptcheck_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/lint"
	"github.com/toolscript/toolscript/host/lint/scriptcheck"
	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/host/runtime/result"
	"github.com/toolscript/toolscript/host/runtime/typecheck"
	"github.com/toolscript/toolscript/host/sdk"
	"github.com/toolscript/toolscript/host/sdk/openapi/openapitest"
	"github.com/toolscript/toolscript/host/sdk/sdkdocs"
	"github.com/toolscript/toolscript/internal/testruntime"
	"github.com/toolscript/toolscript/internal/testspecs"
	"github.com/toolscript/toolscript/internal/testwait"
)

// githubCatalog is GitHub's real API as the sdk "gh".
func githubCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	return &catalog.Catalog{APIs: []*catalog.API{openapitest.Load(t, "gh", testspecs.GitHub(t))}}
}

// newRuntime is a runtime whose module knows cat's functions (the sdk
// rules), as the runtime scripts run in does.
func newRuntime(t *testing.T, cat *catalog.Catalog) *luau.Runtime {
	t.Helper()
	client, err := sdk.New(cat, sdk.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	manifest := client.Manifest()
	return testruntime.New(t, luau.Config{CacheDir: t.TempDir(), SDK: &manifest})
}

func newChecker(t *testing.T) *scriptcheck.Checker {
	t.Helper()
	c := scriptcheck.New(typecheck.Config{CacheDir: t.TempDir()})
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// TestCheckGitHub: against GitHub's real spec, each planted mistake stops
// a run (an error of rule type, or the module's sdk rule), the correct
// script has no diagnostic, a syntax error is the VM parser's and leaves
// the types unchecked, and an oversized script is unchecked.
func TestCheckGitHub(t *testing.T) {
	cat := githubCatalog(t)
	docs := sdkdocs.New(cat)
	rt, c := newRuntime(t, cat), newChecker(t)
	ctx := testwait.Context(t)
	tests := []struct {
		name, source string
		refusedLine  int    // 0: not refused
		rule         string // a diagnostic of this rule is expected
		unchecked    string // part of Outcome.Unchecked
	}{
		{"correct", testspecs.GitHubScript, 0, "", ""},
		{"unknown response field", "local issue = sdk.gh.issues_get({owner = \"o\", repo = \"r\", issue_number = 1})\nreturn issue.comment_count\n", 2, lint.RuleType, ""},
		{"wrong enum literal", "local open = sdk.gh.issues_list_for_repo({owner = \"o\", repo = \"r\", state = \"opened\"})\nreturn #open\n", 1, lint.RuleType, ""},
		{"missing parameter", "return sdk.gh.issues_get({owner = \"o\", issue_number = 3}).title\n", 1, lint.RuleSDKMissingParameter, ""},
		{"syntax error", "local x = = 1\nreturn x\n", 0, lint.RuleSyntax, "does not parse"},
		{"oversized", "return 1 --" + strings.Repeat("x", scriptcheck.MaxSourceBytes) + "\n", 0, "", "over the"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := c.Check(ctx, rt, docs, scriptcheck.Script{Name: "s.luau", Source: []byte(tc.source)})
			if err != nil {
				t.Fatal(err)
			}
			refusal := out.Refusal()
			switch {
			case tc.refusedLine == 0 && refusal != nil:
				t.Errorf("refused: %s", refusal.Message)
			case tc.refusedLine != 0 && (refusal == nil || refusal.Kind != result.Type || refusal.Line != tc.refusedLine):
				t.Errorf("refusal %+v, want kind type on line %d; %+v", refusal, tc.refusedLine, out)
			case tc.refusedLine != 0 && !strings.Contains(refusal.Message, "s.luau:"):
				t.Errorf("refusal %q does not name the script's positions", refusal.Message)
			}
			if tc.rule == "" && tc.unchecked == "" && len(out.Diagnostics) > 0 {
				t.Errorf("diagnostics for a correct script: %+v", out.Diagnostics)
			}
			if tc.rule != "" && !scriptcheck.HasRule(out.Diagnostics, tc.rule) {
				t.Errorf("no %s diagnostic: %+v", tc.rule, out.Diagnostics)
			}
			if !strings.Contains(out.Unchecked, tc.unchecked) || (tc.unchecked == "") != (out.Unchecked == "") {
				t.Errorf("unchecked %q, want %q", out.Unchecked, tc.unchecked)
			}
			if (out.Unchecked == "") != (len(out.Warnings()) == 0) {
				t.Errorf("warnings %q with unchecked %q", out.Warnings(), out.Unchecked)
			}
		})
	}
}

// TestDefinitionsLoadedOnce: nothing is loaded before the first check;
// concurrent checks share one load; docs with the same text (a rebuilt
// sdk that did not change) are not loaded again; a changed text is.
func TestDefinitionsLoadedOnce(t *testing.T) {
	c := newChecker(t)
	ctx := testwait.Context(t)
	if c.Loads() != 0 {
		t.Fatalf("%d loads before any check", c.Loads())
	}
	// pets is an MCP server "pets" with tools.
	pets := func(tools ...string) *catalog.Catalog {
		api := &catalog.API{Name: "pets", Kind: catalog.MCP}
		for _, tool := range tools {
			api.Functions = append(api.Functions, &catalog.Function{Name: tool, Kind: catalog.MCP, Tool: tool})
		}
		cat := &catalog.Catalog{APIs: []*catalog.API{api}}
		if err := cat.Link(); err != nil {
			t.Fatal(err)
		}
		return cat
	}
	small := func(tool string) *sdkdocs.Docs { return sdkdocs.New(pets(tool)) }
	first := small("get_pet")
	rt := newRuntime(t, pets("get_pet", "get_pets")) // the module knows both
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if _, err := c.Check(ctx, rt, first, scriptcheck.Script{Source: []byte("return sdk.pets.get_pet()\n")}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if c.Loads() != 1 {
		t.Errorf("%d loads for 4 concurrent checks, want 1", c.Loads())
	}
	out, err := c.Check(ctx, rt, small("get_pet"), scriptcheck.Script{Source: []byte("return sdk.pets.get_pets()\n")})
	if err != nil {
		t.Fatal(err)
	}
	if c.Loads() != 1 || out.Refusal() == nil {
		t.Errorf("same text: %d loads (want 1), refusal %v (want one for get_pets)", c.Loads(), out.Refusal())
	}
	out, err = c.Check(ctx, rt, small("get_pets"), scriptcheck.Script{Source: []byte("return sdk.pets.get_pets()\n")})
	if err != nil {
		t.Fatal(err)
	}
	if c.Loads() != 2 || out.Refusal() != nil {
		t.Errorf("changed text: %d loads (want 2), refusal %v (want none)", c.Loads(), out.Refusal())
	}
}

// TestRefusalBounded: a refusal's message lists errors up to
// MaxMessageChars and counts the rest.
func TestRefusalBounded(t *testing.T) {
	var out scriptcheck.Outcome
	for i := range 1000 {
		out.Diagnostics = append(out.Diagnostics, lint.Diagnostic{File: "s", Line: i + 1, Column: 1, Severity: lint.Error, Rule: lint.RuleType,
			Message: strings.Repeat("m", 100)})
	}
	out.Diagnostics = append(out.Diagnostics, lint.Diagnostic{File: "s", Line: 2000, Severity: lint.Warning, Rule: lint.RuleType, Message: "w"})
	r := out.Refusal()
	if r == nil || len(r.Message) > scriptcheck.MaxMessageChars+200 || !strings.Contains(r.Message, "found 1000 error(s) (") {
		t.Fatalf("refusal of %d characters: %.300s", len(r.Message), r.Message)
	}
}

// TestRefusedDefinitionsNotRebuilt: docs whose definitions are over the
// checker's cap leave every check unchecked, and their text (seconds of
// work for a large sdk, under the lock every check takes) is written
// once, not again for each check.
func TestRefusedDefinitionsNotRebuilt(t *testing.T) {
	c := scriptcheck.New(typecheck.Config{CacheDir: t.TempDir(), MaxDefinitionsBytes: 64})
	t.Cleanup(func() { c.Close(context.Background()) })
	cat := &catalog.Catalog{APIs: []*catalog.API{{Name: "pets", Kind: catalog.MCP, Functions: []*catalog.Function{{Name: "get_pet", Kind: catalog.MCP, Tool: "get_pet"}}}}}
	if err := cat.Link(); err != nil {
		t.Fatal(err)
	}
	docs, rt, ctx := sdkdocs.New(cat), newRuntime(t, cat), testwait.Context(t)
	for i := range 3 {
		out, err := c.Check(ctx, rt, docs, scriptcheck.Script{Source: []byte("return sdk.pets.get_pet()\n")})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.Unchecked, "definitions do not load") {
			t.Errorf("check %d: unchecked %q, want the definitions refused", i, out.Unchecked)
		}
	}
	if n := scriptcheck.TextsBuilt(c); n != 1 {
		t.Errorf("the definitions' text was written %d times for 3 checks of the same docs, want 1", n)
	}
}

// TestLooseAPI: of two APIs, one whose definitions are over the checker's
// cap is declared loosely: the other's misuse is still refused, and a
// script that names the loose one (its table, written either way, or one
// of its functions that are also sdk.<name>) runs with a warning on the
// first place it does, naming it; a script that does not gets none.
func TestLooseAPI(t *testing.T) {
	pets := &catalog.API{Name: "pets", Kind: catalog.MCP, Functions: []*catalog.Function{{Name: "get_pet", Kind: catalog.MCP, Tool: "get_pet",
		InputSchema: &catalog.Schema{Type: []string{"object"}, Required: []string{"id"}, Properties: []*catalog.Property{{Name: "id", Schema: &catalog.Schema{Type: []string{"number"}}}}}}}}
	bulk := &catalog.API{Name: "bulk", Kind: catalog.OpenAPI, Functions: []*catalog.Function{{Name: "bulk_ping", Kind: catalog.OpenAPI, Method: "GET", Path: "/ping"}}}
	for i := range 300 {
		bulk.Functions = append(bulk.Functions, &catalog.Function{Name: fmt.Sprintf("tool_%03d", i), Kind: catalog.MCP, Tool: fmt.Sprintf("tool_%03d", i)})
	}
	cat := &catalog.Catalog{APIs: []*catalog.API{pets, bulk}}
	if err := cat.Link(); err != nil {
		t.Fatal(err)
	}
	docs := sdkdocs.New(cat)
	limit := len(docs.DefinitionsLoose([]string{"bulk"})) + 512
	if len(docs.Definitions()) <= limit {
		t.Fatalf("the definitions' %d bytes are not over the limit of %d", len(docs.Definitions()), limit)
	}
	c := scriptcheck.New(typecheck.Config{CacheDir: t.TempDir(), MaxDefinitionsBytes: limit})
	t.Cleanup(func() { c.Close(context.Background()) })
	rt, ctx := newRuntime(t, cat), testwait.Context(t)
	tests := []struct {
		name, source string
		refused      bool
		warnLine     int // 0: no warning about bulk
		warnColumn   int
	}{
		{"other API's misuse", "return sdk.pets.get_pet({id = \"one\"})\n", true, 0, 0},
		{"loose API", "local n = 1\nlocal r = sdk.bulk.tool_001()\nreturn r\n", false, 2, 11},
		{"loose API by a string key", "local r = sdk[\"bulk\"].tool_002()\nreturn r\n", false, 1, 11},
		{"loose API's flat function", "local s = \"é\"; return s, sdk.bulk_ping()\n", false, 1, 26},
		{"not named", "return sdk.pets.get_pet({id = 1})\n", false, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := c.Check(ctx, rt, docs, scriptcheck.Script{Name: "s.luau", Source: []byte(tc.source)})
			if err != nil {
				t.Fatal(err)
			}
			if (out.Refusal() != nil) != tc.refused || out.Unchecked != "" {
				t.Errorf("refusal %v, unchecked %q; want refused %v, checked", out.Refusal(), out.Unchecked, tc.refused)
			}
			var warned []lint.Diagnostic
			for _, d := range out.Diagnostics {
				if strings.Contains(d.Message, "sdk.bulk do not load") {
					warned = append(warned, d)
				}
			}
			switch {
			case tc.warnLine == 0 && len(warned) > 0:
				t.Errorf("warned %+v, want nothing about bulk", warned)
			case tc.warnLine > 0 && (len(warned) != 1 || warned[0].Line != tc.warnLine || warned[0].Column != tc.warnColumn ||
				warned[0].Severity != lint.Warning || !strings.Contains(warned[0].Message, "over the limit")):
				t.Errorf("warned %+v, want one warning at %d:%d saying why", warned, tc.warnLine, tc.warnColumn)
			}
		})
	}
	if c.Loads() != 1 {
		t.Errorf("%d definitions' texts loaded, want 1", c.Loads())
	}
}
