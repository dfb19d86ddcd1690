// Package testecho is a real HTTP API for the credential tests, and the
// OpenAPI spec that describes it (testecho.yaml): like httpbin, it
// reflects the request it got (headers and query, credentials included)
// into JSON bodies whose strings it escapes in several ways (\/, \u00XX,
// upper case, UTF-16), into error pages (text, JSON, HTML character
// references, percent-encoding) that quote a padding parameter first, and
// into a redirect's Location; and it serves bodies in every
// Content-Encoding (gzip, deflate with and without zlib's wrapper, br,
// zstd, stacked, unknown) and decompression bombs.
package testecho

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unicode/utf16"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
)

// SpecPath is the path of testecho.yaml.
func SpecPath() string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "testecho.yaml")
}

// Server is the echo API.
type Server struct {
	HTTP *httptest.Server
	URL  string
	// Requests counts the requests it received.
	Requests atomic.Int64
	// AcceptEncoding is the Accept-Encoding of the last request.
	AcceptEncoding atomic.Value

	bombs sync.Map // "coding/mb" -> []byte
}

// New starts the echo API; it stops when the test ends.
func New(t testing.TB) *Server {
	s := &Server{}
	s.HTTP = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.HTTP.URL
	t.Cleanup(s.HTTP.Close)
	return s
}

// request is what the server reflects: the query's parameters and the
// headers (lower-case names), and the URL.
type request struct {
	Args    map[string]string `json:"args"`
	Headers map[string]string `json:"headers"`
	URL     string            `json:"url"`
}

