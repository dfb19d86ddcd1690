package hosted

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/toolscript/toolscript/host/serve/accesslog"
)

// Origins are the web origins whose pages may call /mcp from a browser
// (--allowed-origins). The MCP transport rules against DNS rebinding say a
// request whose Origin header is present and not allowed gets 403; clients
// that are not browsers send no Origin and are not concerned.
type Origins struct {
	allowed map[string]bool
}

// ParseOrigins checks and normalises origins such as
// "https://app.example.com" or "http://localhost:3000": a scheme (http or
// https) and a host, an optional port, nothing else.
func ParseOrigins(origins []string) (*Origins, error) {
	o := &Origins{allowed: map[string]bool{}}
	for _, s := range origins {
		n, ok := normalizeOrigin(s)
		if !ok {
			return nil, fmt.Errorf("allowed origin %q: want scheme://host[:port], such as https://app.example.com, with no path", s)
		}
		o.allowed[n] = true
	}
	return o, nil
}

// Allowed tells whether a request's Origin header value is allowed.
func (o *Origins) Allowed(origin string) bool {
	n, ok := normalizeOrigin(origin)
	return ok && o != nil && o.allowed[n]
}

// maxOriginBytes bounds an origin: no browser sends a longer one.
const maxOriginBytes = 1024

// normalizeOrigin returns an origin in the form browsers send it, with the
// scheme and host in lower case and the default port left out. Browsers
// send printable ASCII only (names in punycode): nothing else is an origin.
func normalizeOrigin(s string) (string, bool) {
	if len(s) > maxOriginBytes {
		return "", false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return "", false
		}
	}
	u, err := url.Parse(s)
	if err != nil || u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" ||
		(u.Path != "" && u.Path != "/") || u.Host == "" {
		return "", false
	}
	scheme := strings.ToLower(u.Scheme)
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if strings.Contains(host, ":") {
		if net.ParseIP(host) == nil || !strings.HasPrefix(u.Host, "[") {
			return "", false // "http://::": an IPv6 address needs brackets
		}
	} else if host == "" || strings.Trim(host, "abcdefghijklmnopqrstuvwxyz0123456789.-_") != "" {
		return "", false // "https://:", "http://%80": a name is letters, digits, dots and hyphens (punycode)
	}
	switch {
	case scheme == "https" && port == "443", scheme == "http" && port == "80":
		port = ""
	case scheme != "https" && scheme != "http":
		return "", false
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host, true
}

// The CORS headers of responses to allowed origins.
const (
	corsAllowMethods  = "GET, POST, DELETE"
	corsExposeHeaders = "Mcp-Session-Id, WWW-Authenticate, Retry-After"
	corsMaxAge        = "600"
	// maxRequestHeaders bounds the Access-Control-Request-Headers echoed.
	maxRequestHeaders = 1024
)

// originChecked refuses requests from browsers on origins not allowed
// (403), answers the CORS preflight of allowed ones, and adds the CORS
// headers to their responses. A request without Origin passes unchanged.
func originChecked(o *Origins, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" {
			next.ServeHTTP(w, r)
			return
		}
		if !o.Allowed(origin) {
			accesslog.FromContext(r.Context()).SetOutcome("origin_refused", "")
			http.Error(w, "Forbidden: this origin may not call the server (--allowed-origins)", http.StatusForbidden)
			return
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Add("Vary", "Origin")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", corsAllowMethods)
			if req := r.Header.Get("Access-Control-Request-Headers"); req != "" && len(req) <= maxRequestHeaders {
				h.Set("Access-Control-Allow-Headers", req)
			}
			h.Set("Access-Control-Max-Age", corsMaxAge)
			w.WriteHeader(http.StatusNoContent)
			return
		}
		h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
		next.ServeHTTP(w, r)
	})
}
