package mcpserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolscript/toolscript/host/contract/redact"
	"github.com/toolscript/toolscript/host/serve/auth"
)

// The streamable HTTP transport (the hosted mode). Each POST carries one
// message, which it hands to the core; the answer is the POST's response:
// a JSON body, or, once a call writes a progress notification, a stream of
// server-sent events that ends with the call's response. The transport
//
//   - binds the sessions it issues (Mcp-Session-Id) to the user who opened
//     them, and refuses them to anyone else;
//   - gives the core the scope of request ids: the user and the session,
//     or the user alone without a session, so that no user can cancel
//     another's call whatever ids they use;
//   - caps the body at MaxRequestBytes;
//   - checks what mcp-go's streamable HTTP transport checks (its status
//     codes and messages are kept): the Content-Type, the protocol version
//     header, and under protocol 2026-07-28 its standard headers.
//
// It streams nothing on GET (405), which the protocol allows: toolscript
// sends nothing outside a call. It expects the hosted mode's handler
// (host/serve/hosted) in front, which has read the body within its deadline,
// after authentication, and hands its message on decoded (WithMessage);
// without one, the transport reads and decodes the body itself.
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
	// Logger receives the transport's diagnostics (a response it could
	// not write: the client went away). Default: a logger on
	// Config.ErrorLog.
	Logger *slog.Logger
}

// HTTPHandler returns the streamable HTTP transport, to be served at /mcp
// behind the hosted mode's authentication (host/serve/hosted).
func (s *Server) HTTPHandler(cfg HTTPConfig) (http.Handler, error) {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(s.cfg.ErrorLog, nil))
	}
	if err := s.setTransport(0); err != nil {
		return nil, err
	}
	return &httpTransport{Server: s, cfg: cfg, logger: logger, sessions: newSessions()}, nil
}

// httpTransport is the Server on the streamable HTTP transport.
type httpTransport struct {
	*Server
	cfg      HTTPConfig
	logger   *slog.Logger
	sessions *sessions
}

func (h *httpTransport) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.cfg.CheckLoopbackHost && rejectDNSRebinding(w, r) {
		return
	}
	modern := mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion))
	switch r.Method {
	case http.MethodPost:
		h.post(w, r)
	case http.MethodGet, http.MethodDelete:
		switch {
		case modern:
			// Protocol 2026-07-28 has neither: server-to-client messages
			// use subscriptions/listen (405 needs an Allow header).
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, r.Method+" is not supported in protocol version "+mcp.ProtocolVersion20260728+
				": server-to-client messages use subscriptions/listen", http.StatusMethodNotAllowed)
		case r.Method == http.MethodDelete && !h.cfg.Stateless:
			user, _ := auth.UserFrom(r.Context())
			if !h.sessions.close(r.Header.Get(server.HeaderKeySessionID), user) {
				http.Error(w, "session not found", http.StatusNotFound)
				return
			}
			w.WriteHeader(http.StatusOK)
		case rejectUnsupportedProtocolVersion(w, r.Header.Get(mcp.HeaderProtocolVersion)):
		case r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusOK) // stateless: nothing to end
		default:
			http.Error(w, "Streaming is disabled on this server", http.StatusMethodNotAllowed)
		}
	case http.MethodHead:
		w.WriteHeader(http.StatusOK)
	default:
		http.NotFound(w, r)
	}
}

// post handles a POST: one message.
func (h *httpTransport) post(w http.ResponseWriter, r *http.Request) {
	m := h.message(w, r)
	if m == nil {
		return
	}
	msg, body := m.env, m.body
	version, metaVersion := r.Header.Get(mcp.HeaderProtocolVersion), m.metaVersion
	modern := mcp.IsModernProtocol(version) || mcp.IsModernProtocol(metaVersion)
	initialize := msg.Method == string(mcp.MethodInitialize) && !modern

	user, _ := auth.UserFrom(r.Context())
	scope := user.DirName()
	sessionID := r.Header.Get(server.HeaderKeySessionID)
	if !h.cfg.Stateless && !modern && sessionID != "" && !initialize {
		if !h.sessions.check(sessionID, user) {
			http.Error(w, "session not found: start a new one with initialize", http.StatusNotFound)
			return
		}
		scope += "\x00" + sessionID // DirName holds no NUL
	}
	switch {
	case !modern && !initialize && rejectUnsupportedProtocolVersion(w, version):
		return
	case msg.isResponse() || msg.Method == "" && msg.ID != nil && isEmpty(msg.Result) && isEmpty(msg.Error):
		if modern {
			writeJSON(w, http.StatusBadRequest, rpcError(msg.ID, mcp.INVALID_REQUEST, "client-to-server responses are not supported in protocol version "+
				mcp.ProtocolVersion20260728+": server-initiated requests were replaced by multi round-trip requests", nil))
			return
		}
		h.deliver(scope, &msg)
		w.WriteHeader(http.StatusAccepted)
		return
	case modern && !h.validModern(w, r, &msg, version, metaVersion):
		return
	}

	out := &httpConn{w: w, modern: modern, logger: h.logger, redact: h.Server.cfg.Redactor}
	client := h.peer(out, user, initialize, modern, sessionID)
	// The client's span in the request's headers (traceparent): the
	// parent of the call's, unless its _meta names one (traced).
	ctx := h.Server.cfg.Tracer.FromHeader(r.Context(), r.Header)
	if c := h.receive(incoming{ctx: withPeer(ctx, client), scope: scope, user: user, msg: &msg, raw: body, conn: out}); c != nil {
		h.run(c)
	}
	out.end()
}

