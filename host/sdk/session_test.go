package sdk

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/contract/sdkcall"
)

func TestResponses(t *testing.T) {
	a := newTestAPI(t)
	s := newClient(t, a, Config{}, APIConfig{}).Session(nil)

	r := call(t, s, "list_pets", `[{"page":2}]`)
	if r.Fail != sdkcall.OK || r.Status != 200 || string(r.JSON) != `[{"id":21,"name":"Rex","tag":null},{"id":22,"name":"Tom"}]`+"\n" {
		t.Errorf("list_pets: %+v %s", r, r.JSON)
	}
	if !strings.Contains(r.Headers["link"], `rel="next"`) || r.Headers["x-ratelimit-remaining"] != "42" || r.Headers["etag"] != `"v1"` {
		t.Errorf("headers %v", r.Headers)
	}

	r = call(t, s, "create_pet", `[{"name":"Rex","tag":null}]`)
	if r.Status != 201 || r.Fail != sdkcall.OK || !strings.Contains(string(r.JSON), `"id":9007199254740991`) {
		t.Errorf("create_pet: %+v %s", r, r.JSON)
	}
	r = call(t, s, "delete_pet", `[{"petId":1}]`)
	if r.Status != 204 || r.Fail != sdkcall.OK || r.JSON != nil || r.Text != nil {
		t.Errorf("204: %+v", r)
	}
	r = call(t, s, "get_pet", `[{"petId":404}]`)
	if r.Fail != sdkcall.Upstream || r.Status != 404 || r.Message != `sdk.pets.get_pet: HTTP 404 Not Found: {"message":"no pet 404"}`+"\n" ||
		string(r.JSON) != `{"message":"no pet 404"}`+"\n" || r.Headers["content-type"] != "application/json" {
		t.Errorf("404: %+v %q", r, r.Message)
	}
	r = call(t, s, "get_pet", `[{"petId":500}]`)
	if r.Fail != sdkcall.Upstream || r.Status != 500 || r.Message != "sdk.pets.get_pet: HTTP 500 Internal Server Error: database on fire" || string(r.Text) != "database on fire" {
		t.Errorf("500: %+v", r)
	}
	r = call(t, s, "fail", `[]`)
	if r.Fail != sdkcall.Upstream || r.Message != "sdk.pets.fail: HTTP 500 Internal Server Error" || r.JSON != nil || r.Text != nil {
		t.Errorf("empty 500: %+v", r)
	}
	r = call(t, s, "get_text", `[]`)
	if r.Fail != sdkcall.OK || string(r.Text) != "caf\xe9\x00end" || r.JSON != nil {
		t.Errorf("text keeps its bytes: %+v", r)
	}
}

// TestCallData: a call whose script takes only the data gets a successful
// response without headers and the same data; a failure keeps its headers
// for the error table; Observed passes CallData on and still reports.
func TestCallData(t *testing.T) {
	a := newTestAPI(t)
	c := newClient(t, a, Config{}, APIConfig{})
	var reported []string
	for name, caller := range map[string]sdkcall.Caller{
		"session":  c.Session(nil),
		"observed": c.Observed(c.Session(nil), func(source, status string) { reported = append(reported, source+" "+status) }),
	} {
		t.Run(name, func(t *testing.T) {
			data := caller.(sdkcall.DataCaller)
			full := caller.Call(context.Background(), fnID(t, c, "list_pets"), json.RawMessage(`[{"page":2}]`))
			r := data.CallData(context.Background(), fnID(t, c, "list_pets"), json.RawMessage(`[{"page":2}]`))
			if r.Fail != sdkcall.OK || r.Status != 200 || r.Headers != nil || string(r.JSON) != string(full.JSON) || full.Headers["etag"] != `"v1"` {
				t.Errorf("list_pets: %+v %s", r, r.JSON)
			}
			r = data.CallData(context.Background(), fnID(t, c, "get_pet"), json.RawMessage(`[{"petId":404}]`))
			if r.Fail != sdkcall.Upstream || r.Status != 404 || r.Headers["content-type"] != "application/json" {
				t.Errorf("404: %+v", r)
			}
		})
	}
	if strings.Join(reported, ",") != "pets 200,pets 200,pets 404" {
		t.Errorf("observed reported %v", reported)
	}
}

