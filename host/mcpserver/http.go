package mcpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolscript/toolscript/host/auth"
)

// The streamable HTTP transport (the hosted mode): mcp-go's streamable HTTP
// server behind a handler of the transport's own, which
//
//   - keeps each request on a session of its own inside mcp-go, so that a
//     call's progress notifications go out on the response stream of that
//     call, ahead of its response;
//   - binds the sessions it issues (Mcp-Session-Id) to the user who opened
//     them, and refuses them to anyone else;
//   - cancels calls on notifications/cancelled by user, session and request
//     id, so that no user can cancel another's call whatever ids they use;
//   - caps the body at MaxRequestBytes.
//
// It expects the hosted mode's handler (host/hosted) in front, which has
// read the body within its deadline, after authentication: the body this
// transport and mcp-go read is in memory.
//
// Who the user is, it learns from the request's context (auth.UserFrom),
// where the hosted mode's authentication put it.

// The bounds of the sessions the HTTP transport issues. Beyond the first
// two, initialize is answered without a session id, and the client goes on
// without a session (as with --stateless).
const (
	MaxSessions        = 10000
	MaxSessionsPerUser = 100
	// SessionIdleTimeout is how long a session lives unused; a request
	// with an expired or unknown session id gets 404, and the client starts
	// a new session.
	SessionIdleTimeout = 30 * time.Minute
)

// HTTPConfig configures the streamable HTTP transport.
type HTTPConfig struct {
	// Stateless issues no sessions: every request stands alone, so that
	// any replica can serve any request.
	Stateless bool
	// CheckLoopbackHost refuses, with 403, requests that arrive on a
	// loopback address with a Host header that is not a loopback one
	// (mcp-go's protection of local servers against DNS rebinding). Turn
	// it on for servers without authentication; with a token required, a
	// rebound page gets nothing, and a proxy on the same machine may keep
	// the public Host.
	CheckLoopbackHost bool
	// Logger receives the transport's diagnostics. Default: a logger on
	// Config.ErrorLog.
	Logger *slog.Logger
}

// HTTPHandler returns the streamable HTTP transport, to be served at /mcp
// behind the hosted mode's authentication (host/hosted).
func (s *Server) HTTPHandler(cfg HTTPConfig) (http.Handler, error) {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(s.cfg.ErrorLog, nil))
	}
	h := &httpTransport{
		Server:    s,
		stateless: cfg.Stateless,
		inflight:  map[string][]*httpCall{},
		sessions:  newSessions(),
	}
	// mcp-go is stateless whatever the mode: the sessions are the
	// transport's (above). It streams nothing on GET (405), which the
	// protocol allows: toolscript sends nothing outside a call.
	h.mcp = server.NewStreamableHTTPServer(s.mcp,
		server.WithStateLess(true),
		server.WithDisableStreaming(true),
		server.WithDisableLocalhostProtection(!cfg.CheckLoopbackHost),
		server.WithStreamableHTTPLogger(logger),
	)
	if err := s.setTransport(h); err != nil {
		return nil, err
	}
	return h, nil
}

// httpTransport is the Server on the streamable HTTP transport.
type httpTransport struct {
	*Server
	mcp       *server.StreamableHTTPServer
	stateless bool
	sessions  *sessions

	mu sync.Mutex
	// inflight are the running tools/call handlers by callKey.
	inflight map[string][]*httpCall
}

// httpCall is what the transport knows of a tools/call request, in its
// context.
type httpCall struct {
	key      string    // callKey
	progress *delivery // the progress notifications written on its response
	// stop stops the handler, once it runs.
	stop context.CancelFunc
	// cancelled is set by the client's notifications/cancelled: the
	// request gets no response then (the protocol says so, and clients
	// report one for a request they no longer know as an error).
	cancelled atomic.Bool
}

type httpCallKey struct{}

// envelope is what the transport reads of a JSON-RPC message.
type envelope struct {
	Method string          `json:"method"`
	ID     json.RawMessage `json:"id"`
	Params struct {
		RequestID json.RawMessage `json:"requestId"` // of notifications/cancelled
		URI       string          `json:"uri"`       // of resources/read
		Meta      *mcp.Meta       `json:"_meta"`
	} `json:"params"`
}

