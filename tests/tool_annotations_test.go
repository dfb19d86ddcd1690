package tests

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolscript/toolscript/internal/testapi"
	"github.com/toolscript/toolscript/internal/testconfig"
	"github.com/toolscript/toolscript/internal/testfile"
	"github.com/toolscript/toolscript/internal/testupstreams"
	"github.com/toolscript/toolscript/internal/testwait"
)

// readOnlySpec is an API of GET operations only.
const readOnlySpec = `openapi: 3.0.0
info: { title: Read-only pets, version: "1" }
paths:
  /pets/{petId}:
    get:
      operationId: getPet
      parameters:
        - { name: petId, in: path, required: true, schema: { type: integer } }
      responses:
        "200":
          description: a pet
          content: { application/json: { schema: { type: object } } }
    head:
      operationId: headPet
      parameters:
        - { name: petId, in: path, required: true, schema: { type: integer } }
      responses: { "200": { description: exists } }
`

// searchSpec is an API whose one POST only searches: declared safe in the
// configuration ([apis.NAME] safe), the API is read-only.
const searchSpec = `openapi: 3.0.0
info: { title: Search, version: "1" }
paths:
  /pets/search:
    post:
      operationId: searchPets
      requestBody: { content: { application/json: { schema: { type: object } } } }
      responses: { "200": { description: found } }
  /pets/{petId}:
    get:
      operationId: getPet
      parameters:
        - { name: petId, in: path, required: true, schema: { type: integer } }
      responses: { "200": { description: a pet } }
`

// annotations are execute_script's annotations as a client receives them.
type annotations struct {
	ReadOnly    *bool `json:"readOnlyHint"`
	Destructive *bool `json:"destructiveHint"`
	Idempotent  *bool `json:"idempotentHint"`
	OpenWorld   *bool `json:"openWorldHint"`
}

func (a annotations) String() string {
	s := func(p *bool) string {
		if p == nil {
			return "unset"
		}
		if *p {
			return "true"
		}
		return "false"
	}
	return "readOnly " + s(a.ReadOnly) + ", destructive " + s(a.Destructive) + ", idempotent " + s(a.Idempotent) + ", openWorld " + s(a.OpenWorld)
}

// executeScriptTool lists the tools and returns execute_script's
// annotations, as they were on the wire, and its description.
func executeScriptTool(t *testing.T, c *client.Client) (annotations, string) {
	t.Helper()
	tools, err := c.ListTools(testwait.Context(t), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if tool.Name != "execute_script" {
			continue
		}
		raw, err := json.Marshal(tool)
		if err != nil {
			t.Fatal(err)
		}
		var decoded struct {
			Annotations annotations `json:"annotations"`
		}
		if err := json.Unmarshal(raw, &decoded); err != nil {
			t.Fatal(err)
		}
		return decoded.Annotations, tool.Description
	}
	t.Fatal("no execute_script in tools/list")
	return annotations{}, ""
}

func hint(b bool) *bool { return &b }

// watchTools has c's notifications counted on the channel it returns:
// register it before waitTool looks at execute_script.
func watchTools(c *client.Client) <-chan string {
	notified := make(chan string, 64)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		select {
		case notified <- n.Method:
		default: // waitTool looks again at every notification: one is enough
		}
	})
	return notified
}

// waitTool returns execute_script's annotations and description once the
// description satisfies done, looking again after each notification
// (serve answers initialize before its upstream servers' tools are
// listed, and tells its clients when they are).
func waitTool(t *testing.T, c *client.Client, notified <-chan string, done func(description string) bool) (annotations, string) {
	t.Helper()
	ctx := testwait.Context(t)
	for {
		got, description := executeScriptTool(t, c)
		if done(description) {
			return got, description
		}
		select {
		case <-notified:
		case <-ctx.Done():
			t.Fatalf("execute_script's description never changed as expected:\n%s", description)
		}
	}
}

// listed tells whether a description is of an sdk whose MCP servers' tools
// are all listed.
func listed(description string) bool { return !strings.Contains(description, "tools not listed yet") }

