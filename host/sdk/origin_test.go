package sdk

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/toolscript/toolscript/host/contract/sdkcall"
	"github.com/toolscript/toolscript/host/sdk/openapi"
)

// specHost is an API that serves its own spec (at /spec.json) and records
// who called its one operation with which Authorization header.
type specHost struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls []string // the Authorization header of each call
}

func newSpecHost(t *testing.T, spec string) *specHost {
	t.Helper()
	h := &specHost{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/spec.json":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, spec)
		case strings.HasSuffix(r.URL.Path, "/whoami"):
			h.mu.Lock()
			h.calls = append(h.calls, r.Header.Get("Authorization"))
			h.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"host":%q}`, r.Host)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *specHost) auths() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.calls...)
}

// originSpec is a spec whose servers are given by servers (a JSON array,
// or "" for none): its base URL comes from where it was fetched.
func originSpec(servers string) string {
	s := `{"openapi":"3.0.3","info":{"title":"t","version":"1"},`
	if servers != "" {
		s += `"servers":` + servers + `,`
	}
	return s + `"paths":{"/whoami":{"get":{"operationId":"whoami","responses":{"200":{"description":"ok"}}}}}}`
}

// TestCredentialsGoToTheLoadedOrigin: the spec cache is keyed by the
// spec's bytes, and nothing derived from where a spec was fetched comes
// out of it. The same spec served from two addresses, loaded one after the
// other through one cache (and by two APIs of one client), sends each
// API's calls and credential to the address it was loaded from.
func TestCredentialsGoToTheLoadedOrigin(t *testing.T) {
	for _, tc := range []struct{ name, servers, prefix string }{
		{"no servers", "", ""},
		{"relative server", `[{"url":"/api/v1"}]`, "/api/v1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := originSpec(tc.servers)
			first, second := newSpecHost(t, spec), newSpecHost(t, spec)
			cache := openapi.NewCache(t.TempDir(), "test", nil)

			open := func(apis ...APIConfig) *Client {
				t.Helper()
				c, err := open(context.Background(), Config{APIs: apis}, testSources{cache: cache})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(c.Close)
				return c
			}
			whoami := func(c *Client, api string) {
				t.Helper()
				var id uint32
				for _, a := range c.Manifest().APIs {
					if a.Name == api {
						id = a.Functions[0].ID
					}
				}
				r := c.Session(nil).Call(context.Background(), id, json.RawMessage(`[]`))
				if r.Fail != sdkcall.OK {
					t.Fatalf("sdk.%s.whoami: %s", api, r.Message)
				}
			}

			// The first load fills the cache; the second reads it.
			whoami(open(APIConfig{Name: "a", Spec: first.srv.URL + "/spec.json", Auth: &Credential{Token: "token-for-first"}}), "a")
			whoami(open(APIConfig{Name: "a", Spec: second.srv.URL + "/spec.json", Auth: &Credential{Token: "token-for-second"}}), "a")
			if got := first.auths(); len(got) != 1 || got[0] != "Bearer token-for-first" {
				t.Errorf("the first address got %q, want one call with its own token", got)
			}
			if got := second.auths(); len(got) != 1 || got[0] != "Bearer token-for-second" {
				t.Errorf("the second address got %q, want one call with its own token", got)
			}

			// Two APIs of one client share the spec's bytes (and so its
			// cache entry), each from its own address.
			both := open(
				APIConfig{Name: "a", Spec: first.srv.URL + "/spec.json", Auth: &Credential{Token: "token-a"}},
				APIConfig{Name: "b", Spec: second.srv.URL + "/spec.json", Auth: &Credential{Token: "token-b"}},
			)
			whoami(both, "b")
			whoami(both, "a")
			if got := first.auths(); len(got) != 2 || got[1] != "Bearer token-a" {
				t.Errorf("the first address got %q, want API a's call with token-a", got)
			}
			if got := second.auths(); len(got) != 2 || got[1] != "Bearer token-b" {
				t.Errorf("the second address got %q, want API b's call with token-b", got)
			}
			for _, api := range both.catalog.APIs {
				want := first.srv.URL + tc.prefix
				if api.Name == "b" {
					want = second.srv.URL + tc.prefix
				}
				if api.BaseURL != want {
					t.Errorf("API %s: base URL %q, want %q", api.Name, api.BaseURL, want)
				}
			}
		})
	}
}
