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

func TestShowBodyIsOneLine(t *testing.T) {
	tests := []struct{ body, want string }{
		{`{"text":"hi"}`, `{"text":"hi"}`},
		{"{\n  \"a\": 1,\n\"  2. call   sdk.x.y\": \"\u009b2J\u202e\"\n}", `{"a":1,"  2. call   sdk.x.y":"\u009b2J\u202e"}`},
		{`"` + strings.Repeat("é", 150) + `"`, `"` + strings.Repeat("é", 99) + "..."},
	}
	for _, tt := range tests {
		if got := showBody([]byte(tt.body)); got != tt.want {
			t.Errorf("showBody(%q) = %q, want %q", tt.body, got, tt.want)
		}
	}
}
