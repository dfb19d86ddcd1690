package limit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestRate(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type step struct {
		key   string
		n     int
		at    time.Duration // after t0
		ok    bool
		retry time.Duration // when refused
	}
	tests := []struct {
		name      string
		perMinute int
		steps     []step
	}{
		{name: "a burst of the rate, then one every minute/rate", perMinute: 3, steps: []step{
			{"alice", 1, 0, true, 0},
			{"alice", 1, 0, true, 0},
			{"alice", 1, 0, true, 0},
			{"alice", 1, 0, false, 20 * time.Second},
			{"alice", 1, 10 * time.Second, false, 10 * time.Second},
			{"alice", 1, 20 * time.Second, true, 0},
			{"alice", 1, 20 * time.Second, false, 20 * time.Second},
		}},
		{name: "users are counted apart", perMinute: 2, steps: []step{
			{"alice", 2, 0, true, 0},
			{"alice", 1, 0, false, 30 * time.Second},
			{"bob", 1, 0, true, 0},
			{"bob", 1, 0, true, 0},
			{"bob", 1, 0, false, 30 * time.Second},
		}},
		{name: "several events at once, all or none", perMinute: 4, steps: []step{
			{"alice", 3, 0, true, 0},
			{"alice", 2, 0, false, 15 * time.Second},
			{"alice", 1, 0, true, 0},
		}},
		{name: "more than the rate at once", perMinute: 4, steps: []step{
			{"alice", 5, 0, false, time.Minute},
			{"alice", 4, 0, true, 0},
		}},
		{name: "nothing to count", perMinute: 1, steps: []step{
			{"alice", 1, 0, true, 0},
			{"alice", 0, 0, true, 0},
		}},
		{name: "a minute refills", perMinute: 2, steps: []step{
			{"alice", 2, 0, true, 0},
			{"alice", 2, time.Minute, true, 0},
			{"alice", 1, time.Minute, false, 30 * time.Second},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := NewRate[string](tt.perMinute)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range tt.steps {
				ok, retry := r.Allow(s.key, s.n, t0.Add(s.at))
				if ok != s.ok || retry != s.retry {
					t.Errorf("step %d (%s takes %d at %s): %v, retry after %s; want %v, %s", i, s.key, s.n, s.at, ok, retry, s.ok, s.retry)
				}
			}
		})
	}
	if _, err := NewRate[string](0); err == nil {
		t.Error("NewRate(0): no error")
	}
}

// TestRateForgetsIdleKeys: the state of a key goes once it is idle.
func TestRateForgetsIdleKeys(t *testing.T) {
	r, _ := NewRate[int](10)
	t0 := time.Now()
	for k := range 1000 {
		r.Allow(k, 1, t0)
	}
	if n := r.keys(); n != 1000 {
		t.Fatalf("%d keys, want 1000", n)
	}
	r.Allow(-1, 1, t0.Add(2*time.Minute))
	if n := r.keys(); n != 1 {
		t.Errorf("%d keys two minutes later, want 1", n)
	}
}

// TestBoundedRate: a bounded Rate holds at most its number of keys,
// however many come, forgetting the least recently used first.
func TestBoundedRate(t *testing.T) {
	r, err := NewBoundedRate[int](2, 100)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	r.Allow(-1, 2, t0) // the key in use, over its rate
	for k := range 10000 {
		r.Allow(k, 1, t0)
		if k%50 == 0 {
			if ok, _ := r.Allow(-1, 1, t0); ok {
				t.Fatal("the key in use was forgotten and refilled")
			}
		}
		if n := r.keys(); n > 100 {
			t.Fatalf("%d keys in a rate of 100", n)
		}
	}
	if ok, _ := r.Allow(0, 1, t0); !ok {
		t.Error("a key forgotten long ago is not full again")
	}
	if _, err := NewBoundedRate[int](1, 0); err == nil {
		t.Error("NewBoundedRate for no keys: no error")
	}
}

