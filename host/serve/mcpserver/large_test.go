package mcpserver_test

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolscript/toolscript/host/contract/redact"
	"github.com/toolscript/toolscript/host/serve/mcpserver"
	"github.com/toolscript/toolscript/internal/testclient"
	"github.com/toolscript/toolscript/internal/testwait"
)

// largeExecution is the structured content of a result kept as a
// resource.
type largeExecution struct {
	Result         json.RawMessage `json:"result"`
	Logs           []string        `json:"logs"`
	FilesTouched   []any           `json:"files_touched"`
	ResultResource *struct {
		URI        string `json:"uri"`
		Characters int    `json:"characters"`
		Bytes      int    `json:"bytes"`
		Expires    string `json:"expires"`
	} `json:"result_resource"`
	Error *struct {
		Kind    string `json:"kind"`
		Message string `json:"message"`
	} `json:"error"`
}

func callLarge(t *testing.T, c *client.Client, script string) (*mcp.CallToolResult, largeExecution) {
	t.Helper()
	res := testclient.Call(t, c, mcp.CallToolParams{Name: mcpserver.ToolName, Arguments: map[string]any{"script": script}})
	return res, testclient.Structured[largeExecution](t, res)
}

func readResource(t *testing.T, c *client.Client, uri string) (string, error) {
	t.Helper()
	res, err := c.ReadResource(testwait.Context(t), mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: uri}})
	if err != nil {
		return "", err
	}
	if len(res.Contents) != 1 {
		t.Fatalf("resources/read %s: %d contents", uri, len(res.Contents))
	}
	text, ok := res.Contents[0].(mcp.TextResourceContents)
	if !ok || text.MIMEType != "application/json" {
		t.Fatalf("resources/read %s: %#v", uri, res.Contents[0])
	}
	return text.Text, nil
}

// resultOverhead is the JSON text of a result {"result":"…"} less its
// string's characters.
const resultOverhead = len(`{"result":"","logs":[],"files_touched":[]}`)