// TestToolAnnotationsFollowTheSDK: execute_script's annotations and
// description say what a script can do with the configured sdk and io, as
// a real client reads them from a real `toolscript serve`: read-only only
// when nothing reachable can write (no io, only GET/HEAD/OPTIONS
// operations and tools annotated readOnlyHint: true), open-world as soon as
// an API or MCP server is reachable.
func TestToolAnnotationsFollowTheSDK(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	api := testapi.New(t)
	python := testupstreams.Shell(testupstreams.Python(t))
	everything := testupstreams.Shell(testupstreams.Everything(t))
	pythonTOML := func(name string) string {
		args := testupstreams.Python(t)
		list, _ := json.Marshal(args[1:])
		return "[mcp_servers." + name + "]\ncommand = " + testconfig.Quote(args[0]) + "\nargs = " + string(list) +
			"\nenv = { PYSERVER_READ_ONLY = \"1\" }\n"
	}
	readOnlyAPI := func(dir string) string {
		spec := filepath.Join(dir, "readonly.yaml")
		testfile.Write(t, spec, readOnlySpec)
		return "[apis.ro]\nspec = " + testconfig.Quote(spec) + "\nbase_url = " + testconfig.Quote(api.URL) + "\n"
	}
	searchAPI := func(safe string) func(dir string) string {
		return func(dir string) string {
			spec := filepath.Join(dir, "search.yaml")
			testfile.Write(t, spec, searchSpec)
			return "[apis.search]\nspec = " + testconfig.Quote(spec) + "\nbase_url = " + testconfig.Quote(api.URL) + "\n" + safe
		}
	}
	unsafeAPI := "[apis.pets]\nspec = " + testconfig.Quote(testapi.SpecPath()) + "\nbase_url = " + testconfig.Quote(api.URL) + "\n"

	readOnly := annotations{hint(true), hint(false), hint(true), hint(false)}
	readOnlyOpen := annotations{hint(true), hint(false), hint(true), hint(true)}
	writes := annotations{hint(false), hint(true), hint(false), hint(false)}
	writesOpen := annotations{hint(false), hint(true), hint(false), hint(true)}
	for _, tc := range []struct {
		name   string
		config func(dir string) string
		args   []string
		want   annotations
		// description must contain these and lack those
		has, lacks []string
		// partly is an API some of whose functions, not all, can write.
		partly string
	}{
		{name: "no sdk, no io", args: []string{"--no-io"}, want: readOnly,
			has: []string{"network access.", "file access is disabled"}, lacks: []string{"APIs (sdk)", "other than through sdk"}},
		{name: "io on", args: []string{"--io-dir", "files"}, want: writes,
			has: []string{"io.open(path, mode?)", "network access."}, lacks: []string{"APIs (sdk)"}},
		{name: "read-only API", config: readOnlyAPI, args: []string{"--no-io"}, want: readOnlyOpen,
			has:   []string{"network access other than through sdk", "sdk.ro (openapi, 2 functions, read-only)", "Every sdk function only reads"},
			lacks: []string{"can create, change or delete data"}},
		{name: "read-only API, io on", config: readOnlyAPI, args: []string{"--io-dir", "files"}, want: writesOpen,
			has: []string{"sdk.ro (openapi, 2 functions, read-only)", "io.open(path, mode?)"}},
		{name: "unsafe API", config: func(string) string { return unsafeAPI }, args: []string{"--no-io"}, want: writesOpen,
			has:   []string{"network access other than through sdk", "can change data)", "sdk functions can create, change or delete data"},
			lacks: []string{"Every sdk function only reads"}},
		{name: "a POST declared safe", config: searchAPI("safe = [\"searchPets\"]\n"), args: []string{"--no-io"}, want: readOnlyOpen,
			has: []string{"sdk.search (openapi, 2 functions, read-only)", "Every sdk function only reads"}},
		{name: "a POST not declared safe", config: searchAPI(""), args: []string{"--no-io"}, want: writesOpen,
			has: []string{"sdk.search (openapi, 2 functions, 1 can change data)"}},
		{name: "a GET declared unsafe", config: searchAPI("safe = [\"search_pets\"]\nunsafe = [\"getPet\"]\n"), args: []string{"--no-io"}, want: writesOpen,
			has: []string{"sdk.search (openapi, 2 functions, 1 can change data)"}},
		{name: "read-only upstream tools", config: func(string) string { return pythonTOML("py") }, args: []string{"--no-io"}, want: readOnlyOpen,
			has: []string{"sdk.py (mcp,", "read-only)", "Every sdk function only reads"}},
		{name: "upstream tools not marked read-only", args: []string{"--no-io", "--mcp=py=" + python}, want: writesOpen,
			has: []string{"sdk.py (mcp,", "all can change data)", "MCP tools their server does not mark read-only"}},
		{name: "server-everything (some tools read-only, some not)", args: []string{"--no-io", "--mcp=everything=" + everything}, want: writesOpen,
			has: []string{"sdk.everything (mcp,", "can change data)"}, partly: "everything"},
		{name: "read-only API and read-only upstream", config: func(dir string) string { return readOnlyAPI(dir) + pythonTOML("py") },
			args: []string{"--no-io"}, want: readOnlyOpen, has: []string{"sdk.ro (openapi, 2 functions, read-only)", "Every sdk function only reads"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if tc.config != nil {
				testconfig.Write(t, dir, tc.config(dir))
			}
			c, _ := mcpClient(t, dir, "", tc.args...)
			got, description := waitTool(t, c, watchTools(c), listed)
			if got.String() != tc.want.String() {
				t.Errorf("annotations: %s, want %s", got, tc.want)
			}
			for _, want := range tc.has {
				if !strings.Contains(description, want) {
					t.Errorf("the description lacks %q:\n%s", want, description)
				}
			}
			if tc.partly != "" {
				m := regexp.MustCompile(`sdk\.` + tc.partly + ` \(\w+, (\d+) functions, (\d+) can change data\)`).FindStringSubmatch(description)
				if m == nil {
					t.Fatalf("the description does not count %s's functions that can change data:\n%s", tc.partly, description)
				}
				functions, _ := strconv.Atoi(m[1])
				writers, _ := strconv.Atoi(m[2])
				if writers <= 0 || writers >= functions {
					t.Errorf("%s: %d of %d functions can change data: the tools annotated readOnlyHint: true should not count, the others should", tc.partly, writers, functions)
				}
			}
			for _, unwanted := range tc.lacks {
				if strings.Contains(description, unwanted) {
					t.Errorf("the description has %q:\n%s", unwanted, description)
				}
			}
		})
	}
}