// TestRateReserve: an event reserved and given back is as if never taken;
// one kept counts.
func TestRateReserve(t *testing.T) {
	r, _ := NewRate[string](2)
	t0 := time.Now()
	for i := range 5 {
		giveBack, _, ok := r.Reserve("alice", t0)
		if !ok {
			t.Fatalf("reservation %d given back each time: refused", i)
		}
		giveBack(t0)
	}
	for i := range 2 {
		if _, _, ok := r.Reserve("alice", t0); !ok {
			t.Fatalf("kept reservation %d: refused", i)
		}
	}
	giveBack, retry, ok := r.Reserve("alice", t0)
	if ok || giveBack != nil || retry != 30*time.Second {
		t.Errorf("a third kept reservation: ok %v, retry after %s; want refused, 30s", ok, retry)
	}
}

func TestRateMiddleware(t *testing.T) {
	r, _ := NewRate[string](3)
	var reached atomic.Int64
	h := r.Middleware(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		reached.Add(1)
		io.WriteString(w, "ran")
	}), func(req *http.Request) (string, int) {
		if req.Method != http.MethodPost {
			return "", 0
		}
		return req.Header.Get("X-User"), 1
	})
	srv := httptest.NewServer(h)
	defer srv.Close()
	send := func(method, user string) *http.Response {
		req, _ := http.NewRequest(method, srv.URL, nil)
		req.Header.Set("X-User", user)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	for i := range 3 {
		if resp := send("POST", "alice"); resp.StatusCode != 200 {
			t.Fatalf("request %d: status %d", i, resp.StatusCode)
		}
	}
	resp := send("POST", "alice")
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("fourth request: status %d, want 429", resp.StatusCode)
	}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || s < 1 || s > 20 {
		t.Errorf("Retry-After %q, want whole seconds in 1..20", resp.Header.Get("Retry-After"))
	}
	if got := reached.Load(); got != 3 {
		t.Errorf("the handler ran %d times, want 3", got)
	}
	// Requests not counted, and other users, go through.
	if resp := send("GET", "alice"); resp.StatusCode != 200 {
		t.Errorf("uncounted request: status %d", resp.StatusCode)
	}
	if resp := send("POST", "bob"); resp.StatusCode != 200 {
		t.Errorf("another user: status %d", resp.StatusCode)
	}
}

func TestSlots(t *testing.T) {
	const short = 20 * time.Millisecond // how long a call that must fail waits
	tests := []struct {
		name    string
		overall int
		perKey  int
		held    []string // keys that hold a slot
		key     string   // the key that asks next
		perUser bool     // its BusyError, when it must fail
		ok      bool
	}{
		{name: "free", overall: 4, perKey: 2, held: []string{"alice"}, key: "alice", ok: true},
		{name: "the user's slots taken", overall: 4, perKey: 2, held: []string{"alice", "alice"}, key: "alice", perUser: true},
		{name: "another user's slots taken", overall: 4, perKey: 2, held: []string{"alice", "alice"}, key: "bob", ok: true},
		{name: "all slots taken", overall: 2, perKey: 2, held: []string{"alice", "bob"}, key: "carol", perUser: false},
		{name: "per user capped by overall", overall: 1, perKey: 5, held: []string{"alice"}, key: "alice", perUser: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Time here is synctest's: a call that must fail waits its
			// short while at once.
			synctest.Test(t, func(t *testing.T) {
				s, err := NewSlots[string](tt.overall, tt.perKey, short)
				if err != nil {
					t.Fatal(err)
				}
				for _, k := range tt.held {
					release, err := s.Acquire(context.Background(), k)
					if err != nil {
						t.Fatalf("holding a slot for %s: %v", k, err)
					}
					defer release()
				}
				release, err := s.Acquire(context.Background(), tt.key)
				if tt.ok {
					if err != nil {
						t.Fatalf("Acquire: %v", err)
					}
					release()
					return
				}
				var busy *BusyError
				if !errors.As(err, &busy) || !errors.Is(err, ErrBusy) {
					t.Fatalf("Acquire: %v, want a BusyError", err)
				}
				if busy.PerUser != tt.perUser {
					t.Errorf("BusyError %+v, want PerUser %v", busy, tt.perUser)
				}
			})
		})
	}
	if _, err := NewSlots[string](0, 1, time.Second); err == nil {
		t.Error("NewSlots(0, ...): no error")
	}
	if _, err := NewSlots[string](1, 1, -time.Second); err == nil {
		t.Error("NewSlots with a negative wait: no error")
	}
}

