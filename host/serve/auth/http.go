package auth

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/toolscript/toolscript/host/contract/limit"
	"github.com/toolscript/toolscript/host/serve/clientaddr"
)

// MetadataPath is where MetadataHandler belongs: the RFC 9728 protected
// resource metadata of a resource at the server's root.
const MetadataPath = "/.well-known/oauth-protected-resource"

// Middleware returns next behind authentication. A request without a
// valid bearer token gets 401, one whose token lacks a required scope 403,
// each with a WWW-Authenticate challenge that points to the metadata; the
// reason goes to the log and to Config.OnFailure, never to the client. A
// request whose token is not in the cache, from a client address past its
// bound on failures (Config.FailuresPerMinute), gets 429 with Retry-After
// and is told to Config.OnThrottled, before its token is looked at
// further. An accepted request reaches next with its User and its token's
// Claims in the context (UserFrom, ClaimsFrom).
func (a *Authenticator) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, sent, err := bearerToken(r)
		if err == nil {
			err = checkLength(token)
		}
		if err != nil {
			a.refuse(w, r, sent, err)
			return
		}
		user, claims, retryAfter, err := a.verifyFrom(r, token)
		switch {
		case retryAfter > 0:
			a.throttle(w, r, retryAfter)
		case err != nil:
			a.refuse(w, r, sent, err)
		default:
			next.ServeHTTP(w, r.WithContext(WithClaims(WithUser(r.Context(), user), claims)))
		}
	})
}

// verifyFrom checks the token of r: from the cache, or, while r's client
// address is within its bound on failures, by verifying it, a failure
// charged to that address. Past the bound it returns how long until the
// address may try again.
func (a *Authenticator) verifyFrom(r *http.Request, token string) (User, Claims, time.Duration, error) {
	now := a.cfg.Now()
	if u, claims, ok := a.cache.get(token, now); ok {
		return u, claims, 0, nil
	}
	if a.failures == nil {
		u, claims, err := a.verify(r.Context(), token, now)
		return u, claims, 0, err
	}
	// The attempt is charged before it is made (so that requests at once
	// cannot pass the bound together) and given back if it passes.
	giveBack, retryAfter, ok := a.failures.Reserve(clientaddr.OfRemote(r.RemoteAddr), now)
	if !ok {
		return User{}, nil, max(retryAfter, time.Nanosecond), nil
	}
	u, claims, err := a.verify(r.Context(), token, now)
	if err == nil {
		giveBack(now)
	}
	return u, claims, 0, err
}

// throttle answers a request from a client address past its bound on
// failures: 429 Too Many Requests with Retry-After.
func (a *Authenticator) throttle(w http.ResponseWriter, r *http.Request, retryAfter time.Duration) {
	a.log.LogAttrs(r.Context(), slog.LevelDebug, "auth: request throttled: too many failed authentications",
		slog.String("remote", r.RemoteAddr),
		slog.String("path", r.URL.Path))
	if a.cfg.OnThrottled != nil {
		a.cfg.OnThrottled(r)
	}
	h := w.Header()
	limit.SetRetryAfter(h, retryAfter)
	h.Set("Cache-Control", "no-store")
	http.Error(w, fmt.Sprintf("too many requests: at most %d failed authentications a minute from one address", a.cfg.FailuresPerMinute),
		http.StatusTooManyRequests)
}

// bearerToken returns the request's bearer token; sent is false when the
// request carries no credentials of the Bearer scheme (RFC 6750 then wants
// a challenge without an error code).
func bearerToken(r *http.Request) (token string, sent bool, err error) {
	values := r.Header.Values("Authorization")
	switch len(values) {
	case 0:
		return "", false, refused(ReasonMissing, errors.New("no Authorization header"))
	case 1:
	default:
		return "", true, refused(ReasonMalformed, errors.New("several Authorization headers"))
	}
	scheme, token, _ := strings.Cut(values[0], " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", false, refused(ReasonMissing, errors.New("the Authorization header is not of the Bearer scheme"))
	}
	token = strings.TrimSpace(token)
	if token == "" {
		return "", true, refused(ReasonMalformed, errors.New("empty bearer token"))
	}
	return token, true, nil
}

// refuse answers a refused request.
func (a *Authenticator) refuse(w http.ResponseWriter, r *http.Request, sent bool, err error) {
	reason := ReasonClaims
	var e *Error
	if errors.As(err, &e) {
		reason = e.Reason
	}
	a.log.LogAttrs(r.Context(), slog.LevelInfo, "auth: request refused",
		slog.String("reason", string(reason)),
		slog.String("error", err.Error()),
		slog.String("remote", r.RemoteAddr),
		slog.String("path", r.URL.Path))
	if a.cfg.OnFailure != nil {
		a.cfg.OnFailure(r, reason)
	}

	challenge := "Bearer "
	status, message := http.StatusUnauthorized, "unauthorized: a valid bearer token is required"
	switch {
	case reason == ReasonScope:
		status, message = http.StatusForbidden, "forbidden: the token lacks a required scope"
		challenge += `error="insufficient_scope", scope=` + quote(strings.Join(a.cfg.Scopes, " ")) + ", "
	case sent:
		challenge += `error="invalid_token", `
	}
	challenge += "resource_metadata=" + quote(a.baseURL(r)+MetadataPath)
	h := w.Header()
	h.Set("WWW-Authenticate", challenge)
	h.Set("Cache-Control", "no-store")
	http.Error(w, message, status)
}

// baseURL returns the server's public base URL: the configured one, or the
// request's scheme and host.
func (a *Authenticator) baseURL(r *http.Request) string {
	if a.cfg.PublicURL != "" {
		return a.cfg.PublicURL
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	host := r.Host
	if !validHost(host) {
		host = "localhost"
	}
	return scheme + "://" + host
}

// validHost reports whether h looks like a host[:port]: the only bytes a
// base URL taken from a request may hold.
func validHost(h string) bool {
	if h == "" || len(h) > 255 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '.', c == '-', c == ':', c == '[', c == ']', c == '_':
		default:
			return false
		}
	}
	return true
}

// quote writes s as an HTTP quoted-string.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
	return b.String()
}

// ResourceMetadata is the RFC 9728 protected resource metadata.
type ResourceMetadata struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers"`
	ScopesSupported        []string `json:"scopes_supported,omitempty"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ResourceName           string   `json:"resource_name,omitempty"`
}

// Metadata returns the metadata of the resource r was sent to.
func (a *Authenticator) Metadata(r *http.Request) ResourceMetadata {
	return ResourceMetadata{
		Resource:               a.baseURL(r),
		AuthorizationServers:   []string{a.cfg.Issuer},
		ScopesSupported:        a.cfg.Scopes,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "toolscript",
	}
}

// MetadataHandler serves the metadata (at MetadataPath) to anyone: it is
// public, and browser-based clients read it from other origins.
func (a *Authenticator) MetadataHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		switch r.Method {
		case http.MethodGet, http.MethodHead:
		case http.MethodOptions:
			h.Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
			w.WriteHeader(http.StatusNoContent)
			return
		default:
			h.Set("Allow", "GET, HEAD, OPTIONS")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		body, err := json.Marshal(a.Metadata(r))
		if err != nil {
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		}
		h.Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
}
