package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolscript/toolscript/internal/testconfig"
	"github.com/toolscript/toolscript/internal/testspecs"
	"github.com/toolscript/toolscript/internal/testupstreams"
	"github.com/toolscript/toolscript/internal/testwait"
)

// maxAnswer is the most characters any discovery answer may have.
const maxAnswer = 25000

// discoveryServe starts `toolscript serve --no-io` with GitHub's API (1,223
// operations) and the reference server-memory, and connects mcp-go to it.
func discoveryServe(t *testing.T) *client.Client {
	t.Helper()
	spec := testspecs.GitHub(t)
	dir := t.TempDir()
	memory, env := testupstreams.Memory(t, filepath.Join(dir, "memory.jsonl"))
	args, _ := json.Marshal(memory[1:])
	config := fmt.Sprintf("[apis.gh]\nspec = %s\n\n[mcp_servers.memory]\ncommand = %s\nargs = %s\nenv = { MEMORY_FILE_PATH = %s }\n",
		testconfig.Quote(spec), testconfig.Quote(memory[0]), args, testconfig.Quote(env["MEMORY_FILE_PATH"]))
	testconfig.Write(t, dir, config)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	c, _ := mcpClient(t, dir, "", "--no-io")
	return c
}

var (
	nextCursor = regexp.MustCompile(`cursor[ =]"?([A-Za-z0-9_-]+)"?\s*$`)
	pageHeader = regexp.MustCompile(`(\d+)-(\d+) of (\d+)`)
	callLine   = regexp.MustCompile(`^((?:sdk\.)[A-Za-z0-9_.]+)\(`)
)

// walk reads every page of a listing through get (a tool call or a
// resource read), checks each against maxAnswer, and returns the entry
// lines and the total the first header gave.
func walk(t *testing.T, what string, get func(cursor string) (string, error)) (lines []string, total int) {
	t.Helper()
	cursor := ""
	for pages := 0; ; pages++ {
		text, err := get(cursor)
		if err != nil {
			t.Fatalf("%s, page %d: %v", what, pages+1, err)
		}
		if len(text) > maxAnswer {
			t.Fatalf("%s, page %d: %d characters", what, pages+1, len(text))
		}
		all := strings.Split(strings.TrimRight(text, "\n"), "\n")
		m := pageHeader.FindStringSubmatch(all[0])
		if m == nil {
			t.Fatalf("%s: no header in %q", what, all[0])
		}
		total, _ = strconv.Atoi(m[3])
		body := all[1:]
		cursor = ""
		if n := len(body); n > 0 && strings.HasPrefix(body[n-1], "-- ") {
			c := nextCursor.FindStringSubmatch(body[n-1])
			if c == nil {
				t.Fatalf("%s: no cursor in %q", what, body[n-1])
			}
			cursor, body = c[1], body[:n-1]
		}
		lines = append(lines, body...)
		if cursor == "" {
			t.Logf("%s: %d entries in %d pages", what, len(lines), pages+1)
			return lines, total
		}
		if pages > 10000 {
			t.Fatalf("%s: the pages do not end", what)
		}
	}
}

