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

// userShare is the part of a Spent's bound one user's states may take: a
// user resuming state after state fills their share, not the memory
// every user's resumptions need.
const userShare = 16

// Spent remembers the states this process resumed until they expire, so
// that a state resumes at most once here. It is bounded: when it holds
// its bound of unexpired states, or a user their share of it (a
// sixteenth), it refuses to resume another (ErrSpentFull) rather than
// forget one, which could then resume twice.
// It is the process's own: another replica does not see it (a shared
// memory, when one is needed, is the operator's: docs/security.md).
type Spent struct {
	max, maxPerUser int
	// dir, when set, is a directory every replica shares: a resumed
	// state's id is a file there (shared.go), so that a state resumes
	// at most once across them.
	dir string
	// spends counts Spend calls, to sweep dir now and then.
	spends int

	mu     sync.Mutex
	ids    map[string]spent
	byUser map[string]int // how many of ids are each user's
	next   time.Time      // the earliest expiry held (zero: none)
}

// spent is a resumed state: its expiry, and its user.
type spent struct {
	expiry time.Time
	user   string
}

// NewSpent returns a memory of at most max states (DefaultMaxSpent when
// max <= 0), and of at most a sixteenth of them of one user (at least
// one).
func NewSpent(max int) *Spent {
	max = positive.Or(max, DefaultMaxSpent)
	return &Spent{max: max, maxPerUser: positive.Or(max/userShare, 1), ids: map[string]spent{}, byUser: map[string]int{}}
}

// Spend marks the state id of user, which expires at expiry, resumed at
// now: an error wrapping ErrSpent when it was already, ErrSpentFull when
// the memory, or the user's share of it, is full.
func (s *Spent) Spend(id, user string, expiry, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.ids[id]; ok && now.Before(e.expiry) {
		return fmt.Errorf("%w: a state resumes once; call execute_script again to run the script anew", ErrSpent)
	}
	if (len(s.ids) >= s.max || s.byUser[user] >= s.maxPerUser) && !s.next.IsZero() && !now.Before(s.next) {
		s.forget(now)
	}
	switch {
	case len(s.ids) >= s.max:
		return fmt.Errorf("%w (%d, until the earliest expires at %s)", ErrSpentFull, s.max, s.next.UTC().Format(time.RFC3339))
	case s.byUser[user] >= s.maxPerUser:
		return fmt.Errorf("%w (%d of one user's, until their earliest expires)", ErrSpentFull, s.maxPerUser)
	}
	if s.dir != "" {
		if err := s.spendShared(id, expiry, now); err != nil {
			return err
		}
	}
	s.drop(id) // an expired record of the same id
	s.ids[id] = spent{expiry: expiry, user: user}
	s.byUser[user]++
	if s.next.IsZero() || expiry.Before(s.next) {
		s.next = expiry
	}
	return nil
}

// forget drops the expired states and finds the next expiry. s.mu is held.
func (s *Spent) forget(now time.Time) {
	s.next = time.Time{}
	for id, e := range s.ids {
		if !now.Before(e.expiry) {
			s.drop(id)
			continue
		}
		if s.next.IsZero() || e.expiry.Before(s.next) {
			s.next = e.expiry
		}
	}
}

// drop forgets the state id, if held. s.mu is held.
func (s *Spent) drop(id string) {
	e, ok := s.ids[id]
	if !ok {
		return
	}
	delete(s.ids, id)
	if s.byUser[e.user]--; s.byUser[e.user] <= 0 {
		delete(s.byUser, e.user)
	}
}

// Len is how many states s remembers.
func (s *Spent) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ids)
}
