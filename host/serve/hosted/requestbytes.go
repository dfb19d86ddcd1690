package hosted

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/toolscript/toolscript/host/contract/limit"
	"github.com/toolscript/toolscript/host/serve/accesslog"
	"github.com/toolscript/toolscript/host/serve/auth"
	"github.com/toolscript/toolscript/host/serve/mcpserver"
	"github.com/toolscript/toolscript/host/serve/metrics"
)

// The memory the requests to /mcp hold, from the reading of their body to
// the end of their response (a call waiting for its slot, its script
// running), is bounded per user and in all: each request is weighed by
// what it may cost decoded (mcpserver.RequestWeight), and its weight is held in its
// user's budget and in the server's while it is handled. A body's
// declared length (Content-Length; without one, the largest body) is held
// before a byte of it is read, so that bodies on their way cannot pass
// the bounds either; once read, it is held at its weight.
//
// A request that would pass its user's budget is refused with 429 (413
// when its weight alone is more than the budget), one that would pass
// the server's with 503: each with Retry-After, at once, holding nothing.

// The defaults of Config.MaxRequestBytesPerUser and MaxRequestBytesTotal,
// in bodies of the largest size (MaxBodyBytes): the weights of two such
// bodies of one long string of one user's at once, of eight of everyone's.
const (
	DefaultRequestBodiesPerUser = 2 * mcpserver.RequestBodyCopies
	DefaultRequestBodiesTotal   = 8 * mcpserver.RequestBodyCopies
)

// requestBudget holds the weights of the requests being handled.
type requestBudget struct {
	perUser *limit.KeyedBytes[auth.User]
	total   *limit.Bytes
	metrics *metrics.Metrics
}

func newRequestBudget(perUser, total int64, m *metrics.Metrics) (*requestBudget, error) {
	users, err := limit.NewKeyedBytes[auth.User]("one user's requests", perUser)
	if err != nil {
		return nil, err
	}
	all, err := limit.NewBytes("the requests of all users", total)
	if err != nil {
		return nil, err
	}
	return &requestBudget{perUser: users, total: all, metrics: m}, nil
}

// hold holds n bytes of the request's user's budget and of the server's,
// at once; on failure it answers the request and returns nil.
func (b *requestBudget) hold(w http.ResponseWriter, r *http.Request, n int64) (release func()) {
	user, _ := auth.UserFrom(r.Context())
	done, cancel := context.WithCancel(r.Context())
	cancel() // never wait for the server's budget: refuse
	release, err := b.perUser.Reserve(done, user, n, b.total)
	if err == nil {
		return release
	}
	b.metrics.Refused(metrics.LimitRequestBytes)
	accesslog.FromContext(r.Context()).SetOutcome("request_bytes", "")
	w.Header().Set("Retry-After", "1")
	var e *limit.BytesError
	switch {
	case errors.As(err, &e) && e.Waited == nil:
		http.Error(w, fmt.Sprintf("request too large: decoded it may take %d bytes, more than the %d %s may hold", n, e.Size, e.Name),
			http.StatusRequestEntityTooLarge)
	case errors.As(err, &e) && e.Name == b.total.Name():
		http.Error(w, "the server holds as many requests as it may: retry", http.StatusServiceUnavailable)
	default:
		http.Error(w, "too many requests of this user at once: retry when one has been answered", http.StatusTooManyRequests)
	}
	return nil
}
