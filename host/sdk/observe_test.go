package sdk

import (
	"encoding/json"
	"testing"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/contract/sdkcall"
)

func TestCallStatus(t *testing.T) {
	for _, c := range []struct {
		name   string
		kind   catalog.Kind
		resp   sdkcall.Response
		status string
		sent   bool
	}{
		{"an API's response", catalog.OpenAPI, sdkcall.Response{Status: 200}, "200", true},
		{"an API's error status", catalog.OpenAPI, sdkcall.Response{Fail: sdkcall.Upstream, Status: 503}, "503", true},
		{"no response", catalog.OpenAPI, sdkcall.Response{Fail: sdkcall.Upstream}, "error", true},
		{"bad arguments", catalog.OpenAPI, sdkcall.Response{Fail: sdkcall.Argument}, "", false},
		{"max_calls", catalog.MCP, sdkcall.Response{Fail: sdkcall.Limit}, "", false},
		{"a tool's result", catalog.MCP, sdkcall.Response{Text: []byte("x")}, "ok", true},
		{"isError", catalog.MCP, sdkcall.Response{Fail: sdkcall.Upstream, Content: json.RawMessage(`[]`)}, "tool_error", true},
		{"a server gone", catalog.MCP, sdkcall.Response{Fail: sdkcall.Upstream}, "error", true},
		{"held by a dry run", catalog.OpenAPI, sdkcall.Response{Status: 201, DryRun: true}, "", false},
		{"a tool held by a dry run", catalog.MCP, sdkcall.Response{JSON: json.RawMessage(`{"dry_run":true}`), DryRun: true}, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, sent := callStatus(c.kind, &c.resp)
			if status != c.status || sent != c.sent {
				t.Errorf("got %q %v, want %q %v", status, sent, c.status, c.sent)
			}
		})
	}
}
