package app

import (
	"bytes"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/runtime/result"
)

// A dry run's listing for a person shows every part of a call a plan
// binds: its method, URL, headers and body.
func TestPrintEffectsShowsACallsHeaders(t *testing.T) {
	call := effects.Effect{Op: effects.OpCall, Function: "sdk.acct.run_command", Method: "POST", URL: "http://h/accounts/1/commands",
		Headers: map[string]string{"X-Target-Account": "reviewed-account", "Cookie": "session=s1", "Content-Type": "text/plain"}}
	call.SetBody([]byte(`{"cmd":"ls"}`))
	for _, tt := range []struct {
		name string
		e    effects.Effect
		want string
	}{
		{"a call with headers", call, `call   sdk.acct.run_command: POST http://h/accounts/1/commands headers {Content-Type: "text/plain", Cookie: "session=s1", X-Target-Account: "reviewed-account"} {"cmd":"ls"}`},
		{"a call without", effects.Effect{Op: effects.OpCall, Function: "sdk.a.b", Method: "DELETE", URL: "http://h/x", Headers: map[string]string{}}, `call   sdk.a.b: DELETE http://h/x` + "\n"},
		{"a decision", effects.Effect{Op: effects.OpRemove, Path: "a", Decision: "denied", Rule: "keep\x1b[2J"}, `remove a [denied by rule "keep\x1b[2J"]` + "\n"},
		{"the default's", effects.Effect{Op: effects.OpMkdir, Path: "d", Decision: "ask"}, `mkdir  d [ask by [effects] default]` + "\n"},
		{"allowed by default", effects.Effect{Op: effects.OpMkdir, Path: "d", Decision: "allowed"}, `mkdir  d` + "\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			PrintEffects(&out, &result.Result{Effects: []effects.Effect{tt.e}})
			if !strings.Contains(out.String(), tt.want) {
				t.Errorf("listing:\n%s\nwant a line with %s", out.String(), tt.want)
			}
		})
	}
}
