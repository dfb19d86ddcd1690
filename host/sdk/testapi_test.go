package sdk

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/contract/sdkcall"
	"github.com/toolscript/toolscript/host/sdk/openapi/openapitest"
	"github.com/toolscript/toolscript/internal/testapi"
)

// testAPI is internal/testapi's server as these tests name its parts.
type testAPI struct {
	srv                   *httptest.Server
	requests              *atomic.Int64
	slowStarted, slowDone chan struct{}
}

type echo = testapi.Echo

func newTestAPI(t testing.TB) *testAPI {
	s := testapi.New(t)
	return &testAPI{srv: s.HTTP, requests: &s.Requests, slowStarted: s.SlowStarted, slowDone: s.SlowDone}
}

// loadTestAPI loads internal/testapi's spec as API name.
func loadTestAPI(t testing.TB, name string) *catalog.API {
	t.Helper()
	return openapitest.Load(t, name, testapi.SpecPath())
}

// newClient makes a client of the test API (as "pets") with cfg.
func newClient(t testing.TB, a *testAPI, cfg Config, apiCfg APIConfig) *Client {
	t.Helper()
	apiCfg.Name = "pets"
	if apiCfg.BaseURL == "" {
		apiCfg.BaseURL = a.srv.URL
	}
	cfg.APIs = append([]APIConfig{apiCfg}, cfg.APIs...)
	return clientOf(t, cfg, loadTestAPI(t, "pets"))
}

// clientOf makes a client of apis with cfg, closed when the test ends.
func clientOf(t testing.TB, cfg Config, apis ...*catalog.API) *Client {
	t.Helper()
	c, err := New(&catalog.Catalog{APIs: apis}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// call calls sdk.pets.<name> with args (a JSON array).
func call(t testing.TB, s *Session, name, args string) *sdkcall.Response {
	t.Helper()
	return s.Call(context.Background(), fnID(t, s.c, name), json.RawMessage(args))
}

func fnID(t testing.TB, c *Client, name string) uint32 {
	t.Helper()
	for _, api := range c.Manifest().APIs {
		for _, f := range api.Functions {
			if f.Name == name {
				return f.ID
			}
		}
	}
	t.Fatalf("no function %s", name)
	return 0
}

// echoed decodes an echo endpoint's answer.
func echoed(t testing.TB, r *sdkcall.Response) echo {
	t.Helper()
	if r.Fail != sdkcall.OK {
		t.Fatalf("call failed: %d %s", r.Fail, r.Message)
	}
	var e echo
	if err := json.Unmarshal(r.JSON, &e); err != nil {
		t.Fatalf("echo: %v (%s)", err, r.JSON)
	}
	return e
}
