package accesslog_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolscript/toolscript/host/serve/accesslog"
	"github.com/toolscript/toolscript/internal/syncbuf"
)

const secretScript = `return "the script's own text"`
const secretToken = "eyJhbGciOiJSUzI1NiJ9.secret-token.sig"

func TestMiddleware(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		want    map[string]any
		noKey   []string
	}{
		{
			name: "an execution that failed",
			handler: func(w http.ResponseWriter, r *http.Request) {
				rec := accesslog.FromContext(r.Context())
				rec.SetUser("alice")
				rec.SetCall("tools/call", "execute_script")
				rec.SetOutcome("error", "runtime")
				io.WriteString(w, `{"result":"the script's result"}`)
			},
			want: map[string]any{"status": 200.0, "user": "alice", "method": "tools/call", "tool": "execute_script",
				"outcome": "error", "error_kind": "runtime", "http_method": "POST", "path": "/mcp"},
		},
		{
			name: "decisions counted",
			handler: func(w http.ResponseWriter, r *http.Request) {
				rec := accesslog.FromContext(r.Context())
				for _, d := range []string{"allowed", "denied", "allowed", "", "approved"} {
					rec.AddDecision(d)
				}
				for i := range 20 { // a hostile count of names stays small
					rec.AddDecision(strings.Repeat("x", i+1))
				}
				rec.SetOutcome("error", "denied")
			},
			want: map[string]any{"outcome": "error", "error_kind": "denied",
				"decisions": map[string]any{"allowed": 2.0, "denied": 1.0, "approved": 1.0, "x": 1.0, "xx": 1.0, "xxx": 1.0, "xxxx": 1.0, "xxxxx": 1.0}},
		},
		{
			name:    "nothing written",
			handler: func(http.ResponseWriter, *http.Request) {},
			want:    map[string]any{"status": 200.0, "outcome": "ok", "user": "", "method": "", "tool": "", "bytes": 0.0},
			noKey:   []string{"error_kind", "decisions"},
		},
		{
			name: "refused by authentication",
			handler: func(w http.ResponseWriter, _ *http.Request) {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
			},
			want: map[string]any{"status": 401.0, "outcome": "unauthenticated"},
		},
		{
			name: "rate limited",
			handler: func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(http.StatusTooManyRequests)
			},
			want: map[string]any{"status": 429.0, "outcome": "rate_limited"},
		},
		{
			name: "an informational status first",
			handler: func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(http.StatusEarlyHints)
				w.WriteHeader(http.StatusInternalServerError)
			},
			want: map[string]any{"status": 500.0, "outcome": "error"},
		},
		{
			name: "long names are cut",
			handler: func(w http.ResponseWriter, r *http.Request) {
				accesslog.FromContext(r.Context()).SetCall("tools/call", strings.Repeat("é", 200))
			},
			want: map[string]any{"tool": strings.Repeat("é", accesslog.MaxFieldBytes/2)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs syncbuf.Buffer
			log := slog.New(slog.NewJSONHandler(&logs, nil))
			srv := httptest.NewServer(accesslog.Middleware(log, tt.handler))
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(
				`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_script","arguments":{"script":`+
					strconv(secretScript)+`}}}`))
			req.Header.Set("Authorization", "Bearer "+secretToken)
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			srv.Close() // waits for the handler, and so for the log line

			lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
			if len(lines) != 1 {
				t.Fatalf("%d log lines, want 1: %s", len(lines), logs.String())
			}
			var entry map[string]any
			if err := json.Unmarshal([]byte(lines[0]), &entry); err != nil {
				t.Fatalf("not JSON: %s", lines[0])
			}
			for k, v := range tt.want {
				if !reflect.DeepEqual(entry[k], v) {
					t.Errorf("%s = %#v, want %#v (line %s)", k, entry[k], v, lines[0])
				}
			}
			for _, k := range append([]string{"time", "duration_ms", "remote"}, tt.noKey...) {
				_, has := entry[k]
				if want := !slices.Contains(tt.noKey, k); has != want {
					t.Errorf("key %s present: %v, want %v", k, has, want)
				}
			}
			for _, secret := range []string{"script's own text", "secret-token", "the script's result"} {
				if strings.Contains(lines[0], secret) {
					t.Errorf("the log line holds %q: %s", secret, lines[0])
				}
			}
			if tool, _ := entry["tool"].(string); !utf8.ValidString(tool) {
				t.Errorf("tool %q is not valid UTF-8", tool)
			}
		})
	}
}

// TestMiddlewareStreams: a handler behind the middleware can flush, so the
// client reads an event before the response ends.
func TestMiddlewareStreams(t *testing.T) {
	read := make(chan struct{})
	var logs syncbuf.Buffer
	srv := httptest.NewServer(accesslog.Middleware(slog.New(slog.NewJSONHandler(&logs, nil)),
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: first\n\n")
			w.(http.Flusher).Flush()
			<-read // the client has the first event
			io.WriteString(w, "data: second\n\n")
			if err := http.NewResponseController(w).Flush(); err != nil {
				t.Errorf("ResponseController.Flush: %v", err)
			}
		})))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	if err != nil || line != "data: first\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	close(read)
	rest, _ := io.ReadAll(br)
	if !strings.Contains(string(rest), "data: second") {
		t.Errorf("rest %q", rest)
	}
}

func TestNilRecord(t *testing.T) {
	rec := accesslog.FromContext(context.Background())
	if rec != nil {
		t.Fatal("a record outside the middleware")
	}
	// No panic.
	rec.SetUser("a")
	rec.SetCall("m", "t")
	rec.SetOutcome("ok", "")
}

func strconv(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