func TestArgumentChecks(t *testing.T) {
	a := newTestAPI(t)
	s := newClient(t, a, Config{}, APIConfig{}).Session(nil)
	for _, tc := range []struct{ fn, args, want string }{
		{"list_pets", `[{"limt":5}]`, "sdk.pets.list_pets: unknown parameter 'limt' (did you mean 'limit'?)"},
		{"list_pets", `[{"zzzzzz":5}]`, "sdk.pets.list_pets: unknown parameter 'zzzzzz' (parameters: limit, status, page)"},
		{"get_pet", `[{}]`, "sdk.pets.get_pet: missing required parameter 'petId'"},
		{"get_pet", `[]`, "sdk.pets.get_pet: missing required parameter 'petId'"},
		{"get_pet", `[{"petId":"seven"}]`, "sdk.pets.get_pet: parameter 'petId': got string, want integer"},
		{"get_pet", `[{"petId":1.5}]`, "sdk.pets.get_pet: parameter 'petId': got number, want integer"},
		{"list_pets", `[{"status":"lost"}]`, "sdk.pets.list_pets: parameter 'status': value must be one of 'available', 'sold'"},
		{"list_pets", `[{"limit":3000000000}]`, "sdk.pets.list_pets: parameter 'limit': 3000000000 is not valid int32: out of range"},
		{"echo", `[{"value":"x","id":"not-a-uuid"}]`, "sdk.pets.echo: parameter 'id': 'not-a-uuid' is not valid uuid: must have 5 elements"},
		{"echo", `[{"value":"x","when":"yesterday"}]`, "sdk.pets.echo: parameter 'when': 'yesterday' is not valid date-time: less than 20 characters long"},
		{"echo", `[{"value":"x","many":[1,"two"]}]`, "sdk.pets.echo: parameter 'many'[1]: got string, want integer"},
		{"create_pet", `[]`, "sdk.pets.create_pet: missing the request body"},
		{"create_pet", `[{"tag":"x"}]`, "sdk.pets.create_pet: body: missing required property 'name'"},
		{"create_pet", `[{"name":7}]`, "sdk.pets.create_pet: body.name: got number, want string"},
		{"create_pet", `["Rex"]`, "sdk.pets.create_pet: body: got string, want object"},
		{"echo_body", `[{"name":"x","owner":{"email":"nope"}}]`, "sdk.pets.echo_body: body.owner.email: 'nope' is not valid email: missing @"},
		{"echo_body", `[{"name":"x","meta":{"a":"b"}}]`, "sdk.pets.echo_body: body.meta.a: got string, want integer"},
		{"echo_body", `[{"name":"x","tags":[1]}]`, "sdk.pets.echo_body: body.tags[0]: got number, want string"},
		{"update_pet", `[{"name":"Rex"}]`, "sdk.pets.update_pet: unknown parameter 'name': it is a field of the body, the second argument (params, body)"},
		{"update_pet", `[{"petId":1},{"name":"x"},3]`, "sdk.pets.update_pet: takes (params, body); got 3 arguments"},
		{"get_pet", `["7"]`, "sdk.pets.get_pet: params must be a table of parameter names to values, got a string"},
		{"get_text", `[1]`, "sdk.pets.get_text: takes no arguments; got 1 arguments"},
	} {
		t.Run(tc.fn+tc.args, func(t *testing.T) {
			before := a.requests.Load()
			r := call(t, s, tc.fn, tc.args)
			if r.Fail != sdkcall.Argument || r.Message != tc.want {
				t.Errorf("got %d %q\nwant %q", r.Fail, r.Message, tc.want)
			}
			if a.requests.Load() != before {
				t.Error("a request was sent for bad arguments")
			}
		})
	}
	if s.Calls() != 0 {
		t.Errorf("bad arguments counted as %d calls", s.Calls())
	}
	// An empty table where an object is expected arrives as [] and is fine;
	// a Lua number with an integral value is an integer; readOnly id is not required.
	for _, tc := range []struct{ fn, args string }{
		{"echo_body", `[{"name":"x","meta":[],"owner":[]}]`},
		{"list_pets", `[[]]`},
		{"list_pets", `[]`},
		{"update_pet", `[{"petId":1}]`},
		{"create_pet", `[{"name":"Rex","tag":null}]`},
	} {
		if r := call(t, s, tc.fn, tc.args); r.Fail != sdkcall.OK {
			t.Errorf("%s %s: %s", tc.fn, tc.args, r.Message)
		}
	}
	if e := echoed(t, call(t, s, "echo_body", `[{"name":"x","meta":[]}]`)); e.Body != `{"meta":{},"name":"x"}` {
		t.Errorf("[] for an object is sent as {}: %s", e.Body)
	}
}

