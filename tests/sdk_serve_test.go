package tests

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolscript/toolscript/internal/testapi"
	"github.com/toolscript/toolscript/internal/testconfig"
	"github.com/toolscript/toolscript/internal/testwait"
)

// serve with an API configured: the discovery tools, the sdk:// resources,
// the signatures in execute_script's description, scripts calling the API,
// and _meta.auth reaching its own call only (docs/sdk.md).
func TestSDKServe(t *testing.T) {
	api := testapi.New(t)
	dir := t.TempDir()
	config := "[apis.pets]\nspec = " + testconfig.Quote(testapi.SpecPath()) + "\nbase_url = " + testconfig.Quote(api.URL) + "\n"
	testconfig.Write(t, dir, config)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	c, _ := mcpClient(t, dir, "", "--no-io")
	ctx := testwait.Context(t)

	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var description string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		if tool.Name == "execute_script" {
			description = tool.Description
		}
	}
	if strings.Join(names, ",") != "check_script,execute_script,get_function_docs,list_apis,list_functions,search_docs" {
		t.Errorf("tools: %v", names)
	}
	if !strings.Contains(description, "sdk.get_pet(params: { petId: number }): (Pet, SdkResponse)") || !strings.Contains(description, "parallel(") {
		t.Errorf("execute_script's description lacks the signatures or parallel:\n%s", description)
	}

	call := func(name string, args map[string]any) string {
		t.Helper()
		res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %v", name, err, textsOf(res))
		}
		return strings.Join(textsOf(res), "\n")
	}
	if out := call("list_apis", nil); !strings.Contains(out, "sdk.pets (OpenAPI, ") || !strings.Contains(out, "base URL "+api.URL) {
		t.Errorf("list_apis: %s", out)
	}
	if out := call("list_functions", map[string]any{"tag": "pets"}); !strings.Contains(out, "sdk.get_pet") || strings.Contains(out, "sdk.echo") {
		t.Errorf("list_functions: %s", out)
	}
	if out := call("get_function_docs", map[string]any{"name": "get_pet"}); !strings.Contains(out, "type Pet = NewPet & { id: number }") {
		t.Errorf("get_function_docs: %s", out)
	}
	if out := call("search_docs", map[string]any{"query": "upload a file"}); !strings.Contains(out, "sdk.upload") {
		t.Errorf("search_docs: %s", out)
	}
	for _, uri := range []string{"sdk://pets/overview", "sdk://pets/functions", "sdk://pets/functions/get_pet", "sdk://pets/schemas/NewPet"} {
		res, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: uri}})
		if err != nil || len(res.Contents) != 1 {
			t.Errorf("reading %s: %v", uri, err)
		}
	}
	if _, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "sdk://pets/functions/nope"}}); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("an unknown sdk resource: %v", err)
	}

	// A script calls the API; the credential of each call comes from its
	// own _meta.auth and never shows.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			token := "user-token-" + strings.Repeat("x", i+4)
			req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "execute_script", Arguments: map[string]any{
				"script": `local e = sdk.echo({value = "x"}) return {auth = e.headers.authorization, pet = sdk.get_pet({petId = 3}).id}`,
			}}}
			req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{"auth": map[string]any{"pets": map[string]any{"type": "bearer", "token": token}}}}
			res, err := c.CallTool(ctx, req)
			if err != nil || res.IsError {
				t.Errorf("call %d: %v %v", i, err, textsOf(res))
				return
			}
			var out struct {
				Result struct {
					Auth string `json:"auth"`
					Pet  int    `json:"pet"`
				} `json:"result"`
			}
			b, _ := json.Marshal(res.StructuredContent)
			json.Unmarshal(b, &out)
			if out.Result.Auth != "Bearer [REDACTED]" || out.Result.Pet != 3 || strings.Contains(string(b), token) {
				t.Errorf("call %d: %s", i, b)
			}
		}()
	}
	wg.Wait()
}
