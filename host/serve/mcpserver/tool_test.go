package mcpserver

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/host/runtime/result"
)

func request(arguments string) mcp.CallToolRequest {
	var req mcp.CallToolRequest
	if err := json.Unmarshal([]byte(`{"method":"tools/call","params":{"name":"execute_script","arguments":`+arguments+`}}`), &req); err != nil {
		panic(err)
	}
	return req
}

func TestParseArguments(t *testing.T) {
	ok := []struct {
		args    string
		script  string
		timeout time.Duration
	}{
		{`{"script":"return 1"}`, "return 1", 0},
		{`{"script":"","timeout_ms":250}`, "", 250 * time.Millisecond},
		{`{"script":"x","timeout_ms":1e3}`, "x", time.Second},
		{`{"script":"x","timeout_ms":null}`, "x", 0},
		{`{"script":"x","timeout_ms":1e300}`, "x", time.Duration(1<<63 - 1)},
	}
	for _, c := range ok {
		got, err := parseArguments(request(c.args))
		if err != nil || got.script != c.script || got.timeout != c.timeout {
			t.Errorf("%s: %+v %v", c.args, got, err)
		}
	}
	bad := []struct{ args, want string }{
		{`null`, `missing required argument "script"`},
		{`{}`, `missing required argument "script"`},
		{`[]`, "arguments must be an object"},
		{`"return 1"`, "arguments must be an object"},
		{`{"script":true}`, "not a boolean"},
		{`{"script":["a"]}`, "not an array"},
		{`{"script":"x","timeout_ms":"1s"}`, "not a string"},
		{`{"script":"x","timeout_ms":0}`, "positive integer"},
		{`{"script":"x","timeout_ms":2.5}`, "positive integer"},
		{`{"script":"x","b":1,"a":2}`, `unknown argument "a", "b"`},
		{`{"script":"x","dry_run":"yes"}`, `argument "dry_run" must be a boolean, not a string`},
		{`{"script":"x","check":1}`, `argument "check" must be a boolean, not a number`},
		{`{"script":"x","plan":{"effects":[]}}`, `argument "plan" must be an array: the "effects" of a dry run's result, not an object`},
		{`{"script":"x","plan":[],"dry_run":true}`, `"dry_run" and "plan" cannot be given together`},
		{`{"script":"x","plan":[{"op":"write","path":"a"}]}`, `argument "plan": the plan's entry 1: a write effect needs "sha256"`},
		{`{"script":"x","plan":[{"op":"format","path":"/"}]}`, `unknown op "format"`},
	}
	for _, c := range bad {
		_, err := parseArguments(request(c.args))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.args, err, c.want)
		}
	}
	// dry_run and plan give the execution its effects layer.
	for _, c := range []struct {
		args string
		mode effects.Mode
	}{
		{`{"script":"x"}`, effects.Real},
		{`{"script":"x","dry_run":false,"plan":null}`, effects.Real},
		{`{"script":"x","dry_run":true}`, effects.DryRun},
		{`{"script":"x","dry_run":false,"plan":[]}`, effects.Plan},
		{`{"script":"x","plan":[{"op":"remove","path":"a"},{"op":"call","function":"sdk.a.b","body":{"x":1}}]}`, effects.Plan},
	} {
		got, err := parseArguments(request(c.args))
		if err != nil || got.effects().Mode() != c.mode {
			t.Errorf("%s: %v, %v; want %s", c.args, got.effects().Mode(), err, c.mode)
		}
	}
	// The arguments are read as mcp-go decoded them: their JSON is not
	// read again (it is only kept for a plan's entries).
	decoded := request(`{"script":"return 1"}`)
	decoded.Params.RawArguments = json.RawMessage(`{"script":"not read again"}`)
	if got, err := parseArguments(decoded); err != nil || got.script != "return 1" {
		t.Errorf("decoded once: %+v %v", got, err)
	}
	// An in-process call carries Arguments, not their JSON.
	req := mcp.CallToolRequest{Params: mcp.CallToolParams{Arguments: map[string]any{"script": "return 2", "timeout_ms": 10}}}
	if got, err := parseArguments(req); err != nil || got.script != "return 2" || got.timeout != 10*time.Millisecond {
		t.Errorf("in-process arguments: %+v %v", got, err)
	}
}

func TestToolResult(t *testing.T) {
	ok := toolResult(&result.Result{Value: json.RawMessage(`{"a":1}`), Logs: []string{"x"}})
	if ok.IsError || len(ok.Content) != 1 || ok.Content[0].(mcp.TextContent).Text != `{"result":{"a":1},"logs":["x"],"files_touched":[]}` ||
		string(ok.RawStructuredContent) != ok.Content[0].(mcp.TextContent).Text {
		t.Errorf("success: %+v", ok)
	}
	failed := toolResult(&result.Result{Logs: []string{"before"}, Error: &result.Error{Kind: result.Runtime, Message: "script:2: boom", Line: 2}})
	if !failed.IsError || len(failed.Content) != 2 || failed.Content[0].(mcp.TextContent).Text != "Script execution error: script:2: boom" ||
		!strings.Contains(string(failed.RawStructuredContent), `"logs":["before"]`) {
		t.Errorf("failure: %+v", failed)
	}
	b, err := json.Marshal(failed)
	if err != nil || !strings.Contains(string(b), `"structuredContent":{"result":null,"logs":["before"]`) || !strings.Contains(string(b), `"isError":true`) {
		t.Errorf("failure on the wire: %s %v", b, err)
	}
}

