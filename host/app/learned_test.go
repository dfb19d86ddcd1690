package app_test

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolscript/toolscript/host/app"
	"github.com/toolscript/toolscript/host/config"
	"github.com/toolscript/toolscript/host/lint"
	"github.com/toolscript/toolscript/internal/testupstreams"
	"github.com/toolscript/toolscript/internal/testwait"
)

// TestLearnedFromRecordedRun: a run recorded against pyserver.py (its raw
// tool returns structured content and declares no outputSchema) teaches
// its result type: the docs (get_function_docs, the definitions) give it,
// marked as learned, and lint --types flags a field it does not have;
// the weather tool's declared outputSchema wins over what was recorded;
// serve (stdio) shows it in get_function_docs.
// Without the trace, raw returns any and nothing is flagged.
func TestLearnedFromRecordedRun(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	python := testupstreams.Python(t)
	recordDir := t.TempDir()
	configFile := func(dir string) *config.File {
		effects := ""
		if dir != "" {
			effects = fmt.Sprintf("[effects]\nrecord_dir = %q\n", dir)
		}
		return configFile(t, effects+fmt.Sprintf("[mcp_servers.py]\ncommand = %q\nargs = [%q]\n", python[0], python[1]))
	}
	file := configFile(recordDir)
	opts := app.SDKOptions{Stderr: io.Discard}
	res, err := app.Run(testwait.Context(t), app.RunConfig{File: file, Settings: settings(t, file, config.Run), SDK: opts,
		Source: []byte(`local r = sdk.py.raw({depth = 2})
local w = sdk.py.weather({city = "Paris"})
return {#r.v, w.city}`), Record: filepath.Join(recordDir, "run.trace.jsonl")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Error != nil {
		t.Fatalf("the recorded run failed: %+v", res.Error)
	}

	var warnings strings.Builder
	d, err := app.Docs(testwait.Context(t), file, opts, &warnings)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := d.FunctionDocs("py.raw")
	if err != nil || !strings.Contains(docs, "Returns (learned from 1 recorded call, not declared by the server): { v: {{any}} }") {
		t.Errorf("raw's docs (%v):\n%s", err, docs)
	}
	if docs, _ := d.FunctionDocs("py.weather"); strings.Contains(docs, "learned") {
		t.Errorf("weather's declared outputSchema lost to a learned type:\n%s", docs)
	}
	if defs := d.Definitions(); !strings.Contains(defs, "\t\t-- result type learned from 1 recorded call, not declared\n\t\traw: ") ||
		!strings.Contains(defs, "-> ({ v: {{any}} }, SdkResponse),") {
		t.Errorf("the definitions lack raw's learned type:\n%s", defs)
	}
	if warnings.Len() > 0 {
		t.Errorf("warnings: %s", warnings.String())
	}

	// serve (stdio) learns from record_dir too: get_function_docs gives it.
	served := serveRecording(t, file, false)
	res2, err := served.connect("").CallTool(testwait.Context(t), mcp.CallToolRequest{Params: mcp.CallToolParams{
		Name: "get_function_docs", Arguments: map[string]any{"name": "py.raw"}}})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for _, c := range res2.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if !strings.Contains(text.String(), "Returns (learned from 1 recorded call, not declared by the server): { v: {{any}} }") {
		t.Errorf("serve's get_function_docs:\n%s", text.String())
	}

	script := []lint.Source{{Name: "t.luau", Text: []byte("local r = sdk.py.raw({depth = 1})\nreturn r.nonexistent_field\n")}}
	for _, tc := range []struct {
		name string
		file *config.File
		want string
	}{
		{"learned", file, "2 error type"},
		{"nothing recorded", configFile(""), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			report, err := app.Lint(context.Background(), app.LintConfig{File: tc.file, SDK: opts, Sources: script, Types: true})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range report.Diagnostics {
				got = append(got, fmt.Sprintf("%d %s %s", d.Line, d.Severity, d.Rule))
			}
			if strings.Join(got, "; ") != tc.want {
				t.Errorf("got %q, want %q (%+v)", got, tc.want, report.Diagnostics)
			}
		})
	}
}
