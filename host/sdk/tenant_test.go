package sdk

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/contract/sdkcall"
)

// TestRequestCredentialSlot: a credential a request brings fills the slot
// the spec's security schemes declare, and is refused, before anything is
// sent, when that slot (or the place it names) is a frozen parameter's, a
// parameter of the operation's or a header the host sets, or when the spec
// declares no such slot.
func TestRequestCredentialSlot(t *testing.T) {
	a := newTestAPI(t)
	key := func(name, in string) map[string]catalog.SecurityScheme {
		return map[string]catalog.SecurityScheme{"key": {Type: "apiKey", Name: name, In: in}}
	}
	for _, tc := range []struct {
		name    string
		schemes map[string]catalog.SecurityScheme // nil: the spec's own (bearer)
		frozen  map[string]any
		meta    string
		fn      string
		args    string
		want    string // in the refusal; "" when the call is made
		sent    func(e echo) bool
	}{
		{name: "the declared key", schemes: key("X-Key", "header"), meta: `{"type":"api_key","value":"v1"}`,
			fn: "echo", args: `[{"value":"x"}]`, sent: func(e echo) bool { return e.Headers["x-key"] == "v1" }},
		{name: "bearer where the spec says bearer", meta: `{"type":"bearer","token":"t1"}`,
			fn: "echo", args: `[{"value":"x"}]`, sent: func(e echo) bool { return e.Headers["authorization"] == "Bearer t1" }},
		{name: "no schemes: bearer in Authorization", schemes: map[string]catalog.SecurityScheme{}, meta: `{"type":"bearer","token":"t1"}`,
			fn: "echo", args: `[{"value":"x"}]`, sent: func(e echo) bool { return e.Headers["authorization"] == "Bearer t1" }},
		{name: "no schemes: no key slot", schemes: map[string]catalog.SecurityScheme{}, meta: `{"type":"api_key","value":"v","name":"X-Any","in":"header"}`,
			fn: "echo", args: `[{"value":"x"}]`, want: `api_key "X-Any" in header is not a credential slot of this API`},
		{name: "the declared slot is frozen", schemes: key("X-Tenant", "header"), frozen: map[string]any{"X-Tenant": "acme"},
			meta: `{"type":"api_key","value":"globex"}`, fn: "echo", args: `[{"value":"x"}]`, want: "X-Tenant is a parameter the operator froze"},
		{name: "the declared slot is a parameter", schemes: key("api_version", "query"),
			meta: `{"type":"api_key","value":"v9"}`, fn: "list_tenant_items", args: `[{"tenant":"t"}]`, want: "api_version is a query parameter of the operation"},
		{name: "the declared slot is a host header", schemes: key("User-Agent", "header"),
			meta: `{"type":"api_key","value":"evil"}`, fn: "echo", args: `[{"value":"x"}]`, want: "the host sets that header itself"},
		{name: "the declared cookie", schemes: key("sid", "cookie"), meta: `{"type":"api_key","value":"v1"}`,
			fn: "echo", args: `[{"value":"x"}]`, sent: func(e echo) bool { return e.Headers["cookie"] == "sid=v1" }},
		// A value that would end its cookie and add another (a frozen
		// cookie's name, which an API taking the last one would read).
		{name: "a cookie that adds a cookie", schemes: key("sid", "cookie"), meta: `{"type":"api_key","value":"v1; tenant=globex"}`,
			fn: "echo", args: `[{"value":"x"}]`, want: `the value of cookie "sid" cannot hold ';' or a control character`},
		{name: "a cookie with a line break", schemes: key("sid", "cookie"), meta: `{"type":"api_key","value":"v1\r\nX-Admin: 1"}`,
			fn: "echo", args: `[{"value":"x"}]`, want: `the value of cookie "sid" cannot hold ';' or a control character`},
		{name: "bearer where the spec wants a key", schemes: key("X-Key", "header"), meta: `{"type":"bearer","token":"t"}`,
			fn: "echo", args: `[{"value":"x"}]`, want: `bearer is not a credential slot of this API: a request's credential may fill only api_key "X-Key" in header`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := loadTestAPI(t, "pets")
			if tc.schemes != nil {
				api.SecuritySchemes = tc.schemes
			}
			c := clientOf(t, Config{APIs: []APIConfig{{Name: "pets", BaseURL: a.srv.URL, Frozen: tc.frozen}}}, api)
			meta, err := ParseMetaAuth(json.RawMessage(`{"pets":` + tc.meta + `}`))
			if err != nil {
				t.Fatal(err)
			}
			before := a.requests.Load()
			r := call(t, c.Session(meta), tc.fn, tc.args)
			if tc.want == "" {
				if e := echoed(t, r); !tc.sent(e) {
					t.Errorf("the request did not carry the credential where wanted: %+v", e)
				}
				return
			}
			if r.Fail != sdkcall.Argument || !strings.Contains(r.Message, "sdk.pets."+tc.fn+": _meta.auth.pets: ") || !strings.Contains(r.Message, tc.want) {
				t.Errorf("got %d %q, want a refusal naming %q", r.Fail, r.Message, tc.want)
			}
			if n := a.requests.Load() - before; n != 0 {
				t.Errorf("the API received %d requests, want none", n)
			}
		})
	}
}

// TestMetaAuthBounds: a request's _meta.auth brings at most
// maxMetaAuthAPIs credentials of at most maxMetaAuthSecret bytes each.
// Each one joins the redactor every response of the execution passes, and
// the redactor's cost grows with them: 40,000 short tokens made each
// 64 KiB of a response cost 47 ms to redact instead of microseconds.
func TestMetaAuthBounds(t *testing.T) {
	many := func(n int) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"api%d":{"type":"bearer","token":"tok-%06d"}`, i, i)
		}
		return b.String() + "}"
	}
	long := func(n int) string { return strings.Repeat("s", n) }
	for _, tc := range []struct {
		name, meta, want string // want: in the error; "" for none
	}{
		{"as many APIs as allowed", many(maxMetaAuthAPIs), ""},
		{"one API more", many(maxMetaAuthAPIs + 1), fmt.Sprintf("_meta.auth names %d APIs, more than %d", maxMetaAuthAPIs+1, maxMetaAuthAPIs)},
		{"the longest token", `{"pets":{"type":"bearer","token":"` + long(maxMetaAuthSecret) + `"}}`, ""},
		{"a longer token", `{"pets":{"type":"bearer","token":"` + long(maxMetaAuthSecret+1) + `"}}`,
			fmt.Sprintf("_meta.auth.pets: the token is longer than %d bytes", maxMetaAuthSecret)},
		{"a longer password", `{"pets":{"type":"basic","username":"u","password":"` + long(maxMetaAuthSecret+1) + `"}}`,
			fmt.Sprintf("_meta.auth.pets: the password is longer than %d bytes", maxMetaAuthSecret)},
		{"a longer username", `{"pets":{"type":"basic","username":"` + long(maxMetaAuthSecret+1) + `","password":"p"}}`,
			fmt.Sprintf("_meta.auth.pets: the username is longer than %d bytes", maxMetaAuthSecret)},
		{"a longer key", `{"pets":{"type":"api_key","value":"` + long(maxMetaAuthSecret+1) + `"}}`,
			fmt.Sprintf("_meta.auth.pets: the value is longer than %d bytes", maxMetaAuthSecret)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseMetaAuth(json.RawMessage(tc.meta))
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || err.Error() != tc.want):
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}
