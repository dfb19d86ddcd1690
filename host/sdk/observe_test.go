package sdk

import (
	"encoding/json"
	"testing"

	"github.com/toolscript/toolscript/host/catalog"
	"github.com/toolscript/toolscript/host/luau"
)

func TestCallStatus(t *testing.T) {
	for _, c := range []struct {
		name   string
		kind   catalog.Kind
		resp   luau.SDKResponse
		status string
		sent   bool
	}{
		{"an API's response", catalog.OpenAPI, luau.SDKResponse{Status: 200}, "200", true},
		{"an API's error status", catalog.OpenAPI, luau.SDKResponse{Fail: luau.SDKUpstream, Status: 503}, "503", true},
		{"no response", catalog.OpenAPI, luau.SDKResponse{Fail: luau.SDKUpstream}, "error", true},
		{"bad arguments", catalog.OpenAPI, luau.SDKResponse{Fail: luau.SDKArgument}, "", false},
		{"max_calls", catalog.MCP, luau.SDKResponse{Fail: luau.SDKLimit}, "", false},
		{"a tool's result", catalog.MCP, luau.SDKResponse{Text: []byte("x")}, "ok", true},
		{"isError", catalog.MCP, luau.SDKResponse{Fail: luau.SDKUpstream, Content: json.RawMessage(`[]`)}, "tool_error", true},
		{"a server gone", catalog.MCP, luau.SDKResponse{Fail: luau.SDKUpstream}, "error", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, sent := callStatus(c.kind, &c.resp)
			if status != c.status || sent != c.sent {
				t.Errorf("got %q %v, want %q %v", status, sent, c.status, c.sent)
			}
		})
	}
}
