package sdk

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// plainBase parses a base URL that requests can be addressed from without
// parsing each of them: http(s)://host[:port][/path] in its canonical form,
// with nothing else. Any other base gives nil, and its requests' URLs are
// parsed whole (as http.NewRequest does).
func plainBase(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.HasSuffix(u.Host, ":") ||
		u.Opaque != "" || u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" ||
		!plainPath(u.EscapedPath()) || u.String() != s {
		return nil
	}
	return u
}

// plainPath reports whether p is an escaped path that url.Parse would take
// as it is: unreserved and sub-delimiter characters, ':', '@', '/' and
// well-formed percent escapes only.
func plainPath(p string) bool {
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case unreserved(c) || strings.IndexByte("!$&'()*+,;=:@/", c) >= 0:
		case c == '%' && i+2 < len(p) && isHex(p[i+1]) && isHex(p[i+2]):
			i += 2
		default:
			return false
		}
	}
	return true
}

// plainQuery reports whether url.Parse would take q as the whole query:
// no fragment and no control characters.
func plainQuery(q string) bool {
	for i := 0; i < len(q); i++ {
		if c := q[i]; c < 0x20 || c == 0x7f || c == '#' {
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// newRequest makes the request for path (escaped, the parameters
// expanded) and query (encoded) with body data (nil for none). With a
// plain base and a plain path the URL is assembled from its parts rather
// than parsed: the same URL, without parsing it on every call. The
// request has no context yet: send gives it the call's.
func (st *apiState) newRequest(method, path, query string, data []byte) (*http.Request, error) {
	if st.base != nil && (path == "" || path[0] == '/') && plainPath(path) && plainQuery(query) {
		raw := st.base.EscapedPath() + path
		if decoded, err := url.PathUnescape(raw); err == nil {
			u := &url.URL{Scheme: st.base.Scheme, Host: st.base.Host, Path: decoded, RawPath: raw, RawQuery: query}
			req := &http.Request{
				Method: method, URL: u, Host: u.Host, Header: make(http.Header, 4),
				Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			}
			if data != nil {
				setBody(req, data)
			}
			return req, nil
		}
	}
	target := st.baseURL + path
	if query != "" {
		target += "?" + query
	}
	var body io.Reader
	if data != nil {
		body = bytes.NewReader(data)
	}
	return http.NewRequest(method, target, body)
}

// setBody gives req the body data as http.NewRequest does a bytes.Reader:
// its length, and GetBody for redirects.
func setBody(req *http.Request, data []byte) {
	req.ContentLength = int64(len(data))
	if len(data) == 0 {
		req.Body = http.NoBody
		req.GetBody = func() (io.ReadCloser, error) { return http.NoBody, nil }
		return
	}
	req.Body = io.NopCloser(bytes.NewReader(data))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
}
