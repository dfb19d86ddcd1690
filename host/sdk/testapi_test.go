package sdk

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolscript/toolscript/host/catalog"
	"github.com/toolscript/toolscript/host/luau"
	"github.com/toolscript/toolscript/host/openapi"
)

// testAPI is a real HTTP server answering testdata/testapi.yaml: pets with
// pagination headers, 201/204/404/500, form and multipart endpoints, a
// slow endpoint, redirects, and endpoints that echo the request they got.
type testAPI struct {
	srv, other *httptest.Server
	requests   atomic.Int64
	// slowStarted receives once per /slow request, when it has arrived;
	// slowDone when the server saw the client give up.
	slowStarted, slowDone chan struct{}
}

// echo is what the echo endpoints answer.
type echo struct {
	Method   string              `json:"method"`
	Path     string              `json:"path"`
	Query    string              `json:"query"`
	Headers  map[string]string   `json:"headers"`
	Body     string              `json:"body"`
	Form     map[string][]string `json:"form,omitempty"`
	Files    map[string]string   `json:"files,omitempty"`
	FileType map[string]string   `json:"file_types,omitempty"`
}

func newTestAPI(t testing.TB) *testAPI {
	a := &testAPI{slowStarted: make(chan struct{}, 16), slowDone: make(chan struct{}, 16)}
	a.other = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.requests.Add(1)
		w.Write([]byte(`{"origin":"other"}`))
	}))
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(func() { a.srv.Close(); a.other.Close() })
	return a
}

func (a *testAPI) serve(w http.ResponseWriter, r *http.Request) {
	a.requests.Add(1)
	writeJSON := func(status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(v)
	}
	path := r.URL.Path
	switch {
	case path == "/pets" && r.Method == "GET":
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		if page == 0 {
			page = 1
		}
		w.Header().Set("Link", fmt.Sprintf(`<%s/pets?page=%d>; rel="next"`, a.srv.URL, page+1))
		w.Header().Set("X-RateLimit-Remaining", "42")
		w.Header().Set("ETag", `"v1"`)
		writeJSON(200, []map[string]any{{"id": page*10 + 1, "name": "Rex", "tag": nil}, {"id": page*10 + 2, "name": "Tom"}})
	case path == "/pets" && r.Method == "POST":
		var pet map[string]any
		json.NewDecoder(r.Body).Decode(&pet)
		pet["id"] = 9007199254740991
		writeJSON(201, pet)
	case strings.HasPrefix(path, "/pets/"):
		id := strings.TrimPrefix(path, "/pets/")
		switch {
		case r.Method == "DELETE":
			w.WriteHeader(204)
		case id == "404":
			writeJSON(404, map[string]any{"message": "no pet 404"})
		case id == "500":
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(500)
			w.Write([]byte("database on fire"))
		default:
			n, _ := strconv.Atoi(id)
			writeJSON(200, map[string]any{"id": n, "name": "Rex"})
		}
	case strings.HasPrefix(path, "/echo") || path == "/form" || path == "/upload" || path == "/public" || strings.HasPrefix(path, "/tenants/"):
		e := echo{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery, Headers: map[string]string{}}
		for k, v := range r.Header {
			e.Headers[strings.ToLower(k)] = strings.Join(v, ", ")
		}
		switch {
		case strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/"):
			if err := r.ParseMultipartForm(1 << 20); err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			e.Form = r.MultipartForm.Value
			e.Files, e.FileType = map[string]string{}, map[string]string{}
			for name, fhs := range r.MultipartForm.File {
				f, _ := fhs[0].Open()
				data, _ := io.ReadAll(f)
				e.Files[name] = string(data)
				e.FileType[name] = fhs[0].Header.Get("Content-Type")
			}
		case r.Header.Get("Content-Type") == "application/x-www-form-urlencoded":
			r.ParseForm()
			e.Form = r.PostForm
		default:
			data, _ := io.ReadAll(r.Body)
			e.Body = string(data)
		}
		writeJSON(200, e)
	case path == "/slow":
		a.slowStarted <- struct{}{}
		<-r.Context().Done()
		a.slowDone <- struct{}{}
	case path == "/big":
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
	case path == "/text":
		w.Header().Set("Content-Type", "text/plain; charset=latin1")
		w.Write([]byte("caf\xe9\x00end"))
	case path == "/fail":
		w.WriteHeader(500)
	case path == "/redirect":
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
	default:
		http.NotFound(w, r)
	}
}

// loadTestAPI loads testdata/testapi.yaml as API name.
func loadTestAPI(t testing.TB, name string) *catalog.API {
	t.Helper()
	api, err := openapi.Load(context.Background(), openapi.Source{Name: name, Spec: "testdata/testapi.yaml"}, openapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return api
}

// newClient makes a client of the test API (as "pets") with cfg.
func newClient(t testing.TB, a *testAPI, cfg Config, apiCfg APIConfig) *Client {
	t.Helper()
	apiCfg.Name = "pets"
	if apiCfg.BaseURL == "" {
		apiCfg.BaseURL = a.srv.URL
	}
	cfg.APIs = append([]APIConfig{apiCfg}, cfg.APIs...)
	c, err := New(&catalog.Catalog{APIs: []*catalog.API{loadTestAPI(t, "pets")}}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// call calls sdk.pets.<name> with args (a JSON array).
func call(t testing.TB, s *Session, name, args string) *luau.SDKResponse {
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
func echoed(t testing.TB, r *luau.SDKResponse) echo {
	t.Helper()
	if r.Fail != luau.SDKOK {
		t.Fatalf("call failed: %d %s", r.Fail, r.Message)
	}
	var e echo
	if err := json.Unmarshal(r.JSON, &e); err != nil {
		t.Fatalf("echo: %v (%s)", err, r.JSON)
	}
	return e
}
