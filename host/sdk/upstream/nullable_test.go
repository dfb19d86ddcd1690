package upstream

import (
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/contract/sdkcall"
	"github.com/toolscript/toolscript/host/sdk/sdkdocs"
)

// TestOpenAPINullableIsOptional: a real MCP server (mcp-go over
// streamable HTTP) whose tool's input schema says OpenAPI's nullable: true
// on a required property, as servers generated from OpenAPI specs do. The
// docs render that argument optional (string?), and a call that leaves it
// out or passes null is not refused before it reaches the server.
func TestOpenAPINullableIsOptional(t *testing.T) {
	srv := mcpserver.NewMCPServer("nullable", "1")
	schema := `{"type":"object","properties":{
		"title":{"type":"string","description":"what to do"},
		"due":{"type":"string","format":"date-time","nullable":true,"description":"when"}},
		"required":["title","due"]}`
	var got []string
	srv.AddTool(mcp.NewToolWithRawSchema("add_task", "Adds a task", json.RawMessage(schema)),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			b, _ := json.Marshal(req.GetArguments())
			got = append(got, string(b))
			return mcp.NewToolResultText("ok"), nil
		})
	hs := httptest.NewServer(mcpserver.NewStreamableHTTPServer(srv))
	t.Cleanup(hs.Close)
	ctx := context.Background()
	set := start(t, Options{Stderr: io.Discard}, Config{Name: "tasks", URL: hs.URL + "/mcp"})
	api := set.APIs()[0]
	fn := api.Function("add_task")
	if fn == nil || slices.Contains(fn.InputSchema.Required, "due") || !slices.Contains(fn.InputSchema.Required, "title") {
		t.Fatalf("required: %+v", fn.InputSchema)
	}
	cat := &catalog.Catalog{APIs: []*catalog.API{api}}
	if err := cat.Link(); err != nil {
		t.Fatal(err)
	}
	d := sdkdocs.New(cat)
	sig, _ := d.Signature("sdk.tasks.add_task")
	if want := "sdk.tasks.add_task(args: { title: string, due: string? }): (any, SdkResponse)"; sig != want {
		t.Errorf("signature\n got %s\nwant %s", sig, want)
	}
	doc, _ := d.FunctionDocs("sdk.tasks.add_task")
	if !strings.Contains(doc, "- due: string?, optional, format date-time: when") {
		t.Errorf("docs:\n%s", doc)
	}
	for _, args := range []string{`{"title":"a"}`, `{"title":"b","due":null}`, `{"title":"c","due":"2026-01-01T00:00:00Z"}`} {
		if res := set.CallTool(ctx, api, fn, "sdk.tasks.add_task", json.RawMessage("["+args+"]")); res.Fail != sdkcall.OK {
			t.Errorf("%s: %s", args, res.Message)
		}
	}
	if res := set.CallTool(ctx, api, fn, "sdk.tasks.add_task", json.RawMessage(`[{"due":null}]`)); res.Fail == sdkcall.OK || !strings.Contains(res.Message, "missing required argument 'title'") {
		t.Errorf("title left out: %+v", res)
	}
	if len(got) != 3 {
		t.Errorf("the server got %v", got)
	}
}
