package hosted_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/serve/hosted"
)

func TestParseOrigins(t *testing.T) {
	o, err := hosted.ParseOrigins([]string{"https://App.Example.com", "http://localhost:3000", "https://b.example.com:443", "http://[::1]:8080/"})
	if err != nil {
		t.Fatal(err)
	}
	for origin, want := range map[string]bool{
		"https://app.example.com":          true,
		"https://APP.example.com:443":      true,
		"http://app.example.com":           false, // another scheme is another origin
		"https://app.example.com:8443":     false,
		"http://localhost:3000":            true,
		"http://localhost":                 false,
		"https://b.example.com":            true,
		"http://[::1]:8080":                true,
		"null":                             false,
		"":                                 false,
		"https://evil.example.com":         false,
		"https://app.example.com.evil.com": false,
		"https://user@app.example.com":     false,
		"https://" + strings.Repeat("a", 2000) + ".com": false,
	} {
		if got := o.Allowed(origin); got != want {
			t.Errorf("Allowed(%q) = %v, want %v", origin, got, want)
		}
	}
	for _, bad := range []string{"app.example.com", "https://app.example.com/path", "ftp://x.example.com", "https://", "https://a.example.com?x=1", "*"} {
		if _, err := hosted.ParseOrigins([]string{bad}); err == nil {
			t.Errorf("ParseOrigins(%q): no error", bad)
		}
	}
	var none *hosted.Origins
	if none.Allowed("https://app.example.com") {
		t.Error("a nil Origins allows an origin")
	}
}

// TestOriginCheck: a browser's request from an origin not allowed gets 403
// before authentication; an allowed origin passes, with CORS headers, and
// its preflight is answered; a request without Origin is not concerned.
func TestOriginCheck(t *testing.T) {
	h, err := hosted.New(hosted.Config{MCP: mcpHandler(), MaxBodyBytes: 1 << 20, AllowedOrigins: []string{"https://app.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	send := func(method, origin string, header map[string]string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+hosted.PathMCP, strings.NewReader(callWhoami))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := send(http.MethodPost, "https://evil.example.com", nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("another origin: status %d, want 403", resp.StatusCode)
	}
	if resp := send(http.MethodPost, "null", nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("origin null: status %d, want 403", resp.StatusCode)
	}
	resp := send(http.MethodPost, "https://app.example.com", nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example.com" ||
		!strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "Mcp-Session-Id") {
		t.Errorf("allowed origin: status %d, headers %v", resp.StatusCode, resp.Header)
	}
	resp = send(http.MethodOptions, "https://app.example.com", map[string]string{
		"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization, content-type, mcp-session-id"})
	if resp.StatusCode != http.StatusNoContent || !strings.Contains(resp.Header.Get("Access-Control-Allow-Methods"), "POST") ||
		resp.Header.Get("Access-Control-Allow-Headers") != "authorization, content-type, mcp-session-id" {
		t.Errorf("preflight: status %d, headers %v", resp.StatusCode, resp.Header)
	}
	if resp := send(http.MethodPost, "", nil); resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("no origin: status %d, headers %v", resp.StatusCode, resp.Header)
	}
	if _, err := hosted.New(hosted.Config{MCP: mcpHandler(), MaxBodyBytes: 1, AllowedOrigins: []string{"nope"}}); err == nil {
		t.Error("New accepted a bad origin")
	}
}
