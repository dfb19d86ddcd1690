package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/internal/testconfig"
	"github.com/toolscript/toolscript/internal/testfile"
	"github.com/toolscript/toolscript/internal/testupstreams"
)

// TestLearnFlag: --learn gives run --check and serve (standard input and
// output) the result types learned from a recorded trace, as it gives
// sdk and lint: pyserver's raw tool declares no result type, and its
// recorded result makes a field it never had a type error; without
// --learn the same script runs. Where it would do nothing or shape what
// other users see (run without --check, serve --http) it is a usage error.
func TestLearnFlag(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	python := testupstreams.Python(t)
	dir := t.TempDir()
	config := filepath.Join(testconfig.Write(t, dir, "[mcp_servers.py]\ncommand = "+testconfig.Quote(python[0])+"\nargs = ["+testconfig.Quote(python[1])+"]\n"), testconfig.Name)
	trace := filepath.Join(dir, "raw.trace.jsonl")
	recorded := testfile.Temp(t, "record.luau", "return #sdk.py.raw({depth = 2}).v\n")
	if stdout, stderr, status := toolscriptRun(t, "run", "--config", config, "--record", trace, recorded); status != 0 {
		t.Fatalf("the recorded run: status %d, stdout %q, stderr %q", status, stdout, stderr)
	}
	script := testfile.Temp(t, "field.luau", "local r = sdk.py.raw({depth = 1})\nreturn r.nonexistent_field\n")

	text := failedRun(t, "", "run", "--config", config, "--check", "--learn", trace, script)
	if !strings.Contains(text, "type error: "+script+":2:") || !strings.Contains(text, "nonexistent_field") {
		t.Errorf("run --check --learn:\n%s", text)
	}
	if stdout, stderr, status := toolscriptRun(t, "run", "--config", config, "--check", script); status != 0 {
		t.Errorf("run --check without --learn: status %d, stdout %q, stderr %q", status, stdout, stderr)
	}

	// serve on standard input and output: get_function_docs gives the
	// learned type.
	requests := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_function_docs","arguments":{"name":"py.raw"}}}`,
	}, "\n") + "\n"
	var out, errOut bytes.Buffer
	if status := run([]string{"toolscript", "serve", "--config", config, "--learn", trace}, strings.NewReader(requests), &out, &errOut); status != 0 {
		t.Fatalf("serve --learn: status %d: %s", status, errOut.String())
	}
	var docs string
	for line := range strings.SplitSeq(out.String(), "\n") {
		var msg struct {
			ID     int `json:"id"`
			Result struct {
				Content []struct{ Text string } `json:"content"`
			} `json:"result"`
		}
		if json.Unmarshal([]byte(line), &msg) == nil && msg.ID == 2 && len(msg.Result.Content) > 0 {
			docs = msg.Result.Content[0].Text
		}
	}
	if !strings.Contains(docs, "learned from 1 recorded call") {
		t.Errorf("serve --learn: get_function_docs of py.raw:\n%s\n(stdout %s)", docs, out.String())
	}

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"run without --check", []string{"run", "--config", config, "--learn", trace, script}, "--learn goes with --check"},
		{"serve --http", []string{"serve", "--config", config, "--http", "127.0.0.1:0", "--insecure-no-auth", "--learn", trace}, "--learn: not with --http"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, status := toolscriptRun(t, tc.args...)
			if status != exitUsage || !strings.Contains(stderr, tc.want) {
				t.Errorf("status %d, stdout %q, stderr %q: want a usage error saying %q", status, stdout, stderr, tc.want)
			}
		})
	}
}
