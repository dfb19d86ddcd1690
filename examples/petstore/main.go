// Command petstore is a small pet store API for trying toolscript's sdk on
// loopback: the API of petstore.yaml, with twenty pets, and the spec itself
// at /openapi.yaml (its server rewritten to the address it listens on).
// Calls to /pets need a bearer token, any token, as a real API would want
// one: toolscript adds it on the host (--auth petstore:PETSTORE_TOKEN).
//
//	go run ./examples/petstore                      # http://127.0.0.1:8090
//	go run ./examples/petstore -addr 127.0.0.1:9999
package main

import (
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

//go:embed petstore.yaml
var spec string

// documented is the address petstore.yaml names; /openapi.yaml names the
// address the server listens on instead.
const documented = "http://127.0.0.1:8090"

type pet struct {
	ID     int    `json:"id"`
	Name   string `json:"name"`
	Tag    string `json:"tag,omitempty"`
	Status string `json:"status,omitempty"`
}

type newPet struct {
	Name   *string `json:"name"`
	Tag    string  `json:"tag"`
	Status string  `json:"status"`
}

// store holds the pets, in memory, in order of their ids.
type store struct {
	base string // the server's URL, for the Link header

	mu   sync.Mutex
	pets []pet
}

func newStore(base string) *store {
	names := []string{"Rex", "Tom", "Kitty", "Bella", "Max", "Luna", "Charlie", "Lucy", "Cooper", "Daisy",
		"Milo", "Bailey", "Coco", "Rocky", "Zoe", "Oscar", "Ruby", "Teddy", "Molly", "Leo"}
	s := &store{base: base}
	for i, name := range names {
		status := "available"
		if i%3 == 2 {
			status = "sold"
		}
		tag := "dog"
		if i%2 == 1 {
			tag = "cat"
		}
		s.pets = append(s.pets, pet{ID: i + 1, Name: name, Tag: tag, Status: status})
	}
	return s
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8090", "the address to listen on")
	flag.Parse()
	if err := run(*addr); err != nil {
		fmt.Fprintln(os.Stderr, "petstore:", err)
		os.Exit(1)
	}
}

func run(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	base := "http://" + l.Addr().String()
	srv := &http.Server{Handler: handler(newStore(base), base), ReadHeaderTimeout: 10 * time.Second}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-stop
		srv.Close()
	}()
	fmt.Printf("petstore: listening on %s (spec at %s/openapi.yaml)\n", base, base)
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func handler(s *store, base string) http.Handler {
	mux := http.NewServeMux()
	served := strings.ReplaceAll(spec, documented, base)
	mux.HandleFunc("GET /openapi.yaml", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		_, _ = w.Write([]byte(served))
	})
	mux.Handle("GET /pets", authorized(http.HandlerFunc(s.list)))
	mux.Handle("POST /pets", authorized(http.HandlerFunc(s.create)))
	mux.Handle("GET /pets/{petId}", authorized(http.HandlerFunc(s.get)))
	mux.Handle("PUT /pets/{petId}", authorized(http.HandlerFunc(s.update)))
	return mux
}

// authorized answers 401 to a request without a bearer token.
func authorized(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || strings.TrimSpace(token) == "" {
			w.Header().Set("WWW-Authenticate", "Bearer")
			writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "a bearer token is required"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *store) list(w http.ResponseWriter, r *http.Request) {
	limit, err := intParam(r, "limit", 10, 20)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"message": err.Error()})
		return
	}
	page, err := intParam(r, "page", 1, 1<<20)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"message": err.Error()})
		return
	}
	status := r.URL.Query().Get("status")
	s.mu.Lock()
	var matching []pet
	for _, p := range s.pets {
		if status == "" || p.Status == status {
			matching = append(matching, p)
		}
	}
	s.mu.Unlock()
	from := min((page-1)*limit, len(matching))
	to := min(from+limit, len(matching))
	if to < len(matching) {
		next := *r.URL
		q := next.Query()
		q.Set("page", strconv.Itoa(page+1))
		next.RawQuery = q.Encode()
		w.Header().Set("Link", fmt.Sprintf("<%s%s>; rel=\"next\"", s.base, next.RequestURI()))
	}
	writeJSON(w, http.StatusOK, append([]pet{}, matching[from:to]...))
}

func (s *store) get(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.find(w, r)
	if ok {
		writeJSON(w, http.StatusOK, s.pets[i])
	}
}

func (s *store) create(w http.ResponseWriter, r *http.Request) {
	p, ok := readPet(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	p.ID = s.pets[len(s.pets)-1].ID + 1
	s.pets = append(s.pets, p)
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, p)
}

func (s *store) update(w http.ResponseWriter, r *http.Request) {
	p, ok := readPet(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.find(w, r)
	if ok {
		p.ID = s.pets[i].ID
		s.pets[i] = p
		writeJSON(w, http.StatusOK, p)
	}
}

// find returns the index of the pet the path names, or answers 404. The
// caller holds s.mu.
func (s *store) find(w http.ResponseWriter, r *http.Request) (int, bool) {
	id, err := strconv.Atoi(r.PathValue("petId"))
	if err == nil {
		if i := slices.IndexFunc(s.pets, func(p pet) bool { return p.ID == id }); i >= 0 {
			return i, true
		}
	}
	writeJSON(w, http.StatusNotFound, map[string]string{"message": fmt.Sprintf("no pet %s", r.PathValue("petId"))})
	return 0, false
}

func readPet(w http.ResponseWriter, r *http.Request) (pet, bool) {
	var in newPet
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
	if err := dec.Decode(&in); err != nil || in.Name == nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"message": "the body must be a pet with a name"})
		return pet{}, false
	}
	return pet{Name: *in.Name, Tag: in.Tag, Status: in.Status}, true
}

func intParam(r *http.Request, name string, def, max int) (int, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > max {
		return 0, fmt.Errorf("%s must be a whole number from 1 to %d", name, max)
	}
	return n, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