// message returns the message of a POST, as the hosted mode's handler
// decoded it (WithMessage), or read and decoded here; nil when it answered
// the request itself: a body too large (whatever the handler before
// allowed) or unreadable, not JSON, or of another Content-Type.
func (h *httpTransport) message(w http.ResponseWriter, r *http.Request) *Message {
	max := h.MaxRequestBytes()
	tooLarge := func() {
		http.Error(w, fmt.Sprintf("request body too large: at most %d bytes (a script may be at most %d bytes)", max, h.Server.cfg.MaxScriptBytes),
			http.StatusRequestEntityTooLarge)
	}
	m := messageFrom(r.Context())
	switch {
	case m == nil:
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
		if err != nil {
			if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
				tooLarge()
			} else {
				http.Error(w, "reading the request body failed", http.StatusBadRequest)
			}
			return nil
		}
		m = DecodeMessage(body)
	case int64(len(m.body)) > max:
		tooLarge()
		return nil
	}
	if mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mediaType != "application/json" {
		http.Error(w, "Invalid content type: must be 'application/json'", http.StatusBadRequest)
		return nil
	}
	if m.err != nil {
		writeJSON(w, http.StatusBadRequest, rpcError(json.RawMessage("null"), mcp.PARSE_ERROR, "request body is not valid json", nil))
		return nil
	}
	return m
}

// peer returns what the client of a request declared at initialize, which
// lives with its session: nil without one (stateless, or protocol
// 2026-07-28). An initialize gets a new one, and out opens its session.
func (h *httpTransport) peer(out *httpConn, user auth.User, initialize, modern bool, sessionID string) *peer {
	switch {
	case initialize && !h.cfg.Stateless:
		client := &peer{}
		out.open = func() string {
			id := h.sessions.open(user)
			if id != "" {
				h.sessions.setPeer(id, client)
			}
			return id
		}
		return client
	case !h.cfg.Stateless && !modern && sessionID != "":
		return h.sessions.peer(sessionID)
	}
	return nil
}

// validModern checks a request of protocol 2026-07-28 as mcp-go's
// transport does (streamable_http_modern.go, validateModernRequest): the
// version stated in the header and in _meta alike, and the standard
// headers (Mcp-Method, Mcp-Name) matching the body, which
// MCPServer.HandleMessage checks only for mcp-go's own transport. It
// answers a request that fails with 400.
func (h *httpTransport) validModern(w http.ResponseWriter, r *http.Request, msg *envelope, version, metaVersion string) bool {
	id := msg.ID
	if id == nil {
		id = json.RawMessage("null")
	}
	var failed mcp.JSONRPCError
	switch {
	case r.Header.Get(mcp.HeaderLastEventID) != "":
		failed = rpcError(id, mcp.HEADER_MISMATCH, "Last-Event-ID is not supported in protocol version "+mcp.ProtocolVersion20260728+
			": streams are not resumable, re-issue the request with a new ID", nil)
	case version == "":
		failed = rpcError(id, mcp.HEADER_MISMATCH, mcp.HeaderProtocolVersion+" header is required for requests carrying "+mcp.MetaKeyProtocolVersion, nil)
	case metaVersion == "":
		failed = rpcError(id, mcp.INVALID_PARAMS, "missing or invalid _meta field "+mcp.MetaKeyProtocolVersion, nil)
	case version != metaVersion:
		failed = rpcError(id, mcp.HEADER_MISMATCH, mcp.HeaderProtocolVersion+" header "+version+" does not match request "+
			mcp.MetaKeyProtocolVersion+" "+metaVersion, nil)
	case !mcp.IsValidProtocolVersion(metaVersion):
		failed = mcp.UnsupportedProtocolVersionError{Version: metaVersion, Supported: mcp.ValidProtocolVersions}.JSONRPCError()
		failed.ID = mcp.NewRequestId(id)
	case msg.ID != nil && msg.Method != "":
		if err := mcp.ValidateStandardHeaders(r.Header.Get, metaVersion, mcp.MCPMethod(msg.Method), msg.Params); err != nil {
			failed = rpcError(id, mcp.HEADER_MISMATCH, err.Error(), nil)
		}
	}
	if failed.Error.Code == 0 {
		return true
	}
	writeJSON(w, http.StatusBadRequest, failed)
	return false
}