func TestParameterEncoding(t *testing.T) {
	a := newTestAPI(t)
	s := newClient(t, a, Config{}, APIConfig{}).Session(nil)
	for _, tc := range []struct{ args, path, query string }{
		{`[{"value":"a/b?c#d"}]`, "/echo/a%2Fb%3Fc%23d", ""},
		{`[{"value":".."}]`, "/echo/%2E%2E", ""},
		{`[{"value":"../../pets"}]`, "/echo/..%2F..%2Fpets", ""},
		{`[{"value":"x y&z"}]`, "/echo/x%20y%26z", ""},
		{`[{"value":7}]`, "/echo/7", ""},
		{`[{"value":"x","q":"a&b=c d"}]`, "/echo/x", "q=a%26b%3Dc%20d"},
		{`[{"value":"x","list":["a","b,c"]}]`, "/echo/x", "list=a,b%2Cc"},
		{`[{"value":"x","many":[1,2]}]`, "/echo/x", "many=1&many=2"},
		{`[{"value":"x","pipes":["a","b"]}]`, "/echo/x", "pipes=a|b"},
		{`[{"value":"x","spaces":["a","b"]}]`, "/echo/x", "spaces=a%20b"},
		{`[{"value":"x","filter":{"status":"sold","owner":{"name":"bo"},"ids":[1,2]}}]`, "/echo/x", "filter[ids]=1&filter[ids]=2&filter[owner][name]=bo&filter[status]=sold"},
		{`[{"value":"x","point":{"x":1,"y":2}}]`, "/echo/x", "x=1&y=2"},
		{`[{"value":"x","q":true}]`, "", ""},
	} {
		r := call(t, s, "echo", tc.args)
		if tc.path == "" {
			if r.Fail != sdkcall.Argument {
				t.Errorf("%s: %+v", tc.args, r)
			}
			continue
		}
		e := echoed(t, r)
		if e.Path != tc.path || e.Query != tc.query {
			t.Errorf("%s: path %s query %s, want %s %s", tc.args, e.Path, e.Query, tc.path, tc.query)
		}
	}
	e := echoed(t, call(t, s, "echo", `[{"value":"x","X-Trace":"t-1","session":"s 1"}]`))
	if e.Headers["x-trace"] != "t-1" || e.Headers["cookie"] != "session=s%201" {
		t.Errorf("header and cookie: %v", e.Headers)
	}
	if r := call(t, s, "echo", `[{"value":"x","X-Trace":"a\r\nInjected: 1"}]`); r.Fail != sdkcall.Argument || !strings.Contains(r.Message, "line breaks") {
		t.Errorf("header injection: %+v", r)
	}
	e = echoed(t, call(t, s, "echo_styles", `[{"label":["a","b"],"matrix":{"x":1,"y":"z/w"}}]`))
	if e.Path != "/echo-labels/.a,b/;x=1;y=z%2Fw" {
		t.Errorf("label and matrix: %s", e.Path)
	}
}

func TestBodies(t *testing.T) {
	a := newTestAPI(t)
	s := newClient(t, a, Config{}, APIConfig{}).Session(nil)
	e := echoed(t, call(t, s, "echo_body", `[{"name":"Rex","tags":["a"]}]`))
	if e.Headers["content-type"] != "application/json" || e.Body != `{"name":"Rex","tags":["a"]}` {
		t.Errorf("json: %v %s", e.Headers["content-type"], e.Body)
	}
	e = echoed(t, call(t, s, "submit_form", `[{"name":"R&x","tags":["a","b"]}]`))
	if e.Headers["content-type"] != "application/x-www-form-urlencoded" || e.Form["name"][0] != "R&x" || len(e.Form["tags"]) != 2 {
		t.Errorf("form: %v %v", e.Headers["content-type"], e.Form)
	}
	e = echoed(t, call(t, s, "upload", `[{"file":"bytes\u0000here","caption":"hi","meta":{"k":1}}]`))
	if e.Files["file"] != "bytes\x00here" || e.FileType["file"] != "application/octet-stream" || e.Form["caption"][0] != "hi" || e.Form["meta"][0] != `{"k":1}` {
		t.Errorf("multipart: files %v form %v", e.Files, e.Form)
	}
	if r := call(t, s, "upload", `[{"caption":"hi"}]`); r.Fail != sdkcall.Argument || !strings.Contains(r.Message, "missing required property 'file'") {
		t.Errorf("multipart required: %+v", r)
	}
}

