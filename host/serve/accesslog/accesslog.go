// Package accesslog writes the hosted mode's access log: one JSON line per
// HTTP request through log/slog (docs/hosted.md: time, user, method, tool,
// duration, outcome and error kind), and never a script's text, its
// results or a credential.
//
// The Middleware puts a Record in each request's context; the layers
// inside fill it in as they learn things (authentication the user, the MCP
// layer the JSON-RPC method, the tool, the outcome and the error kind),
// and the Middleware writes it when the request is done.
package accesslog

import (
	"context"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"
)

// MaxFieldBytes caps each text field a client can choose (the method and
// tool names): longer values are cut.
const MaxFieldBytes = 128

// Record is what one request's log line says beyond what HTTP tells. Its
// setters are safe for concurrent use and do nothing on a nil Record, so
// code can call them whether or not a Middleware is in front.
type Record struct {
	mu        sync.Mutex
	user      string
	method    string
	tool      string
	outcome   string
	errorKind string
	// decisions counts what the [[policy]] rules decided of the
	// execution's effects, by decision (allowed, denied, ...).
	decisions map[string]int
}

type recordKey struct{}

// FromContext returns the request's Record, or nil outside the Middleware.
func FromContext(ctx context.Context) *Record {
	r, _ := ctx.Value(recordKey{}).(*Record)
	return r
}

// NewContext returns ctx carrying r.
func NewContext(ctx context.Context, r *Record) context.Context {
	return context.WithValue(ctx, recordKey{}, r)
}

// SetUser records who made the request.
func (r *Record) SetUser(user string) {
	r.set(func() { r.user = cut(user) })
}

// SetCall records the JSON-RPC method of the request ("tools/call") and,
// for a tool call, the tool's name.
func (r *Record) SetCall(method, tool string) {
	r.set(func() { r.method, r.tool = cut(method), cut(tool) })
}

// SetOutcome records how the request ended: "ok", or "error" with the
// execution's error kind (result.Kind), or another word the layer that
// ended it chose ("cancelled", "busy", "unauthenticated"). Without it, the
// line says what the HTTP status says.
func (r *Record) SetOutcome(outcome, errorKind string) {
	r.set(func() { r.outcome, r.errorKind = cut(outcome), cut(errorKind) })
}

// set runs update under the record's lock; on a nil record (a request
// without an access log) it does nothing.
func (r *Record) set(update func()) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	update()
}

// maxDecisionKinds bounds the decision names a line counts.
const maxDecisionKinds = 8

// AddDecision counts one decision the rules made of an effect of the
// request's execution ("allowed", "denied", "approved", "declined",
// "ask"): the line gets "decisions", each name's count.
func (r *Record) AddDecision(decision string) {
	if r == nil || decision == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.decisions == nil {
		r.decisions = map[string]int{}
	}
	if _, ok := r.decisions[decision]; ok || len(r.decisions) < maxDecisionKinds {
		r.decisions[cut(decision)]++
	}
}

// cut keeps at most MaxFieldBytes of s, whole UTF-8 sequences only.
func cut(s string) string {
	if len(s) <= MaxFieldBytes {
		return s
	}
	n := MaxFieldBytes
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// Middleware returns next with an access log line written to log for
// every request, when it is done.
func Middleware(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &Record{}
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r.WithContext(NewContext(r.Context(), rec)))
		status := sw.status
		if status == 0 {
			status = http.StatusOK // nothing written: net/http sends 200
		}

		rec.mu.Lock()
		user, method, tool, outcome, kind := rec.user, rec.method, rec.tool, rec.outcome, rec.errorKind
		var decisions []any
		for _, name := range slices.Sorted(maps.Keys(rec.decisions)) {
			decisions = append(decisions, slog.Int(name, rec.decisions[name]))
		}
		rec.mu.Unlock()
		if outcome == "" {
			outcome = outcomeOf(status)
		}
		attrs := []slog.Attr{
			slog.String("http_method", r.Method),
			slog.String("path", cut(r.URL.Path)),
			slog.Int("status", status),
			slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000),
			slog.Int64("bytes", sw.bytes),
			slog.String("remote", r.RemoteAddr),
			slog.String("user", user),
			slog.String("method", method),
			slog.String("tool", tool),
			slog.String("outcome", outcome),
		}
		if kind != "" {
			attrs = append(attrs, slog.String("error_kind", kind))
		}
		if len(decisions) > 0 {
			attrs = append(attrs, slog.Group("decisions", decisions...))
		}
		log.LogAttrs(context.WithoutCancel(r.Context()), slog.LevelInfo, "request", attrs...)
	})
}

// outcomeOf names the outcome an HTTP status tells.
func outcomeOf(status int) string {
	switch {
	case status < 400:
		return "ok"
	case status == http.StatusUnauthorized, status == http.StatusForbidden:
		return "unauthenticated"
	case status == http.StatusTooManyRequests:
		return "rate_limited"
	case status < 500:
		return "bad_request"
	}
	return "error"
}

// statusWriter notes the status and the size of a response. It passes
// Flush on (the streamable HTTP transport streams events) and unwraps for
// http.ResponseController.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 && status >= 200 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

func (w *statusWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
