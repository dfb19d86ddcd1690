// Package hosted assembles the HTTP handler of `toolscript serve --http`
// (docs/hosted.md) from its parts: the routes, and the order of the
// middleware every request to /mcp passes. It knows no MCP: the streamable
// HTTP transport is handed in as an http.Handler, and learns who is
// calling from the request context (auth.UserFrom).
//
// Every request, whatever its path, first has its body bounded (bounded):
// the whole body must arrive within Config.BodyTimeout of the handler's
// start (one deadline for the body, not one per read, so a client that
// trickles a byte a second is cut off as surely as one that stops), and a
// response sent before the body was read to its end says "Connection:
// close", so that net/http closes the connection instead of reading the
// rest of a body nobody wants. Once the body is read to its end the
// deadline is lifted: a running script does not lose its connection.
//
// A request to /mcp then passes, in this order:
//
//  1. the access log (accesslog.Middleware), which writes its line when
//     the request is done, whatever happened inside;
//  2. the Origin check (403 for a browser on an origin not allowed) and
//     CORS for the allowed ones;
//  3. authentication (auth.Authenticator.Middleware), decided from the
//     headers alone: 401 or 403 before a byte of the body is read (429
//     for a client address past its bound on failed authentications), or
//     the user in the context; without an Authenticator every request is
//     Anonymous;
//  4. the weight of the requests being handled, of the user and of all
//     (requestbytes.go: 429, 413 or 503, held from before the body is
//     read to the end of the response), the body cap (413 beyond
//     MaxBodyBytes, 408 when the body does not arrive within
//     BodyTimeout) and a look at the JSON-RPC message: its
//     method and tool go to the access log, and the number of tools/call
//     requests it holds (Calls) to the context;
//  5. the rate per user (429 with Retry-After), charged one execution per
//     tools/call;
//  6. the MCP handler.
//
// Serve runs the handler in an http.Server with the timeouts, TLS and
// graceful shutdown of the hosted mode, behind a cap on open connections,
// in all and per client address: at a cap a new connection takes the
// place of one waiting for a request (one that has not sent a whole
// request head first, oldest first), or is answered 503 when every
// connection has a request in progress (limitListener). Each write of a
// response has a deadline of its own (writeDeadlines), so that a client
// that does not read gives back what its response holds.
package hosted

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/toolscript/toolscript/host/contract/limit"
	"github.com/toolscript/toolscript/host/contract/redact"
	"github.com/toolscript/toolscript/host/serve/accesslog"
	"github.com/toolscript/toolscript/host/serve/auth"
	"github.com/toolscript/toolscript/host/serve/mcpserver"
	"github.com/toolscript/toolscript/host/serve/metrics"
)

// The paths the handler serves.
const (
	PathMCP     = "/mcp"
	PathHealth  = "/healthz"
	PathReady   = "/readyz"
	PathMetrics = "/metrics"
)

// AnonymousSubject is the subject of the one user of a server without
// authentication. Its issuer is empty, which no token's is.
const AnonymousSubject = "anonymous"

// Anonymous returns the user every request is without authentication.
func Anonymous() auth.User { return auth.User{Subject: AnonymousSubject} }

// ToolsCall is the JSON-RPC method that runs a tool: what the rate counts.
const ToolsCall = "tools/call"

// ReadyTimeout bounds one readiness check.
const ReadyTimeout = 5 * time.Second

// DefaultBodyTimeout bounds, by default, the time a client takes to send
// a request body (Config.BodyTimeout), so that a slow one cannot hold a
// connection and its memory: at the default cap on a request (a 1 MiB
// script and its JSON), a client must send about 35 KB/s.
const DefaultBodyTimeout = 30 * time.Second

// Config configures the handler.
type Config struct {
	// MCP serves /mcp: mcp-go's streamable HTTP server. Required.
	MCP http.Handler
	// Auth authenticates requests to /mcp and serves the protected
	// resource metadata. Nil means no authentication (--insecure-no-auth):
	// every request is Anonymous.
	Auth *auth.Authenticator
	// Rate limits executions per user, when set.
	Rate *limit.Rate[auth.User]
	// MaxBodyBytes caps a request body to /mcp. Required: the largest
	// script plus the JSON around it.
	MaxBodyBytes int64
	// MaxRequestBytesPerUser and MaxRequestBytesTotal bound the weight of
	// the requests to /mcp handled at once (requestbytes.go), of one user
	// and of all. Defaults: DefaultRequestBodiesPerUser and
	// DefaultRequestBodiesTotal times MaxBodyBytes.
	MaxRequestBytesPerUser, MaxRequestBytesTotal int64
	// BodyTimeout bounds the time from the start of a request's handling
	// to the end of its body, on every path. Default DefaultBodyTimeout.
	BodyTimeout time.Duration
	// Metrics count the refusals, when set, and are served at /metrics
	// unless MetricsElsewhere (ServeMetrics serves them on an address of
	// their own).
	Metrics          *metrics.Metrics
	MetricsElsewhere bool
	// AccessLog receives one line per request, except for /healthz,
	// /readyz and /metrics (probes and scrapes). Nil means none.
	AccessLog *slog.Logger
	// AllowedOrigins are the web origins whose pages may call /mcp from a
	// browser (ParseOrigins); a request with another Origin gets 403.
	AllowedOrigins []string
	// Ready tells whether the server can take work (the module compiled,
	// the specs loaded, the upstream MCP servers connected), for /readyz;
	// the Authenticator's keys are checked besides. Nil means ready.
	Ready func(context.Context) error
	// Redactor redacts the configuration's secrets from what the probes
	// say (a server that is down may be named by a URL that holds a
	// token). Nil redacts nothing.
	Redactor *redact.Redactor
}