// TestBinaryArguments: the shim writes a string's bytes that are not UTF-8
// as they are, and they reach a file part, a string body, a form field and
// a query intact; only a JSON body, which is text, has U+FFFD instead.
func TestBinaryArguments(t *testing.T) {
	a := newTestAPI(t)
	s := newClient(t, a, Config{}, APIConfig{}).Session(nil)
	const raw = "\x89PNG\r\n\x1a\n\x00\xff\xfe\xc3(\xe2\x82\"\\"
	hexRaw := hex.EncodeToString([]byte(raw))
	e := echoed(t, call(t, s, "upload", `[{"file":`+shimString(raw)+`,"caption":"hi"}]`))
	if e.FilesHex["file"] != hexRaw {
		t.Errorf("file part: %s, want %s", e.FilesHex["file"], hexRaw)
	}
	e = echoed(t, call(t, s, "echo_raw", `[`+shimString(raw)+`]`))
	if e.BodyHex != hexRaw || e.Headers["content-type"] != "application/octet-stream" {
		t.Errorf("string body: %s %s, want %s", e.Headers["content-type"], e.BodyHex, hexRaw)
	}
	e = echoed(t, call(t, s, "submit_form", `[{"name":`+shimString("\xff\xfe")+`}]`))
	if e.Body != "name=%FF%FE" {
		t.Errorf("form field: %s", e.Body)
	}
	e = echoed(t, call(t, s, "echo", `[{"value":`+shimString("\xfe")+`,"q":`+shimString("\xff")+`,"X-Trace":`+shimString("a\xffb")+`}]`))
	// The echo's JSON shows the header's byte as U+FFFD: one byte arrived.
	if e.Path != "/echo/%FE" || e.Query != "q=%FF" || e.Headers["x-trace"] != "a\ufffdb" {
		t.Errorf("path, query and header: %s %s %q", e.Path, e.Query, e.Headers["x-trace"])
	}
	e = echoed(t, call(t, s, "echo_body", `[{"name":`+shimString("a\xffb")+`}]`))
	if e.Body != `{"name":"a\ufffdb"}` {
		t.Errorf("JSON body: %s", e.Body)
	}
}

// shimString is s as the shim writes a string into an sdk call's
// arguments: a JSON string whose bytes that are not UTF-8 are left as they
// are.
func shimString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20:
			fmt.Fprintf(&b, "\\u%04x", c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func TestAuth(t *testing.T) {
	a := newTestAPI(t)
	const token = "tok-SECRET-123"
	for _, tc := range []struct {
		name string
		cred *Credential
		want func(e echo) bool
	}{
		{"bare secret, spec says bearer", &Credential{Token: token}, func(e echo) bool { return e.Headers["authorization"] == "Bearer "+token }},
		{"bearer", &Credential{Type: AuthBearer, Token: token}, func(e echo) bool { return e.Headers["authorization"] == "Bearer "+token }},
		{"basic", &Credential{Type: AuthBasic, Username: "admin", Password: token}, func(e echo) bool { return strings.HasPrefix(e.Headers["authorization"], "Basic ") }},
		{"api_key header", &Credential{Type: AuthAPIKey, Value: token, Name: "X-Api-Key", In: "header"}, func(e echo) bool { return e.Headers["x-api-key"] == token }},
		{"api_key query", &Credential{Type: AuthAPIKey, Value: token, Name: "api_key", In: "query"}, func(e echo) bool { return e.Query == "api_key="+url.QueryEscape(token) }},
		{"api_key cookie", &Credential{Type: AuthAPIKey, Value: token, Name: "sid", In: "cookie"}, func(e echo) bool { return e.Headers["cookie"] == "sid="+token }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seen echo
			// A server that records what it got, and echoes nothing back.
			c := newClient(t, a, Config{}, APIConfig{Auth: tc.cred})
			s := c.Session(nil)
			r := call(t, s, "echo", `[{"value":"x"}]`)
			if r.Fail != sdkcall.OK {
				t.Fatal(r.Message)
			}
			if strings.Contains(string(r.JSON), token) {
				t.Errorf("the echoed credential reached the script: %s", r.JSON)
			}
			if !strings.Contains(string(r.JSON), Redacted) {
				t.Errorf("no redaction in %s", r.JSON)
			}
			json.Unmarshal(r.JSON, &seen)
			// The server got the credential: look at the raw request through
			// a second call whose echo is redacted too, so check the shape.
			raw := strings.ReplaceAll(string(r.JSON), Redacted, token)
			json.Unmarshal([]byte(raw), &seen)
			if tc.name == "basic" {
				seen.Headers["authorization"] = "Basic x"
			}
			if !tc.want(seen) {
				t.Errorf("the request did not carry the credential: %+v", seen)
			}
			// security: [] sends none.
			pub := echoed(t, call(t, s, "public_info", `[]`))
			if pub.Headers["authorization"] != "" || pub.Headers["x-api-key"] != "" || pub.Query != "" || pub.Headers["cookie"] != "" {
				t.Errorf("security: [] got credentials: %+v", pub)
			}
		})
	}

	// The spec's apiKey scheme decides how a bare secret is sent.
	api := loadTestAPI(t, "pets")
	api.SecuritySchemes = map[string]catalog.SecurityScheme{"key": {Type: "apiKey", Name: "X-Key", In: "header"}}
	for _, f := range api.Functions {
		if f.Security != nil {
			f.Security = [][]string{{"key"}}
		}
	}
	c := clientOf(t, Config{APIs: []APIConfig{{Name: "pets", BaseURL: a.srv.URL, Auth: &Credential{Token: token}}}}, api)
	r := call(t, c.Session(nil), "echo", `[{"value":"x"}]`)
	if !strings.Contains(string(r.JSON), `"x-key":"[REDACTED]"`) || strings.Contains(string(r.JSON), "authorization") {
		t.Errorf("apiKey scheme: %s", r.JSON)
	}
}

