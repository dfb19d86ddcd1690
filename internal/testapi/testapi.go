// Package testapi is a real HTTP API for tests, and the OpenAPI spec that
// describes it (testapi.yaml): pets with pagination headers, 201, 204, 404
// and 500 responses, form and multipart endpoints, a slow endpoint, one that
// answers after a delay, redirects, and endpoints that echo the request
// they got (headers included, for the credential tests).
package testapi

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// SpecPath is the path of testapi.yaml.
func SpecPath() string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "testapi.yaml")
}

// Server is a real HTTP server answering testdata/testapi.yaml: pets with
// pagination headers, 201/204/404/500, form and multipart endpoints, a
// slow endpoint, redirects, and endpoints that echo the request they got.
type Server struct {
	// HTTP is the API's server; URL is its address.
	HTTP *httptest.Server
	URL  string
	// other is another origin, where redirects to steal a request go.
	other *httptest.Server
	// Requests counts the requests either origin received.
	Requests atomic.Int64
	// SlowStarted receives once per /slow request, when it has arrived;
	// SlowDone when the server saw the client give up.
	SlowStarted, SlowDone chan struct{}
	// delays counts the /delay requests being answered; DelayPeak is the
	// most there were at once (how concurrent a script's calls were, seen
	// at the server rather than on a clock).
	delays, DelayPeak atomic.Int64
}

// Echo is what the echo endpoints answer.
type Echo struct {
	Method  string              `json:"method"`
	Path    string              `json:"path"`
	Query   string              `json:"query"`
	Headers map[string]string   `json:"headers"`
	Body    string              `json:"body"`
	Form    map[string][]string `json:"form,omitempty"`
	Files   map[string]string   `json:"files,omitempty"`
	// FilesHex and BodyHex are the bytes of the files and of the body in
	// hexadecimal (JSON cannot carry bytes that are not UTF-8).
	FilesHex map[string]string `json:"files_hex,omitempty"`
	BodyHex  string            `json:"body_hex,omitempty"`
	FileType map[string]string `json:"file_types,omitempty"`
}

// New starts the test API; it stops when the test ends.
func New(t testing.TB) *Server {
	a := &Server{SlowStarted: make(chan struct{}, 16), SlowDone: make(chan struct{}, 16)}
	a.other = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.Requests.Add(1)
		w.Write([]byte(`{"origin":"other"}`))
	}))
	a.HTTP = httptest.NewServer(http.HandlerFunc(a.serve))
	a.URL = a.HTTP.URL
	t.Cleanup(func() { a.HTTP.Close(); a.other.Close() })
	return a
}