func (call toolCaller) text(name string, args map[string]any) (string, bool, error) {
	res, err := call.c.CallTool(call.ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
	if err != nil {
		return "", false, err
	}
	return strings.Join(textsOf(res), "\n"), res.IsError, nil
}

// TestSDKDiscoveryFitsContext: through a real client, with GitHub's whole
// API and server-memory behind serve, every discovery tool's and
// resource's answer is at most 25,000 characters, paging reaches every
// function and schema exactly once, the tools' input schemas offer limit
// and cursor, the search ranks server-memory's tools for a request phrased
// as a model phrases it, built-ins are found and documented, and bad
// input (a 100 KB query, a limit of 10^9, a garbage or foreign cursor)
// gets bounded answers or clear errors.
func TestSDKDiscoveryFitsContext(t *testing.T) {
	c := discoveryServe(t)
	ctx := testwait.Context(t)
	call := toolCaller{c: c, ctx: ctx}
	ok := func(name string, args map[string]any) string {
		t.Helper()
		text, isErr, err := call.text(name, args)
		if err != nil || isErr {
			t.Fatalf("%s %v: %v %s", name, args, err, text)
		}
		if len(text) > maxAnswer {
			t.Fatalf("%s %v: %d characters", name, args, len(text))
		}
		return text
	}
	fails := func(name string, args map[string]any, want string) {
		t.Helper()
		text, isErr, err := call.text(name, args)
		if err != nil || !isErr || !strings.Contains(text, want) {
			t.Errorf("%s %v: want an error with %q, got %v %v %s", name, args, want, err, isErr, text)
		}
	}

	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		switch tool.Name {
		case "list_apis", "list_functions", "search_docs":
			if tool.InputSchema.Properties["limit"] == nil || tool.InputSchema.Properties["cursor"] == nil {
				t.Errorf("%s: no limit or cursor in %+v", tool.Name, tool.InputSchema.Properties)
			}
		}
	}

	apis := ok("list_apis", nil)
	for _, want := range []string{"sdk.gh (OpenAPI, 1223 functions", "GitHub", ", base URL https://api.github.com", "sdk.memory (MCP server, 9 tools)"} {
		if !strings.Contains(apis, want) {
			t.Errorf("list_apis lacks %q:\n%s", want, apis)
		}
	}
	schemas, _ := strconv.Atoi(regexp.MustCompile(`1223 functions, (\d+) schemas`).FindStringSubmatch(apis + " 1223 functions, 0 schemas")[1])

	// Every function of every API, exactly once, through the tool and the
	// resource; with the largest limit a client can ask for.
	countOnce := func(what string, lines []string, total, want int) map[string]bool {
		t.Helper()
		seen := map[string]bool{}
		for _, l := range lines {
			m := callLine.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("%s: not a function line: %q", what, l)
			}
			if seen[m[1]] {
				t.Fatalf("%s: %s listed twice", what, m[1])
			}
			seen[m[1]] = true
		}
		if len(seen) != total || total != want {
			t.Errorf("%s: %d functions listed, total %d, want %d", what, len(seen), total, want)
		}
		return seen
	}
	for _, limit := range []any{nil, 1e9, 7} {
		args := map[string]any{"api": "gh"}
		if limit != nil {
			args["limit"] = limit
		}
		lines, total := walk(t, fmt.Sprintf("list_functions(gh, limit %v)", limit), func(cursor string) (string, error) {
			if cursor != "" {
				args["cursor"] = cursor
			}
			return ok("list_functions", args), nil
		})
		countOnce("list_functions(gh)", lines, total, 1223)
	}
	lines, total := walk(t, "list_functions()", func(cursor string) (string, error) {
		return ok("list_functions", map[string]any{"cursor": cursor}), nil
	})
	all := countOnce("list_functions()", lines, total, 1223+9)
	read := func(uri string) (string, error) {
		res, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: uri}})
		if err != nil {
			return "", err
		}
		if len(res.Contents) != 1 {
			return "", fmt.Errorf("%d contents", len(res.Contents))
		}
		text := res.Contents[0].(mcp.TextResourceContents).Text
		if len(text) > maxAnswer {
			t.Fatalf("%s: %d characters", uri, len(text))
		}
		return text, nil
	}
	lines, total = walk(t, "sdk://gh/functions", func(cursor string) (string, error) {
		if cursor == "" {
			return read("sdk://gh/functions")
		}
		return read("sdk://gh/functions?cursor=" + cursor)
	})
	countOnce("sdk://gh/functions", lines, total, 1223)
	schemaLines, total := walk(t, "sdk://gh/schemas", func(cursor string) (string, error) {
		if cursor == "" {
			return read("sdk://gh/schemas")
		}
		return read("sdk://gh/schemas?cursor=" + cursor)
	})
	if len(schemaLines) != total || total != schemas || schemas < 900 {
		t.Errorf("sdk://gh/schemas: %d lines, total %d, list_apis says %d", len(schemaLines), total, schemas)
	}
	if _, err := read("sdk://gh/overview"); err != nil {
		t.Error(err)
	}

	// Every function's docs and every schema's page fit too.
	for name := range all {
		ok("get_function_docs", map[string]any{"name": name})
	}
	for _, l := range schemaLines {
		name, _, _ := strings.Cut(l, " ")
		if _, err := read("sdk://gh/schemas/" + name); err != nil {
			t.Fatalf("schema %s: %v", name, err)
		}
	}

	// Search: by meaning, paged, bounded.
	found := ok("search_docs", map[string]any{"query": "remember a fact about a person", "limit": 3})
	if !strings.Contains(found, "sdk.memory.create_entities(") && !strings.Contains(found, "sdk.memory.add_observations(") {
		t.Errorf("search for a memory: %s", found)
	}
	walk(t, "search_docs(issue)", func(cursor string) (string, error) {
		return ok("search_docs", map[string]any{"query": "issue", "limit": 1e9, "cursor": cursor}), nil
	})
	if text := ok("search_docs", map[string]any{"query": "parse a JSON string", "limit": 3}); !strings.Contains(text, "json.decode(text: string): any") {
		t.Errorf("a built-in is not found: %s", text)
	}
	if text := ok("get_function_docs", map[string]any{"name": "parallel"}); !strings.Contains(text, "parallel(fns: {() -> any}, limit: number?): {any}") {
		t.Errorf("a built-in's docs: %s", text)
	}
	// io is off: its built-ins are neither found nor documented.
	if text := ok("search_docs", map[string]any{"query": "open a file in the io directory", "limit": 50}); strings.Contains(text, "io.open(") {
		t.Errorf("io.open found with io off: %s", text)
	}
	fails("get_function_docs", map[string]any{"name": "io.open"}, "io.open is not available: file access (io, os.remove, file) is disabled")

	// Bad input: clear errors, bounded answers.
	fails("search_docs", map[string]any{"query": strings.Repeat("issue ", 100<<10/6)}, "more than 1000")
	fails("list_functions", map[string]any{"cursor": "garbage!!"}, "invalid cursor")
	fails("list_functions", map[string]any{"cursor": strings.Repeat("A", 100<<10)}, "invalid cursor")
	fails("list_functions", map[string]any{"limit": -1}, "limit must be a whole number of at least 1")
	fails("list_functions", map[string]any{"limit": 2.5}, "limit must be a whole number of at least 1")
	first := ok("list_functions", map[string]any{"api": "gh", "limit": 5})
	cursor := nextCursor.FindStringSubmatch(strings.TrimRight(first, "\n"))[1]
	fails("list_functions", map[string]any{"api": "memory", "cursor": cursor}, "belongs to another listing")
	fails("search_docs", map[string]any{"query": "issue", "cursor": cursor}, "belongs to another listing")
	if again := ok("list_functions", map[string]any{"api": "gh", "limit": 5}); again != first {
		t.Error("the same page twice differs")
	}
	// A failed read of an sdk resource is "Resource not found", naming the
	// URI and what is wrong.
	if _, err := read("sdk://gh/functions?cursor=garbage"); err == nil || !strings.Contains(err.Error(), "Resource not found: sdk://gh/functions?cursor=garbage (invalid cursor") {
		t.Errorf("a resource with a bad cursor: %v", err)
	}
}