func TestRequestAuth(t *testing.T) {
	a := newTestAPI(t)
	meta, err := ParseMetaAuth(json.RawMessage(`{"pets": {"type": "bearer", "token": "user-token-1"}, "other": {"type": "api_key", "value": "other-key-1"}}`))
	if err != nil {
		t.Fatal(err)
	}
	// No configured credential: the request's is used.
	s := newClient(t, a, Config{}, APIConfig{}).Session(meta)
	r := call(t, s, "echo", `[{"value":"x"}]`)
	if !strings.Contains(string(r.JSON), `"authorization":"Bearer [REDACTED]"`) {
		t.Errorf("_meta.auth not used: %s", r.JSON)
	}
	// A configured one wins.
	s = newClient(t, a, Config{}, APIConfig{Auth: &Credential{Token: "configured-1"}}).Session(meta)
	r = call(t, s, "echo", `[{"value":"user-token-1"}]`)
	if !strings.Contains(string(r.JSON), `"authorization":"Bearer [REDACTED]"`) || strings.Contains(string(r.JSON), "user-token-1") {
		t.Errorf("configured credential: %s", r.JSON)
	}
	for _, bad := range []string{`[1]`, `{"pets": {"type": "magic", "token": "x"}}`, `{"pets": {"type": "bearer"}}`, `{"pets": {"type": "basic"}}`} {
		if _, err := ParseMetaAuth(json.RawMessage(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
	if _, err := ParseMetaAuth(json.RawMessage(`{"pets": {"type": "bearer", "token": 5}}`)); err == nil || strings.Contains(err.Error(), "5") {
		t.Errorf("error %v", err)
	}
}

func TestRedactedMessages(t *testing.T) {
	a := newTestAPI(t)
	const key = "k3y-in-the-query"
	// Transport failure with the key in the URL's query.
	s := newClient(t, a, Config{}, APIConfig{BaseURL: "http://127.0.0.1:1", Auth: &Credential{Type: AuthAPIKey, Value: key, Name: "api_key", In: "query"}}).Session(nil)
	r := call(t, s, "echo", `[{"value":"x"}]`)
	if r.Fail != sdkcall.Upstream || r.Status != 0 || !strings.HasPrefix(r.Message, "sdk.pets.echo: request failed: ") || strings.Contains(r.Message, key) {
		t.Errorf("transport failure: %+v", r)
	}
	// An error body that echoes the credential.
	s = newClient(t, a, Config{}, APIConfig{Auth: &Credential{Token: key}}).Session(nil)
	r = call(t, s, "redirect", `[{"to":"`+key+`"}]`) // ends at /echo/landed, fine
	if strings.Contains(string(r.JSON), key) {
		t.Errorf("redirect echo: %s", r.JSON)
	}
	// An argument error quoting a value equal to the secret.
	r = call(t, s, "list_pets", `[{"status":"`+key+`"}]`)
	if r.Fail != sdkcall.Argument || strings.Contains(r.Message, key) {
		t.Errorf("argument error: %+v", r)
	}
}

func TestFrozenParams(t *testing.T) {
	a := newTestAPI(t)
	c := newClient(t, a, Config{Frozen: map[string]any{"api_version": "v2", "tenant": "global"}}, APIConfig{Frozen: map[string]any{"tenant": "abc-123"}})
	for _, api := range c.Manifest().APIs {
		for _, f := range api.Functions {
			if f.Name == "list_tenant_items" && strings.Join(f.Params, ",") != "limit" {
				t.Errorf("frozen parameters visible in the manifest: %v", f.Params)
			}
		}
	}
	s := c.Session(nil)
	e := echoed(t, call(t, s, "list_tenant_items", `[{"limit":2}]`))
	if e.Path != "/tenants/abc-123/items" || e.Query != "limit=2&api_version=v2" {
		t.Errorf("frozen: %s ? %s", e.Path, e.Query)
	}
	e = echoed(t, call(t, s, "list_tenant_items", `[]`))
	if e.Path != "/tenants/abc-123/items" {
		t.Errorf("a required frozen parameter needs no argument: %s", e.Path)
	}
	if r := call(t, s, "list_tenant_items", `[{"tenant":"evil"}]`); r.Fail != sdkcall.Argument || r.Message != "sdk.pets.list_tenant_items: unknown parameter 'tenant' (parameters: limit)" {
		t.Errorf("a script cannot set a frozen parameter: %+v", r)
	}
}

func TestLimits(t *testing.T) {
	a := newTestAPI(t)
	s := newClient(t, a, Config{MaxCalls: 3, MaxResponseBytes: 10000}, APIConfig{}).Session(nil)
	for i := 0; i < 3; i++ {
		if r := call(t, s, "list_pets", `[]`); r.Fail != sdkcall.OK {
			t.Fatal(r.Message)
		}
	}
	before := a.requests.Load()
	r := call(t, s, "list_pets", `[]`)
	if r.Fail != sdkcall.Limit || r.Message != "sdk.pets.list_pets: more than 3 sdk calls in one execution (max_calls: [sdk] max_calls or --max-calls)" {
		t.Errorf("max_calls: %+v", r)
	}
	if a.requests.Load() != before {
		t.Error("a call past max_calls was sent")
	}

	// The headers (about 90 bytes here) count toward max_response_bytes.
	s = newClient(t, a, Config{MaxResponseBytes: 10100}, APIConfig{}).Session(nil)
	if r := call(t, s, "big", `[{"n":10000}]`); r.Fail != sdkcall.OK || len(r.Text) != 10000 {
		t.Errorf("under the cap: %d %s", r.Fail, r.Message)
	}
	for _, args := range []string{`{"n":10100}`, `{"n":10000000}`, `{"n":10100,"chunked":true}`, `{"n":10000000,"chunked":true}`} {
		r := call(t, s, "big", `[`+args+`]`)
		if r.Fail != sdkcall.Limit || !strings.Contains(r.Message, "more than max_response_bytes (10100") {
			t.Errorf("%s: %d %q", args, r.Fail, r.Message)
		}
	}
}

func TestTimeouts(t *testing.T) {
	a := newTestAPI(t)
	// The per-call timeout.
	s := newClient(t, a, Config{}, APIConfig{Timeout: 50 * time.Millisecond}).Session(nil)
	r := call(t, s, "slow", `[]`)
	<-a.slowStarted
	<-a.slowDone
	if r.Fail != sdkcall.Upstream || r.Status != 0 || r.Message != "sdk.pets.slow: no response within 50ms (timeout of [apis.pets])" {
		t.Errorf("timeout: %+v", r)
	}
	// The per-call timeout, within an execution whose deadline is later.
	later, cancelLater := context.WithTimeout(context.Background(), time.Minute)
	defer cancelLater()
	r = s.Call(later, fnID(t, s.c, "slow"), json.RawMessage(`[]`))
	<-a.slowStarted
	<-a.slowDone
	if r.Fail != sdkcall.Upstream || r.Message != "sdk.pets.slow: no response within 50ms (timeout of [apis.pets])" {
		t.Errorf("timeout before the execution's deadline: %+v", r)
	}
	// The execution ends: the request is abandoned at once.
	s = newClient(t, a, Config{}, APIConfig{}).Session(nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *sdkcall.Response)
	go func() { done <- s.Call(ctx, fnID(t, s.c, "slow"), json.RawMessage(`[]`)) }()
	<-a.slowStarted
	cancel()
	r = <-done
	<-a.slowDone // the server saw the request go away
	if r.Fail != sdkcall.Upstream || r.Message != "sdk.pets.slow: cancelled" {
		t.Errorf("cancelled: %+v", r)
	}
	// The execution's deadline passes while the call waits.
	dl := &deadlineCtx{Context: context.Background(), done: make(chan struct{})}
	go func() {
		<-a.slowStarted
		close(dl.done)
	}()
	r = s.Call(dl, fnID(t, s.c, "slow"), json.RawMessage(`[]`))
	<-a.slowDone
	if r.Message != "sdk.pets.slow: the execution's time ran out" {
		t.Errorf("deadline: %+v", r)
	}
	// A deadline sooner than the call's timeout ends the request by itself.
	sooner, cancelSooner := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancelSooner()
	r = s.Call(sooner, fnID(t, s.c, "slow"), json.RawMessage(`[]`))
	<-a.slowStarted
	<-a.slowDone
	if r.Message != "sdk.pets.slow: the execution's time ran out" {
		t.Errorf("a deadline sooner than the timeout: %+v", r)
	}
}

func TestRedirects(t *testing.T) {
	a := newTestAPI(t)
	s := newClient(t, a, Config{}, APIConfig{}).Session(nil)
	if e := echoed(t, call(t, s, "redirect", `[{"to":"here","times":4}]`)); e.Path != "/echo/landed" {
		t.Errorf("same origin: %s", e.Path)
	}
	before := a.requests.Load()
	r := call(t, s, "redirect", `[{"to":"other"}]`)
	if r.Fail != sdkcall.Upstream || r.Status != 302 || !strings.Contains(r.Message, "not followed") {
		t.Errorf("other origin: %+v", r)
	}
	if a.requests.Load() != before+1 {
		t.Error("the other origin was contacted")
	}
	if r := call(t, s, "redirect", `[{"to":"here","times":6}]`); r.Status != 302 {
		t.Errorf("more than 5 redirects: %+v", r)
	}
}

func TestManifestAndNames(t *testing.T) {
	a := newTestAPI(t)
	api1, api2 := loadTestAPI(t, "pets"), loadTestAPI(t, "shop")
	api2.Functions = api2.Functions[:1] // list_pets only
	c := clientOf(t, Config{APIs: []APIConfig{{Name: "pets", BaseURL: a.srv.URL}, {Name: "shop", BaseURL: a.srv.URL}}}, api1, api2)
	m := c.Manifest()
	seen := map[uint32]bool{}
	for _, api := range m.APIs {
		for _, f := range api.Functions {
			if seen[f.ID] {
				t.Errorf("duplicate id %d", f.ID)
			}
			seen[f.ID] = true
			if f.Name == "list_pets" && f.Flat {
				t.Error("list_pets is in two APIs: not flat")
			}
			if f.Name == "get_pet" && (!f.Flat || strings.Join(f.Required, ",") != "petId" || f.Kind != "openapi") {
				t.Errorf("get_pet %+v", f)
			}
		}
	}
	// Messages name the function as the script wrote it.
	s := c.Session(nil)
	r := s.Call(context.Background(), m.APIs[1].Functions[0].ID, json.RawMessage(`[{"limt":1}]`))
	if !strings.HasPrefix(r.Message, "sdk.shop.list_pets: ") {
		t.Errorf("message %q", r.Message)
	}
	if r := s.Call(context.Background(), 9999, nil); r.Fail != sdkcall.Argument {
		t.Errorf("unknown id: %+v", r)
	}
	_, err := New(&catalog.Catalog{APIs: []*catalog.API{loadTestAPI(t, "pets"), loadTestAPI(t, "get_pet")}}, Config{})
	if err != nil {
		t.Errorf("get_pet is in both APIs, so not flat: no clash expected: %v", err)
	}
	clash := loadTestAPI(t, "other")
	clash.Functions = clash.Functions[:1]
	_, err = New(&catalog.Catalog{APIs: []*catalog.API{loadTestAPI(t, "pets"), {Name: "get_pet", Functions: clash.Functions}}}, Config{})
	if err == nil || !strings.Contains(err.Error(), `API "get_pet"`) {
		t.Errorf("clash: %v", err)
	}
}

func TestBaseURLWithPath(t *testing.T) {
	a := newTestAPI(t)
	// A base URL with a path prefix and a trailing slash: one slash between.
	s := newClient(t, a, Config{}, APIConfig{BaseURL: a.srv.URL + "/echo/"}).Session(nil)
	r := call(t, s, "public_info", `[]`)
	e := echoed(t, r)
	if e.Path != "/echo/public" {
		t.Errorf("path %s", e.Path)
	}
}

func TestNoBaseURL(t *testing.T) {
	api := loadTestAPI(t, "pets")
	api.BaseURL = ""
	c := clientOf(t, Config{}, api)
	r := call(t, c.Session(nil), "list_pets", `[]`)
	if r.Fail != sdkcall.Argument || !strings.Contains(r.Message, "set base_url in [apis.pets]") {
		t.Errorf("%+v", r)
	}
}

// deadlineCtx is a context whose deadline passes when done is closed.
type deadlineCtx struct {
	context.Context
	done chan struct{}
}

func (c *deadlineCtx) Done() <-chan struct{} { return c.done }
func (c *deadlineCtx) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// toolCaller answers MCP tool calls with the arguments it got.
type toolCaller struct{ calls int }

func (tc *toolCaller) CallTool(ctx context.Context, api *catalog.API, fn *catalog.Function, name string, args json.RawMessage) *sdkcall.Response {
	tc.calls++
	return &sdkcall.Response{JSON: json.RawMessage(`{"tool":"` + fn.Tool + `","name":"` + name + `","args":` + string(args) + `}`)}
}

func TestMCPFunctionsSlotIn(t *testing.T) {
	a := newTestAPI(t)
	files := &catalog.API{Name: "files", Kind: catalog.MCP, Functions: []*catalog.Function{{Name: "read_file", Kind: catalog.MCP, Tool: "read-file",
		InputSchema: &catalog.Schema{Type: []string{"object"}, Required: []string{"path"}, Properties: []*catalog.Property{{Name: "path", Schema: &catalog.Schema{Type: []string{"string"}}}}}}}}
	tools := &toolCaller{}
	c := clientOf(t, Config{MaxCalls: 2, Tools: tools, APIs: []APIConfig{{Name: "pets", BaseURL: a.srv.URL}}}, loadTestAPI(t, "pets"), files)
	m := c.Manifest().APIs[1].Functions[0]
	if m.Kind != "mcp" || strings.Join(m.Params, ",") != "path" || strings.Join(m.Required, ",") != "path" {
		t.Errorf("manifest %+v", m)
	}
	s := c.Session(nil)
	r := call(t, s, "read_file", `[{"path":"a.txt"}]`)
	if r.Fail != sdkcall.OK || string(r.JSON) != `{"tool":"read-file","name":"sdk.files.read_file","args":[{"path":"a.txt"}]}` {
		t.Errorf("%+v %s", r, r.JSON)
	}
	call(t, s, "list_pets", `[]`)
	// OpenAPI and MCP calls share max_calls.
	if r := call(t, s, "read_file", `[]`); r.Fail != sdkcall.Limit || tools.calls != 1 {
		t.Errorf("max_calls across kinds: %+v", r)
	}
}

// TestConcurrentCalls: calls of one session run concurrently (parallel),
// at most max_parallel at once, sharing its budgets; run with -race.
func TestConcurrentCalls(t *testing.T) {
	a := newTestAPI(t)
	s := newClient(t, a, Config{MaxParallel: 2, MaxCalls: 3}, APIConfig{}).Session(nil)
	ctx, cancel := context.WithCancel(context.Background())
	results := make(chan *sdkcall.Response, 3)
	for range 3 {
		go func() { results <- s.Call(ctx, fnID(t, s.c, "slow"), json.RawMessage(`[]`)) }()
	}
	<-a.slowStarted
	<-a.slowStarted // two in flight; the third waits for a slot
	cancel()
	for range 3 {
		if r := <-results; r.Fail != sdkcall.Upstream || r.Message != "sdk.pets.slow: cancelled" {
			t.Errorf("%+v", r)
		}
	}
	if s.Calls() != 3 {
		t.Errorf("calls %d", s.Calls())
	}
	if r := call(t, s, "list_pets", `[]`); r.Fail != sdkcall.Limit {
		t.Errorf("budget shared across goroutines: %+v", r)
	}
	// Many sessions at once share the client.
	c := newClient(t, a, Config{}, APIConfig{})
	done := make(chan string, 20)
	for i := range 20 {
		go func() {
			r := call(t, c.Session(nil), "get_pet", `[{"petId":`+strconv.Itoa(i+1)+`}]`)
			done <- string(r.JSON)
		}()
	}
	for range 20 {
		if j := <-done; !strings.Contains(j, `"name":"Rex"`) {
			t.Errorf("%s", j)
		}
	}
}
