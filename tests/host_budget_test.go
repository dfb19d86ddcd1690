package tests

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/internal/testapi"
	"github.com/toolscript/toolscript/internal/testconfig"
	"github.com/toolscript/toolscript/internal/testupstreams"
)

// The host memory budgets through `toolscript run`: a response the host
// cannot hold for the script fails with kind limit, naming the function
// and the setting, and so do headers past max_response_bytes.

func TestHostBudgetRun(t *testing.T) {
	api := testapi.New(t)
	// 9 MB of headers, then a short body.
	headers := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		value := strings.Repeat("h", 8000)
		for i := range 9 << 20 / 8000 {
			w.Header()["X-Pad-"+strconv.Itoa(i)] = []string{value}
		}
		w.Write([]byte("body"))
	}))
	defer headers.Close()
	for _, c := range []struct {
		name, config, source string
		message              []string // in the error's message
	}{
		{"larger than max_host_bytes", "[limits]\nmax_host_bytes = 1000000\n", `return #sdk.big({n = 2000000})`,
			[]string{"sdk.pets.big: the response needs 2000", "more than max_host_bytes (1000000 bytes"}},
		{"larger than max_host_bytes, chunked", "[limits]\nmax_host_bytes = 1000000\n", `return #sdk.big({n = 2000000, chunked = true})`,
			[]string{"sdk.pets.big: the response needs at least 1", "bytes of host memory, more than max_host_bytes (1000000 bytes, what one execution's sdk calls may hold at once; [limits] max_host_bytes)"}},
		{"larger than max_host_bytes_total", "[limits]\nmax_host_bytes_total = 1000000\n", `return #sdk.big({n = 2000000})`,
			[]string{"sdk.pets.big: the response needs 2000", "more than max_host_bytes_total (1000000 bytes, what all executions' sdk calls may hold at once; [limits] max_host_bytes_total)"}},
		{"9 MB of headers", "[sdk]\nmax_response_bytes = 1000000\n", `return sdk.big({n = 1})`,
			[]string{"sdk.pets.big: the response's headers are larger than 1000000 bytes (headers count toward max_response_bytes"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			url := api.URL
			if strings.Contains(c.name, "headers") {
				url = headers.URL
			}
			dir := t.TempDir()
			config := c.config + "\n[apis.pets]\nspec = " + testconfig.Quote(testapi.SpecPath()) + "\nbase_url = " + testconfig.Quote(url) + "\n"
			res, stderr := runUpstreamScript(t, c.source, config, []string{"XDG_CACHE_HOME=" + dir})
			if res.Error == nil || res.Error.Kind != "limit" {
				t.Fatalf("result %s, error %+v, want kind limit\nstderr %s", res.Value, res.Error, stderr)
			}
			for _, m := range c.message {
				if !strings.Contains(res.Error.Message, m) {
					t.Errorf("message %q, want %q in it", res.Error.Message, m)
				}
			}
		})
	}
	// Within the budget, the same call succeeds.
	config := "[limits]\nmax_host_bytes = 3000000\n[apis.pets]\nspec = " + testconfig.Quote(testapi.SpecPath()) + "\nbase_url = " + testconfig.Quote(api.URL) + "\n"
	if res, stderr := runUpstreamScript(t, `return #sdk.big({n = 2000000})`, config, []string{"XDG_CACHE_HOME=" + t.TempDir()}); res.Error != nil || string(res.Value) != "2000000" {
		t.Errorf("result %s, error %+v\nstderr %s", res.Value, res.Error, stderr)
	}
}

// TestHostBudgetToolResult: an upstream MCP tool's result counts too.
func TestHostBudgetToolResult(t *testing.T) {
	py := "--mcp=py=" + testupstreams.Shell(testupstreams.Python(t))
	res, stderr := runUpstreamScript(t, `return #sdk.py.big({size = 2000000})`, "[limits]\nmax_host_bytes = 1000000\n", nil, py)
	want := "sdk.py.big: the result needs 2000000 bytes of host memory, more than max_host_bytes (1000000 bytes"
	if res.Error == nil || res.Error.Kind != "limit" || !strings.Contains(res.Error.Message, want) {
		t.Errorf("result %s, error %+v, want kind limit and %q\nstderr %s", res.Value, res.Error, want, stderr)
	}
	res, stderr = runUpstreamScript(t, `return #sdk.py.big({size = 2000000})`, "[limits]\nmax_host_bytes = 3000000\n", nil, py)
	if res.Error != nil || string(res.Value) != "2000000" {
		t.Errorf("result %s, error %+v\nstderr %s", res.Value, res.Error, stderr)
	}
}

// TestHostBudgetNestedParallel: responses an outer parallel has completed
// while an inner parallel runs (the script cannot take them before the
// inner one returns) do not hold up the inner one's calls, even when they
// fill max_host_bytes. The API orders the responses so: the outer call's
// headers come at once (its bytes are held from then on), the rest of it
// once the inner call has arrived, and the inner call's response after
// it.
func TestHostBudgetNestedParallel(t *testing.T) {
	innerArrived, outerSent := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		body := []byte(strings.Repeat("x", n))
		w.Header().Set("Content-Length", strconv.Itoa(n))
		switch n {
		case 600_000: // the outer call: its headers at once, the rest once the inner call has come
			w.Write(body[:1])
			w.(http.Flusher).Flush()
			body = body[1:]
			select {
			case <-innerArrived:
			case <-r.Context().Done():
				return
			}
			defer close(outerSent)
		case 600_002: // the inner call
			close(innerArrived)
			select {
			case <-outerSent:
			case <-r.Context().Done():
				return
			}
		}
		w.Write(body)
	}))
	defer srv.Close()
	source := `local r = parallel({
  function() return #sdk.big({n = 600000}) end,
  function()
    local first = #sdk.big({n = 1000})
    local inner = parallel({function() return #sdk.big({n = 600002}) end})
    return first + inner[1]
  end,
})
return r[1] + r[2]`
	config := "[limits]\nmax_host_bytes = 1000000\n[apis.pets]\nspec = " + testconfig.Quote(testapi.SpecPath()) +
		"\nbase_url = " + testconfig.Quote(srv.URL) + "\ntimeout = \"5s\"\n"
	res, stderr := runUpstreamScript(t, source, config, []string{"XDG_CACHE_HOME=" + t.TempDir()})
	if res.Error != nil || string(res.Value) != "1201002" {
		t.Errorf("result %s, error %+v\nstderr %s", res.Value, res.Error, stderr)
	}
}