// TestToolAnnotationsFollowUpstreamChanges: an upstream whose tools were
// all read-only adds one that is not: toolscript re-declares execute_script
// and tells its client (notifications/tools/list_changed), and the
// annotations and description the client lists next say scripts can write.
func TestToolAnnotationsFollowUpstreamChanges(t *testing.T) {
	t.Parallel()
	args := testupstreams.Python(t)
	list, _ := json.Marshal(args[1:])
	dir := testconfig.Write(t, t.TempDir(), "[mcp_servers.py]\ncommand = "+testconfig.Quote(args[0])+"\nargs = "+string(list)+
		"\nenv = { PYSERVER_READ_ONLY = \"1\" }\n")
	c, _ := mcpClient(t, dir, "", "--no-io")
	ctx := testwait.Context(t)
	notified := watchTools(c)

	before, description := waitTool(t, c, notified, listed)
	if want := (annotations{hint(true), hint(false), hint(true), hint(true)}); before.String() != want.String() {
		t.Fatalf("before: %s, want %s", before, want)
	}
	if !strings.Contains(description, "Every sdk function only reads") {
		t.Errorf("before: the description does not say the sdk only reads:\n%s", description)
	}
	if _, out := callScript(t, ctx, c, map[string]any{"script": `return (sdk.py.add_tool())`}); out.Error != nil || string(out.Result) != `{"result":"added"}` {
		t.Fatalf("add_tool: %s %+v", out.Result, out.Error)
	}
	after, description := waitTool(t, c, notified, func(d string) bool { return !strings.Contains(d, "Every sdk function only reads") })
	if want := (annotations{hint(false), hint(true), hint(false), hint(true)}); after.String() != want.String() {
		t.Errorf("after a tool not marked read-only was added: %s, want %s", after, want)
	}
	if !strings.Contains(description, "1 sdk functions can create, change or delete data") || !strings.Contains(description, "1 can change data)") {
		t.Errorf("after: the description does not say one function can write:\n%s", description)
	}
}
