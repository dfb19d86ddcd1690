// Package limit bounds what each user of the hosted mode may use
// (docs/hosted.md, "Limits per user"): a rate of
// executions per minute (Rate, whose Middleware answers 429 with
// Retry-After), and execution slots per user and overall that a call waits
// for up to a bound and then fails (Slots). Both are keyed by any
// comparable value, such as auth.User, and keep state only for the keys in
// use (a Rate made by NewBoundedRate, for at most a number of them: the
// failed authentications per client address are one). Bytes are budgets
// of bytes held at once (the host memory a script's calls hold: per
// execution and server-wide), a Hold is bytes taken from several of them
// as one, and KeyedBytes are a budget per key (the
// bytes of a user's responses not yet written).
package limit

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"golang.org/x/time/rate"
)

// Rate limits events per key to a number a minute, with bursts of up to
// that number: a token bucket per key (golang.org/x/time/rate) that refills
// evenly over the minute. It keeps state only for the keys active in the
// last minute or two, and, when made by NewBoundedRate, for at most a
// number of keys: past it the least recently used key is forgotten (its
// bucket starts full again), by github.com/hashicorp/golang-lru/v2. It is
// safe for concurrent use.
type Rate[K comparable] struct {
	perMinute int
	limit     rate.Limit

	mu      sync.Mutex
	buckets *simplelru.LRU[K, *bucket]
	sweptAt time.Time
}

type bucket struct {
	lim  *rate.Limiter
	last time.Time // the last event taken
}

// NewRate returns a Rate of perMinute events a minute per key; perMinute
// must be positive.
func NewRate[K comparable](perMinute int) (*Rate[K], error) {
	return NewBoundedRate[K](perMinute, math.MaxInt)
}

// NewBoundedRate returns a Rate of perMinute events a minute per key that
// keeps state for at most maxKeys keys, forgetting the least recently
// used; both must be positive. The keys are what a client chooses (its
// address, say): the bound is what many of them may cost in memory.
func NewBoundedRate[K comparable](perMinute, maxKeys int) (*Rate[K], error) {
	if perMinute <= 0 {
		return nil, fmt.Errorf("limit: a rate of %d a minute: must be positive", perMinute)
	}
	buckets, err := simplelru.NewLRU[K, *bucket](maxKeys, nil)
	if err != nil {
		return nil, fmt.Errorf("limit: a rate for %d keys: %w", maxKeys, err)
	}
	return &Rate[K]{
		perMinute: perMinute,
		limit:     rate.Every(time.Minute / time.Duration(perMinute)),
		buckets:   buckets,
	}, nil
}

// PerMinute returns the rate.
func (r *Rate[K]) PerMinute() int { return r.perMinute }

// Allow takes n events for key at now, all or none. When it refuses,
// retryAfter is how long until n events would be allowed (a minute for
// more than the rate allows at once).
func (r *Rate[K]) Allow(key K, n int, now time.Time) (ok bool, retryAfter time.Duration) {
	if n <= 0 {
		return true, 0
	}
	_, retryAfter, ok = r.reserve(key, n, now)
	return ok, retryAfter
}

// Reserve takes one event for key at now, as Allow does, and returns with
// it the function that gives the event back (at its time): for an event
// charged before it is known to count, such as an attempt charged only
// when it fails. Given back, the event is as if never taken, as far as the
// events taken since allow.
func (r *Rate[K]) Reserve(key K, now time.Time) (giveBack func(at time.Time), retryAfter time.Duration, ok bool) {
	res, retryAfter, ok := r.reserve(key, 1, now)
	if !ok {
		return nil, retryAfter, false
	}
	return res.CancelAt, 0, true
}

// reserve takes n (positive) events for key at now, all or none.
func (r *Rate[K]) reserve(key K, n int, now time.Time) (res *rate.Reservation, retryAfter time.Duration, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sweep(now)
	b, found := r.buckets.Get(key)
	if !found {
		b = &bucket{lim: rate.NewLimiter(r.limit, r.perMinute)}
		r.buckets.Add(key, b)
	}
	if n > r.perMinute {
		return nil, time.Minute, false
	}
	res = b.lim.ReserveN(now, n)
	if delay := res.DelayFrom(now); delay > 0 {
		res.CancelAt(now)
		return nil, delay, false
	}
	b.last = now
	return res, 0, true
}

// sweep forgets, once a minute, the buckets idle for a minute: they are
// full again, as a new one would be. The keys held are those active in
// the last two minutes at most.
func (r *Rate[K]) sweep(now time.Time) {
	if now.Sub(r.sweptAt) < time.Minute {
		return
	}
	r.sweptAt = now
	for _, k := range r.buckets.Keys() {
		if b, _ := r.buckets.Peek(k); now.Sub(b.last) >= time.Minute {
			r.buckets.Remove(k)
		}
	}
}

// keys returns the number of keys with state.
func (r *Rate[K]) keys() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buckets.Len()
}

// Middleware returns next behind the rate: cost says whose events a
// request is and how many (0 for a request that is not counted, such as
// one that runs no script). A request over the rate gets 429 Too Many
// Requests with Retry-After in whole seconds, rounded up, and never
// reaches next.
func (r *Rate[K]) Middleware(next http.Handler, cost func(*http.Request) (key K, n int)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		key, n := cost(req)
		if ok, retry := r.Allow(key, n, time.Now()); !ok {
			r.Refuse(w, retry)
			return
		}
		next.ServeHTTP(w, req)
	})
}

// Refuse answers a request over the rate: 429 Too Many Requests with
// Retry-After, retryAfter in whole seconds rounded up.
func (r *Rate[K]) Refuse(w http.ResponseWriter, retryAfter time.Duration) {
	SetRetryAfter(w.Header(), retryAfter)
	http.Error(w, fmt.Sprintf("too many requests: at most %d executions a minute", r.perMinute),
		http.StatusTooManyRequests)
}

// SetRetryAfter sets h's Retry-After to retryAfter in whole seconds,
// rounded up, at least 1: the one form of every 429 the limits answer.
func SetRetryAfter(h http.Header, retryAfter time.Duration) {
	h.Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(retryAfter.Seconds())))))
}