// TestHTTPLargeResults: under the hosted mode a result over
// max_inline_result is answered with a resource_link, a summary and a
// structured content that keeps the output schema, and is read back whole
// by its user alone: another user's read of it and a guessed URI get the
// same "not found". A result at the bound is inline; one just over is
// kept; a failed execution's error and logs are still reported.
func TestHTTPLargeResults(t *testing.T) {
	const maxInline = 1000
	h := startHosted(t, hostedOptions{largeResults: mcpserver.LargeResults{MaxInline: maxInline}})
	alice, bob := h.connect(t, "alice"), h.connect(t, "bob")
	atBound := strings.Repeat("x", maxInline-resultOverhead)

	res, out := callLarge(t, alice, `return string.rep("x", `+strconv.Itoa(len(atBound))+`)`)
	if out.ResultResource != nil || string(out.Result) != `"`+atBound+`"` || len(res.Content) != 1 {
		t.Fatalf("a result of %d characters: inline wanted, got %d contents, resource %+v", maxInline, len(res.Content), out.ResultResource)
	}
	if text := res.Content[0].(mcp.TextContent).Text; len(text) != maxInline {
		t.Fatalf("the bound's result is %d characters, want %d", len(text), maxInline)
	}

	for _, tc := range []struct {
		name, script string
		failed       bool
		check        func(t *testing.T, whole map[string]any)
	}{
		{name: "just over the bound", script: `return string.rep("x", ` + strconv.Itoa(len(atBound)+1) + `)`, check: func(t *testing.T, whole map[string]any) {
			if whole["result"] != atBound+"x" {
				t.Errorf("the resource's result is not the script's")
			}
		}},
		{name: "an object", script: `local t = {} for i = 1, 100 do t["key" .. i] = string.rep("v", 20) end return t`, check: func(t *testing.T, whole map[string]any) {
			if m, _ := whole["result"].(map[string]any); len(m) != 100 {
				t.Errorf("the resource's result has %d keys, want 100", len(m))
			}
		}},
		{name: "a failure with many logs", script: `for i = 1, 100 do print(string.rep("l", 50)) end error("boom")`, failed: true,
			check: func(t *testing.T, whole map[string]any) {
				if logs, _ := whole["logs"].([]any); len(logs) != 100 {
					t.Errorf("the resource holds %d log lines, want 100", len(logs))
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, out := callLarge(t, alice, tc.script)
			if out.ResultResource == nil || !strings.HasPrefix(out.ResultResource.URI, "toolscript://results/") ||
				string(out.Result) != "null" || out.Logs == nil || out.FilesTouched == nil {
				t.Fatalf("structured content: %+v", out)
			}
			uri := out.ResultResource.URI
			if len(strings.TrimPrefix(uri, "toolscript://results/")) != 32 {
				t.Errorf("the URI %s does not hold 128 random bits", uri)
			}
			if res.IsError != tc.failed || tc.failed && (out.Error == nil || !strings.Contains(out.Error.Message, "boom") || len(out.Logs) == 0) {
				t.Errorf("isError %v, error %+v, %d logs", res.IsError, out.Error, len(out.Logs))
			}
			var link *mcp.ResourceLink
			summary := ""
			for _, content := range res.Content {
				switch c := content.(type) {
				case mcp.ResourceLink:
					link = &c
				case mcp.TextContent:
					summary += c.Text + "\n"
				}
			}
			if link == nil || link.URI != uri || link.MIMEType != "application/json" {
				t.Fatalf("no resource_link to %s in %+v", uri, res.Content)
			}
			if !strings.Contains(summary, uri) || !strings.Contains(summary, "Its first lines:") || len(summary) > 4*maxInline {
				t.Errorf("summary (%d characters): %s", len(summary), summary)
			}

			text, err := readResource(t, alice, uri)
			if err != nil {
				t.Fatalf("alice reads her result: %v", err)
			}
			if len(text) != out.ResultResource.Bytes || len(text) <= maxInline {
				t.Errorf("the resource is %d bytes, result_resource says %d", len(text), out.ResultResource.Bytes)
			}
			var whole map[string]any
			if err := json.Unmarshal([]byte(text), &whole); err != nil {
				t.Fatal(err)
			}
			tc.check(t, whole)

			_, bobsErr := readResource(t, bob, uri)
			guessed := "toolscript://results/" + strings.Repeat("0", 32)
			_, guessedErr := readResource(t, alice, guessed)
			if bobsErr == nil || guessedErr == nil {
				t.Fatalf("bob read alice's result (%v) or a guessed URI was read (%v)", bobsErr, guessedErr)
			}
			if strings.ReplaceAll(bobsErr.Error(), uri, "URI") != strings.ReplaceAll(guessedErr.Error(), guessed, "URI") {
				t.Errorf("bob's error tells more than a guess's:\n%v\n%v", bobsErr, guessedErr)
			}
		})
	}
}

// fileExecution is the structured content of a result written to the io
// directory.
type fileExecution struct {
	Result     json.RawMessage `json:"result"`
	ResultFile *struct {
		Path  string `json:"path"`
		Bytes int    `json:"bytes"`
	} `json:"result_file"`
	ResultResource *struct {
		URI string `json:"uri"`
	} `json:"result_resource"`
	Warnings []string `json:"warnings"`
}

func callForFile(t *testing.T, c *client.Client, args map[string]any) (*mcp.CallToolResult, fileExecution) {
	t.Helper()
	res, err := c.CallTool(testwait.Context(t), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: mcpserver.ToolName, Arguments: args}})
	if err != nil {
		t.Fatalf("tools/call: %v", err)
	}
	var out fileExecution
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	return res, out
}