// httpConn is the conn of one POST: its response. The first notification
// makes it a stream of server-sent events; a response alone is a JSON
// body; a POST that gets neither (a notification, a cancelled call) is
// answered 202 Accepted by end.
type httpConn struct {
	w      http.ResponseWriter
	modern bool
	logger *slog.Logger
	redact *redact.Redactor // of every message
	// open, for an initialize, opens the session its response names.
	open func() string

	mu      sync.Mutex
	started bool // the status is written
	stream  bool
}

// write is conn.write. A failure is the transport's to report: the core
// can do nothing about a client that went away.
func (c *httpConn) write(msg any) error {
	if err := c.send(msg); err != nil {
		c.logger.Warn("writing a response failed", "err", err)
	}
	return nil
}

func (c *httpConn) send(msg any) error {
	b, err := encodeMessage(msg, c.redact)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !isResponse(msg) && !c.stream {
		if c.started {
			return errors.New("a notification after the response")
		}
		h := c.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Connection", "keep-alive")
		h.Set("Cache-Control", "no-cache")
		c.w.WriteHeader(http.StatusOK)
		c.started, c.stream = true, true
	}
	if c.stream {
		if _, err := fmt.Fprintf(c.w, "event: message\ndata: %s\n\n", b); err != nil {
			return fmt.Errorf("writing an event: %w", err)
		}
		return http.NewResponseController(c.w).Flush()
	}
	if c.started {
		return errors.New("a second response")
	}
	c.started = true
	status := http.StatusOK
	if e, ok := msg.(mcp.JSONRPCError); ok && c.modern {
		status = httpStatusForJSONRPCError(e.Error.Code)
	}
	if c.open != nil && status == http.StatusOK {
		if id := c.open(); id != "" {
			c.w.Header().Set(server.HeaderKeySessionID, id)
		}
	}
	c.w.Header().Set("Content-Type", "application/json")
	c.w.WriteHeader(status)
	_, err = c.w.Write(append(b, '\n'))
	return err
}

// end answers 202 Accepted if nothing was written.
func (c *httpConn) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.started {
		c.started = true
		c.w.WriteHeader(http.StatusAccepted)
	}
}

// isResponse tells whether msg, written by the core, is a response (the
// last message of a POST) rather than a notification or a request of the
// server's, which go on a stream of events.
func isResponse(msg any) bool {
	switch msg.(type) {
	case notification, outbound, mcp.JSONRPCNotification:
		return false
	}
	return true
}

// writeJSON writes a message as a JSON body with the status given.
func writeJSON(w http.ResponseWriter, status int, msg any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(msg)
}

func isEmpty(v json.RawMessage) bool {
	s := strings.TrimSpace(string(v))
	return s == "" || s == "null"
}

// httpStatusForJSONRPCError maps a JSON-RPC error code to the HTTP status
// protocol 2026-07-28 prescribes for it (as mcp-go's transport does,
// streamable_http_modern.go).
func httpStatusForJSONRPCError(code int) int {
	switch code {
	case mcp.METHOD_NOT_FOUND:
		return http.StatusNotFound
	case mcp.HEADER_MISMATCH, mcp.MISSING_REQUIRED_CLIENT_CAPABILITY, mcp.UNSUPPORTED_PROTOCOL_VERSION,
		mcp.INVALID_REQUEST, mcp.INVALID_PARAMS, mcp.PARSE_ERROR:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// rejectUnsupportedProtocolVersion answers 400 to a request whose
// Mcp-Protocol-Version header names a version mcp-go does not implement,
// and reports whether it did; a missing header is accepted (clients of
// 2025-03-26 send none). From mcp-go's streamable_http_modern.go.
func rejectUnsupportedProtocolVersion(w http.ResponseWriter, version string) bool {
	if version == "" || mcp.IsValidProtocolVersion(version) {
		return false
	}
	http.Error(w, "Unsupported protocol version: "+version, http.StatusBadRequest)
	return true
}

// rejectDNSRebinding refuses, with 403, a request that arrived on a
// loopback address with a Host header that is not a loopback one: a page
// whose domain was rebound to 127.0.0.1 driving a browser against a local
// server. It reports whether it did. From mcp-go's http_localhost.go.
func rejectDNSRebinding(w http.ResponseWriter, r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil {
		return false
	}
	if isLoopbackHost(local.String()) && !isLoopbackHost(r.Host) {
		http.Error(w, fmt.Sprintf("Forbidden: invalid Host header %q", r.Host), http.StatusForbidden)
		return true
	}
	return false
}

// isLoopbackHost reports whether addr, a host or host:port, names a
// loopback interface.
func isLoopbackHost(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = strings.Trim(addr, "[]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
