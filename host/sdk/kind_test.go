package sdk

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/contract/sdkcall"
)

// TestKindChecksBeforeCounting: each kind of function checks a call
// before it counts against max_calls: an OpenAPI operation's arguments,
// an MCP tool's caller (none here, as in a client made without upstream
// servers). Neither failure is a call made.
func TestKindChecksBeforeCounting(t *testing.T) {
	a := newTestAPI(t)
	tools := &catalog.API{Name: "files", Kind: catalog.MCP, Functions: []*catalog.Function{
		{Name: "read_file", Kind: catalog.MCP, Tool: "read_file"},
	}}
	c := clientOf(t, Config{APIs: []APIConfig{{Name: "pets", BaseURL: a.srv.URL}}, MaxCalls: 1}, loadTestAPI(t, "pets"), tools)
	s := c.Session(nil)
	for _, tc := range []struct {
		fn, args, message string
	}{
		{"read_file", `[{"path":"x"}]`, "sdk.files.read_file: MCP tools are not available here"},
		{"get_pet", `[{"petID":7}]`, "sdk.pets.get_pet: unknown parameter 'petID' (did you mean 'petId'?)"},
	} {
		r := s.Call(context.Background(), fnID(t, c, tc.fn), json.RawMessage(tc.args))
		if r.Fail != sdkcall.Argument || r.Message != tc.message {
			t.Errorf("%s: %+v, want an argument error %q", tc.fn, r, tc.message)
		}
	}
	if n := s.Calls(); n != 0 {
		t.Errorf("%d calls counted, want 0", n)
	}
	// The one call max_calls allows is still there.
	if r := s.Call(context.Background(), fnID(t, c, "get_pet"), json.RawMessage(`[{"petId":7}]`)); r.Fail != sdkcall.OK {
		t.Errorf("get_pet: %+v", r)
	}
}