// New returns the handler of the hosted mode.
func New(cfg Config) (http.Handler, error) {
	if cfg.MCP == nil {
		return nil, errors.New("hosted: no MCP handler")
	}
	if cfg.MaxBodyBytes <= 0 {
		return nil, fmt.Errorf("hosted: MaxBodyBytes must be positive (got %d)", cfg.MaxBodyBytes)
	}
	if cfg.BodyTimeout < 0 {
		return nil, fmt.Errorf("hosted: BodyTimeout must not be negative (got %s)", cfg.BodyTimeout)
	}
	if cfg.BodyTimeout == 0 {
		cfg.BodyTimeout = DefaultBodyTimeout
	}
	if cfg.MaxRequestBytesPerUser == 0 {
		cfg.MaxRequestBytesPerUser = DefaultRequestBodiesPerUser * cfg.MaxBodyBytes
	}
	if cfg.MaxRequestBytesTotal == 0 {
		cfg.MaxRequestBytesTotal = DefaultRequestBodiesTotal * cfg.MaxBodyBytes
	}
	requests, err := newRequestBudget(cfg.MaxRequestBytesPerUser, cfg.MaxRequestBytesTotal, cfg.Metrics)
	if err != nil {
		return nil, fmt.Errorf("hosted: %w", err)
	}
	origins, err := ParseOrigins(cfg.AllowedOrigins)
	if err != nil {
		return nil, fmt.Errorf("hosted: %w", err)
	}
	logged := func(h http.Handler) http.Handler {
		if cfg.AccessLog == nil {
			return h
		}
		return accesslog.Middleware(cfg.AccessLog, h)
	}

	var mcp http.Handler = cfg.MCP
	if cfg.Rate != nil {
		mcp = rateLimited(cfg.Rate, cfg.Metrics, mcp)
	}
	mcp = peeked(cfg.MaxBodyBytes, requests, mcp)
	mcp = withUser(mcp)
	if cfg.Auth != nil {
		mcp = cfg.Auth.Middleware(mcp)
	} else {
		mcp = anonymous(mcp)
	}

	mcp = originChecked(origins, mcp)

	mux := http.NewServeMux()
	mux.Handle(PathMCP, logged(mcp))
	if cfg.Auth != nil {
		mux.Handle(auth.MetadataPath, logged(public(cfg.Auth.MetadataHandler())))
	}
	mux.HandleFunc("GET "+PathHealth, func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET "+PathReady, func(w http.ResponseWriter, r *http.Request) {
		if err := ready(r.Context(), cfg); err != nil {
			http.Error(w, cfg.Redactor.String("not ready: "+err.Error()), http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ready\n")
	})
	if cfg.Metrics != nil && !cfg.MetricsElsewhere {
		mux.Handle("GET "+PathMetrics, cfg.Metrics.Handler())
	}
	mux.Handle("/", logged(http.NotFoundHandler()))
	return bounded(cfg.BodyTimeout, mux), nil
}

// AuthFailureHook returns what auth.Config.OnFailure should be: it counts
// the failure in m (which may be nil) and marks the access log line.
func AuthFailureHook(m *metrics.Metrics) func(*http.Request, auth.Reason) {
	return func(r *http.Request, reason auth.Reason) {
		m.AuthFailure(string(reason))
		accesslog.FromContext(r.Context()).SetOutcome("unauthenticated", string(reason))
	}
}

// AuthThrottledHook returns what auth.Config.OnThrottled should be: it
// counts the refusal in m (which may be nil) under the limit
// metrics.LimitAuthFailures and marks the access log line rate_limited,
// of that kind.
func AuthThrottledHook(m *metrics.Metrics) func(*http.Request) {
	return func(r *http.Request) {
		m.Refused(metrics.LimitAuthFailures)
		accesslog.FromContext(r.Context()).SetOutcome("rate_limited", metrics.LimitAuthFailures)
	}
}

// AuthReasons returns auth.Reasons as strings, for metrics.New.
func AuthReasons() []string {
	out := make([]string, len(auth.Reasons))
	for i, r := range auth.Reasons {
		out[i] = string(r)
	}
	return out
}

// AllReady returns a readiness check (Config.Ready) that passes when every
// one of checks does: the module compiled, the specs loaded, the upstream
// MCP servers connected, each adds its own. With none, it always passes.
func AllReady(checks ...func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		for _, check := range checks {
			if err := check(ctx); err != nil {
				return err
			}
		}
		return nil
	}
}