type toolCaller struct {
	c   *client.Client
	ctx context.Context
}

// TestSDKDiscoveryHosted: the same pages over hosted streamable HTTP (an
// mcp-go client against serve --http): every page of list_functions over
// GitHub's API fits, they reach every function once, and a foreign cursor
// is a clear error.
func TestSDKDiscoveryHosted(t *testing.T) {
	spec := testspecs.GitHub(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	c := connectURL(t, startServe(t, t.TempDir(), "--api", "gh="+spec).url)
	ctx := testwait.Context(t)
	call := toolCaller{c: c, ctx: ctx}
	seen := map[string]bool{}
	lines, total := walk(t, "hosted list_functions(gh)", func(cursor string) (string, error) {
		text, isErr, err := call.text("list_functions", map[string]any{"api": "gh", "limit": 400, "cursor": cursor})
		if err == nil && isErr {
			err = fmt.Errorf("tool error: %s", text)
		}
		return text, err
	})
	for _, l := range lines {
		name := callLine.FindStringSubmatch(l)
		if name == nil || seen[name[1]] {
			t.Fatalf("line %q", l)
		}
		seen[name[1]] = true
	}
	if len(seen) != 1223 || total != 1223 {
		t.Errorf("%d functions, total %d", len(seen), total)
	}
	text, isErr, err := call.text("search_docs", map[string]any{"query": "create an issue", "cursor": encodeForeignCursor()})
	if err != nil || !isErr || !strings.Contains(text, "invalid cursor") {
		t.Errorf("a foreign cursor: %v %v %s", err, isErr, text)
	}
}

// encodeForeignCursor is a well-formed cursor of no listing of this server.
func encodeForeignCursor() string { return "AQIDBAUGBwgF" }
