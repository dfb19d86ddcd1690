package app_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolscript/toolscript/host/serve/auth/authtest"
	"github.com/toolscript/toolscript/host/serve/mcpserver"
	"github.com/toolscript/toolscript/internal/testfile"
	"github.com/toolscript/toolscript/internal/testwait"
)

// tenantSpec is an API whose operation takes a tenant (header X-Tenant and
// query tenant, both frozen by the operator), a parameter of its own
// (filter) and an API key in the X-Api-Key header.
const tenantSpec = `openapi: 3.0.3
info: {title: echo, version: "1"}
components:
  securitySchemes:
    key: {type: apiKey, in: header, name: X-Api-Key}
security: [{key: []}]
paths:
  /echo:
    get:
      operationId: lookup
      parameters:
        - {name: X-Tenant, in: header, schema: {type: string}}
        - {name: tenant, in: query, schema: {type: string}}
        - {name: filter, in: query, schema: {type: string}}
      responses:
        "200": {description: ok, content: {application/json: {schema: {type: object}}}}
`

// recordingAPI is a real API that records every request it receives.
type recordingAPI struct {
	*httptest.Server
	mu       sync.Mutex
	requests []*http.Request
}

func newRecordingAPI(t *testing.T) *recordingAPI {
	a := &recordingAPI{}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.requests = append(a.requests, r.Clone(context.Background()))
		a.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(a.Close)
	return a
}

func (a *recordingAPI) received() []*http.Request {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]*http.Request(nil), a.requests...)
}

// TestHostedTenantCannotOverrideTheOperator: under hosted serve, with a
// real issuer, a user's _meta.auth may fill the credential slot the spec
// declares (X-Api-Key in the header) and nothing else: a credential naming
// a frozen parameter, a parameter of the operation, a header the host sets
// or a slot the spec does not declare is refused, naming what was wrong,
// and the API receives nothing.
func TestHostedTenantCannotOverrideTheOperator(t *testing.T) {
	api := newRecordingAPI(t)
	iss := authtest.NewIssuer(t, authtest.Options{PlainHTTP: true})
	file := configFile(t, "[auth]\nauthority = "+strconv.Quote(iss.URL)+"\naudience = "+strconv.Quote(iss.Audience)+"\n"+
		"[apis.echo]\nspec = "+strconv.Quote(testfile.Temp(t, "echo.yaml", tenantSpec))+"\nbase_url = "+strconv.Quote(api.URL)+"\n"+
		"[apis.echo.frozen_params]\nX-Tenant = \"acme\"\ntenant = \"acme\"\n")
	base, _, stop := startHosted(t, file)
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	c := hostedClient(t, base, iss.Token(t, "ES256", "alice"))

	call := func(cred map[string]any) string {
		t.Helper()
		req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: mcpserver.ToolName,
			Arguments: map[string]any{"script": `return sdk.echo.lookup({filter = "x"}).ok`}}}
		req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{"auth": map[string]any{"echo": cred}}}
		res, err := c.CallTool(testwait.Context(t), req)
		if err != nil {
			t.Fatalf("tools/call: %v", err)
		}
		var text strings.Builder
		for _, part := range res.Content {
			if tc, ok := part.(mcp.TextContent); ok {
				text.WriteString(tc.Text)
			}
		}
		return text.String()
	}
	refused := []struct {
		name string
		cred map[string]any
		want string
	}{
		{"frozen header", map[string]any{"type": "api_key", "value": "globex", "name": "X-Tenant", "in": "header"}, "X-Tenant"},
		{"frozen header, other case", map[string]any{"type": "api_key", "value": "globex", "name": "x-tenant", "in": "header"}, "x-tenant"},
		{"frozen query parameter", map[string]any{"type": "api_key", "value": "globex", "name": "tenant", "in": "query"}, "tenant"},
		{"parameter of the operation", map[string]any{"type": "api_key", "value": "y", "name": "filter", "in": "query"}, "filter"},
		{"header the host sets", map[string]any{"type": "api_key", "value": "evil", "name": "Accept-Encoding", "in": "header"}, "Accept-Encoding"},
		{"Host", map[string]any{"type": "api_key", "value": "evil.example", "name": "Host", "in": "header"}, "Host"},
		{"traceparent", map[string]any{"type": "api_key", "value": "00-x", "name": "traceparent", "in": "header"}, "traceparent"},
		{"the key's name in another place", map[string]any{"type": "api_key", "value": "k", "name": "X-Api-Key", "in": "query"}, "X-Api-Key"},
		{"a bearer token where the spec wants a key", map[string]any{"type": "bearer", "token": "tok"}, "bearer"},
		{"basic where the spec wants a key", map[string]any{"type": "basic", "username": "u", "password": "p"}, "basic"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			got := call(tt.cred)
			if !strings.Contains(got, "_meta.auth") || !strings.Contains(got, tt.want) {
				t.Errorf("the call answered %q, want a refusal naming _meta.auth and %q", got, tt.want)
			}
			if n := len(api.received()); n != 0 {
				t.Fatalf("the API received %d requests, want none", n)
			}
		})
	}

	// The slot the spec declares is filled, the operator's values stay.
	if got := call(map[string]any{"type": "api_key", "value": "k1"}); !strings.Contains(got, `"result":true`) {
		t.Fatalf("a key in the declared slot: %s", got)
	}
	if got := call(map[string]any{"type": "api_key", "value": "k2", "name": "x-api-key", "in": "header"}); !strings.Contains(got, `"result":true`) {
		t.Fatalf("a key naming the declared slot: %s", got)
	}
	reqs := api.received()
	if len(reqs) != 2 {
		t.Fatalf("the API received %d requests, want 2", len(reqs))
	}
	for i, r := range reqs {
		if got, want := r.Header.Get("X-Api-Key"), "k"+strconv.Itoa(i+1); got != want {
			t.Errorf("request %d: X-Api-Key %q, want %q", i, got, want)
		}
		if got := r.Header.Values("X-Tenant"); len(got) != 1 || got[0] != "acme" {
			t.Errorf("request %d: X-Tenant %q, want [acme]", i, got)
		}
		if got := r.URL.Query()["tenant"]; len(got) != 1 || got[0] != "acme" {
			t.Errorf("request %d: tenant %q, want [acme]", i, got)
		}
	}
}
