//go:build unix

package upstream

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/toolscript/toolscript/host/contract/sdkcall"
	"github.com/toolscript/toolscript/internal/syncbuf"
)

// TestHTTPRedirects: a streamable HTTP server (pyserver behind a proxy)
// answers tools/call of say-hello with a 307. To another port, nothing
// reaches that port (not the headers, the URL's query or the body) and
// the call fails saying why; within the origin, the redirect is followed
// and the request carries no Referer (which would hold the URL's ?key=).
func TestHTTPRedirects(t *testing.T) {
	var mu sync.Mutex
	var collected []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		collected = append(collected, r.Method+" "+r.URL.String()+" "+r.Header.Get("X-Api-Key")+" "+string(body))
		mu.Unlock()
		w.WriteHeader(http.StatusTeapot)
	}))
	t.Cleanup(other.Close)
	var location string // where say-hello's calls are sent
	var referers []string
	addr := sayHelloProxy(t, func(w http.ResponseWriter, r *http.Request) bool {
		if moved, ok := strings.CutPrefix(r.URL.Path, "/moved"); ok {
			mu.Lock()
			referers = append(referers, r.Header.Get("Referer"))
			mu.Unlock()
			r.URL.Path = moved
			return false
		}
		w.Header().Set("Location", location)
		w.WriteHeader(http.StatusTemporaryRedirect)
		return true
	})
	front, err := url.Parse(addr)
	if err != nil {
		t.Fatal(err)
	}
	origin := front.Scheme + "://" + front.Host
	cfg := Config{Name: "py", URL: addr + "?key=s3cret",
		Headers: map[string]string{"Authorization": "Bearer tok3n", "X-Api-Key": "ap1key"}}
	set := start(t, Options{Stderr: &syncbuf.Buffer{}}, cfg)
	ctx := context.Background()
	for _, tc := range []struct {
		name, location string
		wantFail       sdkcall.Failure
		want           string
		wantReferers   int
	}{
		{"another port", other.URL + "/collect", sdkcall.Upstream, "redirected to another origin (" + other.URL + ")", 0},
		{"same origin", origin + "/moved" + front.Path + "?key=s3cret", sdkcall.OK, "Hello, A!", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			location, referers, collected = tc.location, nil, nil
			mu.Unlock()
			r := call(ctx, t, set, "py", "say-hello", `[{"name":"A"}]`)
			got := r.Message
			if r.Fail == sdkcall.OK {
				got = string(r.Text)
			}
			if r.Fail != tc.wantFail || !strings.Contains(got, tc.want) {
				t.Errorf("the call: %+v; want %v saying %q", r, tc.wantFail, tc.want)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(collected) > 0 {
				t.Errorf("the other port received %q", collected)
			}
			if len(referers) != tc.wantReferers {
				t.Errorf("%d redirected requests reached the origin, want %d", len(referers), tc.wantReferers)
			}
			for _, ref := range referers {
				if ref != "" {
					t.Errorf("a redirected request carried Referer %q", ref)
				}
			}
		})
	}
}
