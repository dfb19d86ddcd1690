package limit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Slots bound how many executions run at once: per key and overall. A
// call waits for its key's slot first, then for one of the overall slots,
// so that one key's queue never holds overall slots; it waits up to a
// bound in all, then fails with a *BusyError. Waiters are served in the
// order they came (Go's channels queue them). Slots is safe for concurrent
// use and keeps state only for the keys that hold or wait for a slot.
type Slots[K comparable] struct {
	overall chan struct{}
	perKey  int
	wait    time.Duration

	mu   sync.Mutex
	keys map[K]*keySlots
}

type keySlots struct {
	slots chan struct{}
	refs  int // holders and waiters
}

// NewSlots returns Slots of overall slots in all and perKey per key; a
// call waits at most wait for them, or as long as its context lives when
// wait is 0. overall and perKey must be positive, wait not negative.
func NewSlots[K comparable](overall, perKey int, wait time.Duration) (*Slots[K], error) {
	if overall <= 0 || perKey <= 0 || wait < 0 {
		return nil, fmt.Errorf("limit: slots of %d overall, %d per user, waiting %s: the slots must be positive, the wait not negative", overall, perKey, wait)
	}
	return &Slots[K]{
		overall: make(chan struct{}, overall),
		perKey:  min(perKey, overall),
		wait:    wait,
		keys:    make(map[K]*keySlots),
	}, nil
}

// BusyError is a call that found no slot within the wait.
type BusyError struct {
	// PerUser is true when the key's own slots were all taken, false when
	// the overall ones were.
	PerUser bool
	// Slots is the number of slots of that kind.
	Slots  int
	Waited time.Duration
}

func (e *BusyError) Error() string {
	if e.PerUser {
		return fmt.Sprintf("too many executions at once for this user: all %d slots stayed busy for %s", e.Slots, e.Waited)
	}
	return fmt.Sprintf("the server is busy: all %d execution slots stayed busy for %s", e.Slots, e.Waited)
}

// ErrBusy matches every *BusyError with errors.Is.
var ErrBusy = errors.New("no execution slot free")

// Is makes errors.Is(err, ErrBusy) true for a *BusyError.
func (e *BusyError) Is(target error) bool { return target == ErrBusy }

// Acquire waits for a slot of key and an overall one. It returns the
// function that gives both back (call it once), a *BusyError when the wait
// passed, or ctx's error when ctx ended first.
func (s *Slots[K]) Acquire(ctx context.Context, key K) (release func(), err error) {
	ks := s.ref(key)
	var expired <-chan time.Time // nil, never ready, without a bound
	if s.wait > 0 {
		timer := time.NewTimer(s.wait)
		defer timer.Stop()
		expired = timer.C
	}
	select {
	case ks.slots <- struct{}{}:
	case <-expired:
		s.unref(key, ks)
		return nil, &BusyError{PerUser: true, Slots: s.perKey, Waited: s.wait}
	case <-ctx.Done():
		s.unref(key, ks)
		return nil, fmt.Errorf("waiting for an execution slot: %w", ctx.Err())
	}
	select {
	case s.overall <- struct{}{}:
	case <-expired:
		<-ks.slots
		s.unref(key, ks)
		return nil, &BusyError{Slots: cap(s.overall), Waited: s.wait}
	case <-ctx.Done():
		<-ks.slots
		s.unref(key, ks)
		return nil, fmt.Errorf("waiting for an execution slot: %w", ctx.Err())
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			<-s.overall
			<-ks.slots
			s.unref(key, ks)
		})
	}, nil
}

// ref returns key's slots, counting one more holder or waiter.
func (s *Slots[K]) ref(key K) *keySlots {
	s.mu.Lock()
	defer s.mu.Unlock()
	ks := s.keys[key]
	if ks == nil {
		ks = &keySlots{slots: make(chan struct{}, s.perKey)}
		s.keys[key] = ks
	}
	ks.refs++
	return ks
}

// unref counts one holder or waiter less, and forgets the key with the
// last.
func (s *Slots[K]) unref(key K, ks *keySlots) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ks.refs--
	if ks.refs == 0 {
		delete(s.keys, key)
	}
}

// PerKey returns the number of slots of one key.
func (s *Slots[K]) PerKey() int { return s.perKey }

// InUse returns how many overall slots are taken.
func (s *Slots[K]) InUse() int { return len(s.overall) }

// keyCount returns the number of keys with state.
func (s *Slots[K]) keyCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.keys)
}