func (h *httpTransport) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	user, _ := auth.UserFrom(r.Context())
	modern := mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion))
	sessionID := r.Header.Get(server.HeaderKeySessionID)
	switch r.Method {
	case http.MethodPost:
	case http.MethodDelete:
		if h.stateless || modern {
			h.mcp.ServeHTTP(w, r)
			return
		}
		if !h.sessions.close(sessionID, user) {
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusOK)
		return
	default:
		h.mcp.ServeHTTP(w, r)
		return
	}

	max := h.MaxRequestBytes()
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			http.Error(w, fmt.Sprintf("request body too large: at most %d bytes (a script may be at most %d bytes)", max, h.cfg.MaxScriptBytes),
				http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "reading the request body failed", http.StatusBadRequest)
		return
	}
	var msg envelope
	_ = json.Unmarshal(body, &msg) // mcp-go answers what is not JSON-RPC
	modern = modern || mcp.IsModernProtocol(msg.Params.Meta.ProtocolVersion())

	// The scope of request ids: the session when there is one (issued by
	// this server to this user), else the user alone.
	scope := ""
	if !h.stateless && !modern && sessionID != "" && msg.Method != string(mcp.MethodInitialize) {
		if !h.sessions.check(sessionID, user) {
			http.Error(w, "session not found: start a new one with initialize", http.StatusNotFound)
			return
		}
		scope = sessionID
	}

	// A number out of range gets the same answer as over stdio.
	var probe inbound
	if tooLarge, ok := outOfRangeNumber(json.Unmarshal(body, &probe)); ok && probe.Method != "" && idKey(probe.ID) != "" {
		rewritten, refusal := outOfRange(body, probe.Method, tooLarge)
		if refusal != "" {
			resp := rpcError{JSONRPC: mcp.JSONRPC_VERSION, ID: probe.ID}
			resp.Error.Code = mcp.INVALID_PARAMS
			resp.Error.Message = refusal
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(resp)
			return
		}
		body = rewritten
	}

	ctx := r.Context()
	switch {
	case msg.Method == string(mcp.MethodNotificationCancelled) && msg.ID == nil:
		h.cancel(callKey(user, scope, msg.Params.RequestID))
		w.WriteHeader(http.StatusAccepted)
		return
	case msg.Method == string(mcp.MethodToolsCall) && msg.ID != nil:
		c := &httpCall{key: callKey(user, scope, msg.ID), progress: &delivery{}}
		ctx = context.WithValue(ctx, httpCallKey{}, c)
		w = &callWriter{ResponseWriter: w, call: c}
	case msg.Method == string(mcp.MethodInitialize) && !h.stateless && !modern:
		w = &sessionWriter{ResponseWriter: w, open: func() string { return h.sessions.open(user) }}
	case msg.Method == string(mcp.MethodResourcesRead) && !h.isDocURI(msg.Params.URI):
		w = &unknownResourceWriter{ResponseWriter: w, uri: msg.Params.URI}
	}
	r = r.WithContext(ctx)
	r.Body = io.NopCloser(bytes.NewReader(body))
	h.mcp.ServeHTTP(w, r)
}

// callKey names a request by its user, the scope of its id (a session, or
// none) and its id. DirName tells users apart and holds no NUL; the scope
// is a session id of the transport's own.
func callKey(u auth.User, scope string, id json.RawMessage) string {
	return u.DirName() + "\x00" + scope + "\x00" + idKey(id)
}

// track is transport.track.
func (h *httpTransport) track(ctx context.Context, _ mcp.CallToolRequest, stop context.CancelFunc) (func(), bool) {
	c, _ := ctx.Value(httpCallKey{}).(*httpCall)
	if c == nil {
		return func() {}, true
	}
	h.mu.Lock()
	c.stop = stop
	h.inflight[c.key] = append(h.inflight[c.key], c)
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		calls := slices.DeleteFunc(h.inflight[c.key], func(other *httpCall) bool { return other == c })
		if len(calls) == 0 {
			delete(h.inflight, c.key)
		} else {
			h.inflight[c.key] = calls
		}
	}, true
}

// cancel stops the running calls with this key. A cancellation of a call
// that is not running (it ended, or has not started) is ignored, as the
// protocol allows.
func (h *httpTransport) cancel(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.inflight[key] {
		c.cancelled.Store(true)
		c.stop()
	}
}

// delivery is transport.delivery: the count of the call's own response.
func (h *httpTransport) delivery(ctx context.Context) *delivery {
	if hc, _ := ctx.Value(httpCallKey{}).(*httpCall); hc != nil {
		return hc.progress
	}
	return nil
}