// TestSlotsUnboundedWait: with a wait of 0, a waiter waits until a slot is
// given back or its context ends, and never gets a BusyError.
func TestSlotsUnboundedWait(t *testing.T) {
	s, err := NewSlots[string](1, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	release, err := s.Acquire(context.Background(), "alice")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancelled := acquireAsync(ctx, s, "bob")
	got := acquireAsync(context.Background(), s, "alice")
	cancel()
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled waiter: %v", err)
	}
	release()
	if err := <-got; err != nil {
		t.Errorf("waiter: %v", err)
	}
	if s.InUse() != 0 || s.keyCount() != 0 {
		t.Errorf("after all returned: %d in use, %d keys with state", s.InUse(), s.keyCount())
	}
}

// TestSlotsWaiters: a waiter gets a slot given back, a cancelled waiter
// leaves, and a user waiting for its own slot holds none of the overall
// ones.
func TestSlotsWaiters(t *testing.T) {
	s, _ := NewSlots[string](2, 1, time.Minute)
	release, err := s.Acquire(context.Background(), "alice")
	if err != nil {
		t.Fatal(err)
	}

	got := acquireAsync(context.Background(), s, "alice")
	ctx, cancel := context.WithCancel(context.Background())
	cancelled := acquireAsync(ctx, s, "alice")
	cancel()
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled waiter: %v", err)
	}

	// Bob is served although Alice has a waiter.
	rb, err := s.Acquire(context.Background(), "bob")
	if err != nil {
		t.Fatalf("bob: %v", err)
	}
	rb()

	release()
	release() // a second call does nothing
	if err := <-got; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	if s.InUse() != 0 || s.keyCount() != 0 {
		t.Errorf("after all returned: %d in use, %d keys with state", s.InUse(), s.keyCount())
	}
}

// TestSlotsBounds: under contention, no key ever has more than its slots
// running and nobody more than the overall ones; every state is gone
// afterwards.
func TestSlotsBounds(t *testing.T) {
	const overall, perKey, users, calls = 6, 2, 5, 40
	s, _ := NewSlots[int](overall, perKey, time.Minute)
	var running atomic.Int64
	var perUser [users]atomic.Int64
	var maxRunning, maxPerUser atomic.Int64
	var wg sync.WaitGroup
	for u := range users {
		for range calls {
			wg.Go(func() {
				release, err := s.Acquire(context.Background(), u)
				if err != nil {
					t.Error(err)
					return
				}
				defer release()
				storeMax(&maxRunning, running.Add(1))
				storeMax(&maxPerUser, perUser[u].Add(1))
				// Give the scheduler a chance to run others meanwhile.
				for range 100 {
					_ = fmt.Sprint(u)
				}
				perUser[u].Add(-1)
				running.Add(-1)
			})
		}
	}
	wg.Wait()
	if m := maxRunning.Load(); m > overall {
		t.Errorf("%d ran at once, more than %d", m, overall)
	}
	if m := maxPerUser.Load(); m > perKey {
		t.Errorf("%d of one user ran at once, more than %d", m, perKey)
	}
	if s.InUse() != 0 || s.keyCount() != 0 {
		t.Errorf("afterwards: %d in use, %d keys with state", s.InUse(), s.keyCount())
	}
}

// acquireAsync acquires a slot for key in a goroutine, gives it back at
// once, and reports Acquire's error on the channel it returns.
func acquireAsync(ctx context.Context, s *Slots[string], key string) <-chan error {
	done := make(chan error, 1)
	go func() {
		release, err := s.Acquire(ctx, key)
		if err == nil {
			release()
		}
		done <- err
	}()
	return done
}

func storeMax(m *atomic.Int64, v int64) {
	for {
		old := m.Load()
		if v <= old || m.CompareAndSwap(old, v) {
			return
		}
	}
}