func (a *Server) serve(w http.ResponseWriter, r *http.Request) {
	a.Requests.Add(1)
	path := r.URL.Path
	switch {
	case path == "/pets" || strings.HasPrefix(path, "/pets/"):
		a.pets(w, r)
	case strings.HasPrefix(path, "/echo") || path == "/form" || path == "/upload" || path == "/public" || strings.HasPrefix(path, "/tenants/"):
		if e, ok := echo(w, r); ok {
			writeJSON(w, 200, e)
		}
	case strings.HasPrefix(path, "/delay/"):
		ms, _ := strconv.Atoi(strings.TrimPrefix(path, "/delay/"))
		if a.delay(r, time.Duration(ms)*time.Millisecond) {
			n, _ := strconv.Atoi(r.URL.Query().Get("n"))
			writeJSON(w, 200, map[string]any{"ms": ms, "n": n})
		}
	case path == "/slow":
		a.SlowStarted <- struct{}{}
		<-r.Context().Done()
		a.SlowDone <- struct{}{}
	case path == "/big":
		big(w, r)
	case path == "/text":
		w.Header().Set("Content-Type", "text/plain; charset=latin1")
		w.Write([]byte("caf\xe9\x00end"))
	case path == "/fail":
		w.WriteHeader(500)
	case path == "/redirect":
		a.redirect(w, r)
	default:
		http.NotFound(w, r)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// pets serves /pets (a page of pets, or a new one) and /pets/{id}.
func (a *Server) pets(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	switch {
	case path == "/pets" && r.Method == "GET":
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		if page == 0 {
			page = 1
		}
		w.Header().Set("Link", fmt.Sprintf(`<%s/pets?page=%d>; rel="next"`, a.URL, page+1))
		w.Header().Set("X-RateLimit-Remaining", "42")
		w.Header().Set("ETag", `"v1"`)
		writeJSON(w, 200, []map[string]any{{"id": page*10 + 1, "name": "Rex", "tag": nil}, {"id": page*10 + 2, "name": "Tom"}})
	case path == "/pets" && r.Method == "POST":
		var pet map[string]any
		json.NewDecoder(r.Body).Decode(&pet)
		pet["id"] = 9007199254740991
		writeJSON(w, 201, pet)
	case path == "/pets":
		http.NotFound(w, r)
	default:
		id := strings.TrimPrefix(path, "/pets/")
		switch {
		case r.Method == "DELETE":
			w.WriteHeader(204)
		case id == "404":
			writeJSON(w, 404, map[string]any{"message": "no pet 404"})
		case id == "500":
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(500)
			w.Write([]byte("database on fire"))
		default:
			n, _ := strconv.Atoi(id)
			writeJSON(w, 200, map[string]any{"id": n, "name": "Rex"})
		}
	}
}

// big serves n bytes of text, with a Content-Length unless chunked.
func big(w http.ResponseWriter, r *http.Request) {
	n, _ := strconv.Atoi(r.URL.Query().Get("n"))
	if r.URL.Query().Get("chunked") != "true" {
		w.Header().Set("Content-Length", strconv.Itoa(n))
	}
	w.Header().Set("Content-Type", "text/plain")
	chunk := []byte(strings.Repeat("x", 4096))
	for n > 0 {
		k := min(n, len(chunk))
		if _, err := w.Write(chunk[:k]); err != nil {
			return
		}
		w.(http.Flusher).Flush()
		n -= k
	}
}

// redirect redirects times times, then to the other origin or to /echo.
func (a *Server) redirect(w http.ResponseWriter, r *http.Request) {
	times, _ := strconv.Atoi(r.URL.Query().Get("times"))
	to := r.URL.Query().Get("to")
	switch {
	case times > 0:
		http.Redirect(w, r, fmt.Sprintf("/redirect?to=%s&times=%d", to, times-1), http.StatusFound)
	case to == "other":
		http.Redirect(w, r, a.other.URL+"/stolen", http.StatusFound)
	default:
		http.Redirect(w, r, "/echo/landed", http.StatusFound)
	}
}

// echo describes the request r as an Echo; false when its form cannot be
// read (w has the error then).
func echo(w http.ResponseWriter, r *http.Request) (Echo, bool) {
	e := Echo{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery, Headers: map[string]string{}}
	for k, v := range r.Header {
		e.Headers[strings.ToLower(k)] = strings.Join(v, ", ")
	}
	switch {
	case strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/"):
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			http.Error(w, err.Error(), 400)
			return e, false
		}
		e.Form = r.MultipartForm.Value
		e.Files, e.FileType, e.FilesHex = map[string]string{}, map[string]string{}, map[string]string{}
		for name, fhs := range r.MultipartForm.File {
			f, _ := fhs[0].Open()
			data, _ := io.ReadAll(f)
			e.Files[name] = string(data)
			e.FilesHex[name] = hex.EncodeToString(data)
			e.FileType[name] = fhs[0].Header.Get("Content-Type")
		}
	case r.Header.Get("Content-Type") == "application/x-www-form-urlencoded":
		data, _ := io.ReadAll(r.Body)
		e.Form, _ = url.ParseQuery(string(data))
		e.Body, e.BodyHex = string(data), hex.EncodeToString(data)
	default:
		data, _ := io.ReadAll(r.Body)
		e.Body = string(data)
		if len(data) > 0 {
			e.BodyHex = hex.EncodeToString(data)
		}
	}
	return e, true
}

// delay waits d, counting the requests waiting at once (DelayPeak); false
// when the request ends first.
func (a *Server) delay(r *http.Request, d time.Duration) bool {
	now := a.delays.Add(1)
	defer a.delays.Add(-1)
	for {
		peak := a.DelayPeak.Load()
		if now <= peak || a.DelayPeak.CompareAndSwap(peak, now) {
			break
		}
	}
	select {
	case <-time.After(d):
		return true
	case <-r.Context().Done():
		return false
	}
}