// callWriter is the response writer of a tools/call: it counts the
// progress notifications written (mcp-go writes each server-sent event
// with one Write), and leaves out the response of a request the client
// cancelled: on a stream of events the stream ends without it, and a
// response not begun becomes 202 Accepted with no body.
type callWriter struct {
	http.ResponseWriter
	call    *httpCall
	started bool
	noBody  bool
}

func (w *callWriter) WriteHeader(status int) {
	if !w.started && w.call.cancelled.Load() {
		status, w.noBody = http.StatusAccepted, true
	}
	w.started = true
	w.ResponseWriter.WriteHeader(status)
}

func (w *callWriter) Write(p []byte) (int, error) {
	if !w.started {
		w.WriteHeader(http.StatusOK)
	}
	if w.noBody {
		return len(p), nil
	}
	if isProgress(bytes.TrimPrefix(p, []byte("event: message\ndata: "))) {
		defer w.call.progress.wrote()
	} else if w.call.cancelled.Load() {
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

func (w *callWriter) Flush() { http.NewResponseController(w.ResponseWriter).Flush() }

func (w *callWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// unknownResourceWriter words the error response to a resources/read of a
// URI the server does not have in the protocol's terms, as stdio does
// (resourceNotFound). mcp-go writes the response with one Write.
type unknownResourceWriter struct {
	http.ResponseWriter
	uri string
}

func (w *unknownResourceWriter) Write(p []byte) (int, error) {
	if _, err := w.ResponseWriter.Write(resourceNotFound(p, w.uri)); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (w *unknownResourceWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// sessionWriter gives a successful initialize response a new session id.
type sessionWriter struct {
	http.ResponseWriter
	open        func() string
	wroteHeader bool
}

func (w *sessionWriter) WriteHeader(status int) {
	if !w.wroteHeader {
		w.wroteHeader = true
		if status == http.StatusOK {
			if id := w.open(); id != "" {
				w.Header().Set(server.HeaderKeySessionID, id)
			}
		}
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *sessionWriter) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

func (w *sessionWriter) Flush() { http.NewResponseController(w.ResponseWriter).Flush() }

func (w *sessionWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// sessions are the sessions the HTTP transport issued, each bound to the
// user who opened it. It is safe for concurrent use.
type sessions struct {
	mu      sync.Mutex
	byID    map[string]*session
	perUser map[auth.User]int
	sweptAt time.Time
	now     func() time.Time
}

type session struct {
	user auth.User
	seen time.Time
}

func newSessions() *sessions {
	return &sessions{byID: map[string]*session{}, perUser: map[auth.User]int{}, now: time.Now}
}

// open returns a new session of u, or "" when u or the server has as many
// sessions as it may.
func (t *sessions) open(u auth.User) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	t.sweep(now)
	if len(t.byID) >= MaxSessions || t.perUser[u] >= MaxSessionsPerUser {
		return ""
	}
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	id := "ts-" + hex.EncodeToString(b[:])
	t.byID[id] = &session{user: u, seen: now}
	t.perUser[u]++
	return id
}

// check tells whether id is a live session of u, and keeps it alive.
func (t *sessions) check(id string, u auth.User) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	t.sweep(now)
	s := t.byID[id]
	if s == nil || s.user != u {
		return false
	}
	if now.Sub(s.seen) > SessionIdleTimeout {
		t.remove(id, s)
		return false
	}
	s.seen = now
	return true
}

// close ends a session of u; it returns false if id is none of u's.
func (t *sessions) close(id string, u auth.User) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.byID[id]
	if s == nil || s.user != u {
		return false
	}
	t.remove(id, s)
	return true
}

func (t *sessions) remove(id string, s *session) {
	delete(t.byID, id)
	if t.perUser[s.user]--; t.perUser[s.user] <= 0 {
		delete(t.perUser, s.user)
	}
}

// sweep forgets, at most once a minute, the sessions idle for longer than
// SessionIdleTimeout.
func (t *sessions) sweep(now time.Time) {
	if now.Sub(t.sweptAt) < time.Minute {
		return
	}
	t.sweptAt = now
	for id, s := range t.byID {
		if now.Sub(s.seen) > SessionIdleTimeout {
			t.remove(id, s)
		}
	}
}

// len returns the number of sessions.
func (t *sessions) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byID)
}
