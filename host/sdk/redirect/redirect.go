// Package redirect owns the one redirect policy of the HTTP clients that
// carry toolscript's credentials: a script's OpenAPI calls (host/sdk) and
// the connections to MCP servers over streamable HTTP (host/sdk/upstream). A
// redirect is followed only to the origin (scheme, host and port) of the
// first request, at most Max times, and no request carries a Referer: a
// server cannot send the credentials, headers or body of a request, or its
// URL's query, anywhere else.
package redirect

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Max is how many same-origin redirects one request follows.
const Max = 5

// Check is an http.Client's CheckRedirect: it removes the Referer header
// net/http adds to the next request (which holds the previous URL, query
// and all), and returns an error saying why the redirect to req is not
// followed, nil when it is. With Check as the policy, the client's request
// fails with that error; a caller that wants the redirect response itself
// maps the error to http.ErrUseLastResponse.
func Check(req *http.Request, via []*http.Request) error {
	req.Header.Del("Referer")
	first := via[0].URL
	if !sameOrigin(req.URL, first) {
		return fmt.Errorf("redirected to another origin (%s://%s): toolscript follows redirects only within the origin of the request (%s://%s)",
			req.URL.Scheme, req.URL.Host, first.Scheme, first.Host)
	}
	if len(via) > Max {
		return fmt.Errorf("stopped after %d redirects", Max)
	}
	return nil
}

// sameOrigin reports whether two URLs' schemes and hosts (with their
// ports) name one origin. A host is compared without regard to case; an
// omitted default port is a different origin, which refuses more, never
// less.
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Host, b.Host)
}