func testServer(io bool) *Server {
	cfg := Config{MaxTimeout: 2 * time.Minute, Limits: luau.Limits{Timeout: 10 * time.Second}}
	if io {
		cfg.IO = &luau.IO{Dir: "files"}
	}
	return &Server{cfg: cfg.withDefaults()}
}

func TestDocs(t *testing.T) {
	for _, io := range []bool{true, false} {
		s := testServer(io)
		texts := map[string]string{"instructions": s.instructions(), "tool": s.tool().Description}
		for _, d := range s.docs() {
			texts[d.uri] = d.text
		}
		if want := 6 + map[bool]int{true: 10, false: 0}[io]; len(texts) != want+2 {
			t.Errorf("io %v: %d texts, want %d", io, len(texts), want+2)
		}
		for name, text := range texts {
			if strings.Contains(text, "<no value>") || strings.Contains(text, "{{") || text == "" {
				t.Errorf("io %v: %s is not filled in:\n%s", io, name, text)
			}
			if !io && strings.Contains(text, "io.open") {
				t.Errorf("io off, yet %s mentions io.open:\n%s", name, text)
			}
		}
		desc := texts["tool"]
		// Every limit in force, the log caps included.
		for _, want := range []string{"Limits per call: 10s", "up to 2 min", "64 MB", "4 MiB of JSON result",
			"logs of 10000 lines and 1 MiB", "any single line larger than that", "scripts up to 1 MiB", "Keep results small"} {
			if !strings.Contains(desc, want) {
				t.Errorf("io %v: description lacks %q", io, want)
			}
		}
		if io {
			// io.open and os.remove raise, unlike standard Lua: the pcall idiom.
			for name, want := range map[string][]string{
				"tool":         {"50 MiB written (holes past the end of a file included), 1000 files and directories created, 64 files open at once", "Write large outputs to files", "pcall(io.open,", "pcall(os.remove,"},
				"instructions": {"io.open, os.remove and os.rename raise an error", "pcall(io.open,", "write large outputs to files"},
			} {
				for _, w := range want {
					if !strings.Contains(texts[name], w) {
						t.Errorf("%s lacks %q:\n%s", name, w, texts[name])
					}
				}
			}
		} else {
			// Described as configured: no files promised.
			for name, want := range map[string][]string{
				"tool":         {"File access is disabled on this server", `"files_touched": [] (always empty`},
				"instructions": {"File access is disabled on this server"},
			} {
				for _, w := range want {
					if !strings.Contains(texts[name], w) {
						t.Errorf("io off: %s lacks %q:\n%s", name, w, texts[name])
					}
				}
			}
			for name, text := range texts {
				if strings.Contains(text, "out/report.csv") || strings.Contains(text, "written per call") {
					t.Errorf("io off, yet %s promises files:\n%s", name, text)
				}
			}
		}
		// progress raises on other types: no "never fails"; the real
		// notification behaviour.
		if p := texts["toolscript://docs/progress"]; strings.Contains(p, "never fails") || strings.Contains(p, "first is sent at once") ||
			!strings.Contains(p, "any other argument raises an error") || !strings.Contains(p, "the newest call") {
			t.Errorf("progress page:\n%s", p)
		}
		if len(desc) > 4000 {
			t.Errorf("the description is %d bytes: keep it short enough for a model's tool list", len(desc))
		}
	}
}

func TestWithDefaults(t *testing.T) {
	cfg := Config{MaxTimeout: time.Second, IO: &luau.IO{Dir: "d"}}.withDefaults()
	if cfg.Limits.Timeout != time.Second {
		t.Errorf("the default timeout %s is not capped by the maximum", cfg.Limits.Timeout)
	}
	if cfg.IO.MaxBytes != luau.DefaultIOMaxBytes || cfg.MaxConcurrent != DefaultMaxConcurrent || cfg.MaxScriptBytes != DefaultMaxScriptBytes {
		t.Errorf("%+v", cfg)
	}
	if duration(90*time.Second) != "90s" || duration(5*time.Minute) != "5 min" || duration(30*time.Second) != "30s" ||
		size(1<<20) != "1 MiB" || size(1500) != "1500 bytes" || size(64<<10) != "64 KiB" {
		t.Error("duration or size formats")
	}
}

// TestSchemasHaveNoDuplicateKeys: a JSON object that names a property
// twice is one a client decodes as it likes (most keep the last), so the
// schemas execute_script declares name each key once.
func TestSchemasHaveNoDuplicateKeys(t *testing.T) {
	for _, c := range []struct{ name, schema string }{
		{"input", inputSchema},
		{"output", outputSchema},
	} {
		if dup := duplicateKey(t, json.NewDecoder(strings.NewReader(c.schema)), "$"); dup != "" {
			t.Errorf("%s schema: %s is given twice", c.name, dup)
		}
	}
}

// duplicateKey reads one JSON value from dec and returns the path of the
// first key an object of it repeats, "" for none.
func duplicateKey(t *testing.T, dec *json.Decoder, path string) string {
	t.Helper()
	tok, err := dec.Token()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	delim, ok := tok.(json.Delim)
	if !ok || delim == '}' || delim == ']' {
		return ""
	}
	seen := map[string]bool{}
	for i := 0; dec.More(); i++ {
		at := path + "[" + strconv.Itoa(i) + "]"
		if delim == '{' {
			key, err := dec.Token()
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			at = path + "." + key.(string)
			if seen[at] {
				return at
			}
			seen[at] = true
		}
		if dup := duplicateKey(t, dec, at); dup != "" {
			return dup
		}
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		t.Fatalf("%s: %v", path, err)
	}
	return ""
}
