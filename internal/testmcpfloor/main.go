// Command testmcpfloor is the floor the MCP server's benchmark compares
// `toolscript serve` with: a bare mcp-go server on standard input and
// output whose one tool, execute_script, returns what toolscript returns
// for `return 1` (the same text and structured content) without running
// anything. What toolscript takes beyond it is its own cost: reading the
// arguments, a fresh sandboxed instance, the run, the result.
//
// tests/mcp_floor_bench_test.go builds it once per run.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// result is execute_script's result for `return 1`, as toolscript writes it.
const result = `{"result":1,"logs":[],"files_touched":[]}`

func main() {
	s := server.NewMCPServer("testmcpfloor", "1", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("execute_script",
		mcp.WithDescription("Returns the result of `return 1` without running anything."),
		mcp.WithString("script", mcp.Required()),
	), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{
			Content:              []mcp.Content{mcp.NewTextContent(result)},
			RawStructuredContent: json.RawMessage(result),
		}, nil
	})
	if err := server.ServeStdio(s); err != nil {
		fmt.Fprintln(os.Stderr, "testmcpfloor:", err)
		os.Exit(1)
	}
}
