package redirect

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestCheck: a real client with Check as its policy, against real
// servers: a redirect within the origin is followed without a Referer
// (the first URL's query stays home), one to another port fails and the
// other port receives nothing, and a loop stops after Max redirects.
func TestCheck(t *testing.T) {
	var mu sync.Mutex
	elsewhere := 0
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		mu.Lock()
		elsewhere++
		mu.Unlock()
	}))
	defer other.Close()
	var referers []string
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		referers = append(referers, r.Header.Get("Referer"))
		mu.Unlock()
		switch r.URL.Path {
		case "/here":
			http.Redirect(w, r, "/landed", http.StatusTemporaryRedirect)
		case "/away":
			http.Redirect(w, r, other.URL+"/collect", http.StatusTemporaryRedirect)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		default:
			_, _ = io.WriteString(w, "landed")
		}
	}))
	defer origin.Close()
	client := &http.Client{CheckRedirect: Check}
	for _, tc := range []struct {
		path, wantErr string
		wantHits      int
	}{
		{"/here?key=s3cret", "", 2},
		{"/away?key=s3cret", "redirected to another origin (" + other.URL + ")", 1},
		{"/loop?key=s3cret", "stopped after 5 redirects", Max + 1},
	} {
		t.Run(tc.path, func(t *testing.T) {
			referers = nil
			resp, err := client.Post(origin.URL+tc.path, "application/json", strings.NewReader(`{"secret":1}`))
			if resp != nil {
				resp.Body.Close()
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("a same-origin redirect: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(referers) != tc.wantHits {
				t.Errorf("the origin got %d requests, want %d", len(referers), tc.wantHits)
			}
			for _, r := range referers {
				if r != "" {
					t.Errorf("a request carried Referer %q", r)
				}
			}
			if elsewhere != 0 {
				t.Errorf("the other port got %d requests", elsewhere)
			}
		})
	}
}

// TestCheckAsLastResponse: mapped to http.ErrUseLastResponse (as the sdk
// does), a refused redirect is the 3xx response itself.
func TestCheckAsLastResponse(t *testing.T) {
	origin := httptest.NewServer(http.RedirectHandler("http://example.invalid/x", http.StatusFound))
	defer origin.Close()
	client := &http.Client{CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if err := Check(req, via); err != nil {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	resp, err := client.Get(origin.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Errorf("status %d, want 302", resp.StatusCode)
	}
}