func reflect(r *http.Request) request {
	out := request{Args: map[string]string{}, Headers: map[string]string{}, URL: "http://" + r.Host + r.URL.RequestURI()}
	for k, v := range r.URL.Query() {
		out.Args[k] = strings.Join(v, ",")
	}
	for k, v := range r.Header {
		out.Headers[strings.ToLower(k)] = strings.Join(v, ", ")
	}
	return out
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.Requests.Add(1)
	s.AcceptEncoding.Store(r.Header.Get("Accept-Encoding"))
	q := r.URL.Query()
	switch path := r.URL.Path; {
	case path == "/anything":
		body := escapeJSON(reflect(r), q.Get("escape"))
		if q.Get("escape") == "utf16" {
			w.Header().Set("Content-Type", "application/json; charset=utf-16le")
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		w.Write(body)
	case strings.HasPrefix(path, "/status/"):
		code, err := strconv.Atoi(strings.TrimPrefix(path, "/status/"))
		if err != nil || code < 200 || code > 599 {
			code = 400
		}
		ct, body := errorPage(r, code, q.Get("pad"), q.Get("format"))
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(code)
		w.Write(body)
	case strings.HasPrefix(path, "/encoded/"):
		coding := strings.TrimPrefix(path, "/encoded/")
		body, _ := json.Marshal(reflect(r))
		data, header, err := encode(coding, body)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		status, _ := strconv.Atoi(q.Get("status"))
		if status == 0 {
			status = 200
		}
		w.Header().Set("Content-Type", "application/json")
		if header != "" {
			w.Header().Set("Content-Encoding", header)
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.WriteHeader(status)
		w.Write(data)
	case strings.HasPrefix(path, "/bomb/"):
		coding := strings.TrimPrefix(path, "/bomb/")
		mb, _ := strconv.Atoi(q.Get("mb"))
		key := fmt.Sprintf("%s/%d", coding, mb)
		v, ok := s.bombs.Load(key)
		if !ok {
			data, _, err := encode(coding, make([]byte, mb<<20))
			if err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			v, _ = s.bombs.LoadOrStore(key, data)
		}
		_, header, _ := encode(coding, nil)
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Encoding", header)
		w.Write(v.([]byte))
	case path == "/location":
		if q.Get("broken") == "true" { // same origin, but no URL: the client's error quotes it
			w.Header().Set("Location", "/landing%zz?"+r.URL.RawQuery)
			w.WriteHeader(http.StatusFound)
			return
		}
		w.Header().Set("Location", "http://other.invalid/landing?"+percentLower(r.URL.RawQuery, false))
		w.WriteHeader(http.StatusFound)
	default:
		http.NotFound(w, r)
	}
}

// escapeJSON writes v as JSON with its strings escaped by style: none,
// slash ("/" as "\/"), unicode (every character as \u00XX), upper (in
// upper case), utf16 (the JSON text in UTF-16LE).
func escapeJSON(v request, style string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	out := b.Bytes()
	switch style {
	case "slash":
		out = bytes.ReplaceAll(out, []byte("/"), []byte(`\/`))
	case "unicode":
		out = mapStrings(v, func(s string) string {
			var e strings.Builder
			for _, c := range s {
				fmt.Fprintf(&e, `\u%04x`, c)
			}
			return e.String()
		})
	case "upper":
		out = bytes.ToUpper(out)
	case "utf16":
		u := utf16.Encode([]rune(string(out)))
		out = make([]byte, 0, 2*len(u))
		for _, c := range u {
			out = append(out, byte(c), byte(c>>8))
		}
	}
	return out
}

// mapStrings writes v as JSON, each string (key or value) written by
// quote (what goes between the quotes), keys sorted.
func mapStrings(v request, quote func(string) string) []byte {
	var b bytes.Buffer
	obj := func(m map[string]string) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"%s":"%s"`, quote(k), quote(m[k]))
		}
		b.WriteByte('}')
	}
	b.WriteString(`{"args":`)
	obj(v.Args)
	b.WriteString(`,"headers":`)
	obj(v.Headers)
	fmt.Fprintf(&b, `,"url":"%s"}`, quote(v.URL))
	return b.Bytes()
}

// errorPage is an error page that quotes pad first, then the request's
// path, query (but pad and format) and headers, in format: text, json (escaped: every other
// character as \u00XX, "/" as "\/"), html (every other character as a
// character reference), percent (every other letter and every other
// character percent-encoded in lower case).
func errorPage(r *http.Request, code int, pad, format string) (string, []byte) {
	var b strings.Builder
	args := r.URL.Query()
	args.Del("pad")
	args.Del("format")
	fmt.Fprintf(&b, "%s\n%s %s?%s\n", pad, r.Method, r.URL.Path, args.Encode())
	keys := make([]string, 0, len(r.Header))
	for k := range r.Header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s: %s\n", k, strings.Join(r.Header[k], ", "))
	}
	text := b.String()
	head := fmt.Sprintf("error %d: ", code)
	switch format {
	case "json":
		var e strings.Builder
		for i, c := range text {
			switch {
			case c == '/':
				e.WriteString(`\/`)
			case i%2 == 1 || c < 0x20 || c == '"' || c == '\\':
				fmt.Fprintf(&e, `\u%04x`, c)
			default:
				e.WriteRune(c)
			}
		}
		return "application/json", []byte(`{"error":"` + head + e.String() + `"}`)
	case "html":
		var e strings.Builder
		for i, c := range text {
			if i%2 == 1 || c == '<' || c == '&' || c == '>' {
				fmt.Fprintf(&e, "&#x%x;", c)
			} else {
				e.WriteRune(c)
			}
		}
		return "text/html", []byte("<html><body><p>" + head + e.String() + "</p></body></html>")
	case "percent":
		return "text/plain", []byte(head + percentLower(text, true))
	}
	return "text/plain", []byte(head + text)
}

// percentLower percent-encodes s in lower-case hex: every character but
// letters and digits, and with alternate, every other letter too.
func percentLower(s string, alternate bool) string {
	var e strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		if alnum && !(alternate && i%2 == 1) {
			e.WriteByte(c)
		} else {
			fmt.Fprintf(&e, "%%%02x", c)
		}
	}
	return e.String()
}

// encode compresses body for a coding named in a path: the data and the
// Content-Encoding to send. raw-deflate is deflate without zlib's
// wrapper; compress is gzip's data under a name the host does not ask for;
// a list ("gzip,br") applies each in turn.
func encode(coding string, body []byte) ([]byte, string, error) {
	var header []string
	for c := range strings.SplitSeq(coding, ",") {
		var b bytes.Buffer
		var w io.WriteCloser
		name := c
		switch c {
		case "identity":
			header = append(header, c)
			continue
		case "gzip", "x-gzip", "compress":
			w, _ = gzip.NewWriterLevel(&b, gzip.BestSpeed)
		case "deflate":
			w, _ = zlib.NewWriterLevel(&b, zlib.BestSpeed)
		case "raw-deflate":
			w, _ = flate.NewWriter(&b, flate.BestSpeed)
			name = "deflate"
		case "br":
			w = brotli.NewWriterLevel(&b, 1)
		case "zstd":
			w, _ = zstd.NewWriter(&b, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithWindowSize(1<<20))
		default:
			return nil, "", fmt.Errorf("unknown coding %q", c)
		}
		if body != nil {
			w.Write(body)
		}
		w.Close()
		if body != nil {
			body = b.Bytes()
		}
		header = append(header, name)
	}
	return body, strings.Join(header, ", "), nil
}