func ready(ctx context.Context, cfg Config) error {
	ctx, cancel := context.WithTimeout(ctx, ReadyTimeout)
	defer cancel()
	if cfg.Ready != nil {
		if err := cfg.Ready(ctx); err != nil {
			return err
		}
	}
	if cfg.Auth != nil {
		return cfg.Auth.Ready(ctx)
	}
	return nil
}

// public lets pages on any origin read the responses (the metadata, which
// browser-based clients read to find the authorization server).
func public(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		next.ServeHTTP(w, r)
	})
}

// anonymous hands every request on as Anonymous.
func anonymous(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(auth.WithUser(r.Context(), Anonymous())))
	})
}

// withUser writes the request's user to the access log.
func withUser(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, ok := auth.UserFrom(r.Context()); ok {
			accesslog.FromContext(r.Context()).SetUser(u.Subject)
		}
		next.ServeHTTP(w, r)
	})
}

// callsKey is the context key of the number of tools/call requests.
type callsKey struct{}

// Calls returns how many tools/call requests the request's JSON-RPC body
// holds (0 outside the handler).
func Calls(ctx context.Context) int {
	n, _ := ctx.Value(callsKey{}).(int)
	return n
}

// peeked reads a POST body (up to max bytes: 413 beyond; 408 when it
// does not arrive in time, which bounded sees to), notes its JSON-RPC
// method and tool in the access log and the number of tools/call requests
// in the context, and hands the body on unchanged. A message (not a
// batch) is decoded once, and handed on decoded too
// (mcpserver.WithMessage): the MCP transport behind does not read it again.
func peeked(max int64, requests *requestBudget, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		declared := max
		if r.ContentLength >= 0 && r.ContentLength < max {
			declared = r.ContentLength
		}
		release := requests.hold(w, r, declared)
		if release == nil {
			return
		}
		defer func() { release() }()
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
		if err != nil {
			var tooLarge *http.MaxBytesError
			var netErr net.Error
			switch {
			case errors.As(err, &tooLarge):
				accesslog.FromContext(r.Context()).SetOutcome("too_large", "")
				http.Error(w, fmt.Sprintf("request body too large: at most %d bytes", max), http.StatusRequestEntityTooLarge)
			case errors.As(err, &netErr) && netErr.Timeout():
				accesslog.FromContext(r.Context()).SetOutcome("body_timeout", "")
				http.Error(w, "the request body did not arrive in time", http.StatusRequestTimeout)
			default:
				http.Error(w, "reading the request body failed", http.StatusBadRequest)
			}
			return
		}
		// Held at its weight from here on: what decoding it may cost.
		if extra := mcpserver.RequestWeight(body) - declared; extra > 0 {
			more := requests.hold(w, r, extra)
			if more == nil {
				return
			}
			all := release
			release = func() { more(); all() }
		}
		ctx := r.Context()
		calls, method, tool := 0, "", ""
		if b := bytes.TrimSpace(body); len(b) > 0 && b[0] == '[' {
			calls, method, tool = inspectBatch(b)
		} else {
			// One message, decoded once: the MCP transport takes it from
			// the context rather than read the body again.
			m := mcpserver.DecodeMessage(body)
			ctx = mcpserver.WithMessage(ctx, m)
			method, tool = m.Method(), m.Tool()
			if method == ToolsCall {
				calls = 1
			}
		}
		accesslog.FromContext(ctx).SetCall(method, tool)
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r.WithContext(context.WithValue(ctx, callsKey{}, calls)))
	})
}

// envelope is the part of a JSON-RPC message of a batch the handler looks
// at.
type envelope struct {
	Method string `json:"method"`
	Params struct {
		Name string `json:"name"`
	} `json:"params"`
}

// inspectBatch returns how many tools/call requests a JSON-RPC batch
// holds, and the method and tool name of its first message. The MCP
// transport refuses batches; the rate limit still charges their calls.
func inspectBatch(body []byte) (calls int, method, tool string) {
	var msgs []envelope
	_ = json.Unmarshal(body, &msgs) // type errors still fill what they can
	for _, m := range msgs {
		if m.Method == ToolsCall {
			calls++
		}
	}
	if len(msgs) > 0 {
		method = msgs[0].Method
		if method == ToolsCall {
			tool = msgs[0].Params.Name
		}
	}
	return calls, method, tool
}

// rateLimited charges the user one execution per tools/call and refuses
// requests over the rate with 429.
func rateLimited(rate *limit.Rate[auth.User], m *metrics.Metrics, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, _ := auth.UserFrom(r.Context())
		if ok, retry := rate.Allow(user, Calls(r.Context()), time.Now()); !ok {
			m.Refused(metrics.LimitRate)
			accesslog.FromContext(r.Context()).SetOutcome("rate_limited", "")
			rate.Refuse(w, retry)
			return
		}
		next.ServeHTTP(w, r)
	})
}
