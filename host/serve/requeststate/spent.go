package requeststate

import (
	"fmt"
	"sync"
	"time"

	"github.com/toolscript/toolscript/host/platform/positive"
)

// DefaultMaxSpent is how many resumed states a Spent remembers at once by
// default.
const DefaultMaxSpent = 100000

// Spent remembers the states this process resumed until they expire, so
// that a state resumes at most once here. It is bounded: when it holds
// its bound of unexpired states it refuses to resume another
// (ErrSpentFull) rather than forget one, which could then resume twice.
// It is the process's own: another replica does not see it (a shared
// memory, when one is needed, is the operator's: docs/security.md).
type Spent struct {
	max int
	// dir, when set, is a directory every replica shares: a resumed
	// state's id is a file there (shared.go), so that a state resumes
	// at most once across them.
	dir string
	// spends counts Spend calls, to sweep dir now and then.
	spends int

	mu   sync.Mutex
	ids  map[string]time.Time
	next time.Time // the earliest expiry held (zero: none)
}

// NewSpent returns a memory of at most max states (DefaultMaxSpent when
// max <= 0).
func NewSpent(max int) *Spent {
	max = positive.Or(max, DefaultMaxSpent)
	return &Spent{max: max, ids: map[string]time.Time{}}
}

// Spend marks the state id, which expires at expiry, resumed at now: an
// error wrapping ErrSpent when it was already, ErrSpentFull when the
// memory is full.
func (s *Spent) Spend(id string, expiry, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if exp, ok := s.ids[id]; ok && now.Before(exp) {
		return fmt.Errorf("%w: a state resumes once; call execute_script again to run the script anew", ErrSpent)
	}
	if len(s.ids) >= s.max && !s.next.IsZero() && !now.Before(s.next) {
		s.forget(now)
	}
	if len(s.ids) >= s.max {
		return fmt.Errorf("%w (%d, until the earliest expires at %s)", ErrSpentFull, s.max, s.next.UTC().Format(time.RFC3339))
	}
	if s.dir != "" {
		if err := s.spendShared(id, expiry, now); err != nil {
			return err
		}
	}
	s.ids[id] = expiry
	if s.next.IsZero() || expiry.Before(s.next) {
		s.next = expiry
	}
	return nil
}

// forget drops the expired states and finds the next expiry. s.mu is held.
func (s *Spent) forget(now time.Time) {
	s.next = time.Time{}
	for id, exp := range s.ids {
		if !now.Before(exp) {
			delete(s.ids, id)
			continue
		}
		if s.next.IsZero() || exp.Before(s.next) {
			s.next = exp
		}
	}
}

// Len is how many states s remembers.
func (s *Spent) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ids)
}