// TestHTTPLargeResultsToFile: with large results written to the io
// directory, a real run's large result is a file in its user's io
// directory that the user's next script reads whole, and another user's
// cannot; the oldest go beyond the bound per directory, a script's own
// files there stay; a dry run's large result is a resource all the same.
func TestHTTPLargeResultsToFile(t *testing.T) {
	const maxInline = 1000
	h := startHosted(t, hostedOptions{ioDir: t.TempDir(),
		largeResults: mcpserver.LargeResults{MaxInline: maxInline, PerUser: 2, ToFile: true}})
	alice, bob := h.connect(t, "alice"), h.connect(t, "bob")
	large := func(c *client.Client, n int) fileExecution {
		t.Helper()
		res, out := callForFile(t, c, map[string]any{"script": `return {n = ` + strconv.Itoa(n) + `, text = string.rep("x", 2000)}`})
		if res.IsError || out.ResultFile == nil || out.ResultResource != nil || string(out.Result) != "null" ||
			!strings.HasPrefix(out.ResultFile.Path, "toolscript-results/") || !strings.HasSuffix(out.ResultFile.Path, ".json") {
			t.Fatalf("a large result with io: %+v %+v", out, res.Content)
		}
		summary := res.Content[0].(mcp.TextContent).Text
		if !strings.Contains(summary, out.ResultFile.Path) || !strings.Contains(summary, "io.open(") {
			t.Errorf("the summary does not say where and how to read it: %s", summary)
		}
		return out
	}
	// readBack returns what a script of c reads at path: n of the result,
	// or its error.
	readBack := func(c *client.Client, path string) string {
		t.Helper()
		res, out := callForFile(t, c, map[string]any{"script": `local ok, f = pcall(io.open, "` + path +
			`") if not ok then return "not there: " .. tostring(f) end return json.decode(f:read("a")).result.n`})
		if res.IsError {
			t.Fatalf("reading %s back: %+v", path, res.Content)
		}
		return string(out.Result)
	}

	first := large(alice, 1)
	if got := readBack(alice, first.ResultFile.Path); got != "1" {
		t.Fatalf("alice reads her result back: %s", got)
	}
	if got := readBack(bob, first.ResultFile.Path); !strings.Contains(got, "not there") {
		t.Errorf("bob reads alice's result: %s", got)
	}
	// A file of alice's own in the directory is no result: it stays.
	if _, out := callForFile(t, alice, map[string]any{"script": `local f = io.open("toolscript-results/notes.txt", "w") f:write("mine") f:close()`}); out.Result == nil {
		t.Fatal("writing notes.txt")
	}
	second, third := large(alice, 2), large(alice, 3)
	for _, tc := range []struct {
		path, want string
	}{
		{first.ResultFile.Path, "not there"}, // beyond the bound of 2
		{second.ResultFile.Path, "2"},
		{third.ResultFile.Path, "3"},
	} {
		if got := readBack(alice, tc.path); !strings.Contains(got, tc.want) {
			t.Errorf("%s: %s, want %s", tc.path, got, tc.want)
		}
	}
	_, notes := callForFile(t, alice, map[string]any{"script": `return io.open("toolscript-results/notes.txt"):read("a")`})
	if string(notes.Result) != `"mine"` {
		t.Errorf("alice's own file in the directory: %s", notes.Result)
	}

	// A dry run touches no file: its large result is a resource.
	_, dry := callForFile(t, alice, map[string]any{"script": `return string.rep("y", 2000)`, "dry_run": true})
	if dry.ResultResource == nil || dry.ResultFile != nil {
		t.Errorf("a dry run's large result: %+v", dry)
	}
}

// TestHTTPLargeResultFileRedacted: a result written to the io directory
// passes the server's redactor as every message does: a configured
// secret that the result holds (here one the script wrote itself) is not
// in the file, whose next reader could otherwise send it anywhere.
func TestHTTPLargeResultFileRedacted(t *testing.T) {
	const secret = "hunter2-operator-secret"
	ioDir := t.TempDir()
	h := startHosted(t, hostedOptions{ioDir: ioDir, redactor: redact.New(redact.NewSecret(secret)),
		largeResults: mcpserver.LargeResults{MaxInline: 1000, ToFile: true}})
	alice := h.connect(t, "alice")
	res, out := callForFile(t, alice, map[string]any{"script": `return {key = "` + secret + `", text = string.rep("x", 2000)}`})
	if res.IsError || out.ResultFile == nil {
		t.Fatalf("a large result with io: %+v %+v", out, res.Content)
	}
	found := 0
	filepath.WalkDir(ioDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && strings.HasPrefix(filepath.Base(filepath.Dir(p)), "toolscript-results") {
			found++
			if data, _ := os.ReadFile(p); strings.Contains(string(data), secret) || !strings.Contains(string(data), "[REDACTED]") {
				t.Errorf("the result file holds the secret: %.200s", data)
			}
		}
		return nil
	})
	if found != 1 {
		t.Errorf("%d result files", found)
	}
}
