package trace

import (
	"errors"
	"fmt"
	"sync"
)

// The default bounds of a record directory ([effects] record_max_bytes and
// record_max_bytes_per_user).
const (
	DefaultDirBytes        = 1 << 30
	DefaultDirBytesPerUser = 256 << 20
)

// Quota bounds what the traces of one record directory hold together: all
// of them (total) and each user's (perUser). It counts what the directory
// held when it was made (Add) and every byte each Writer sharing it
// writes; a write that would pass a bound is cut at its last whole line,
// and that trace ends there (a *QuotaError). Nothing is deleted to make
// room: recording stops. Its methods are safe for concurrent use.
type Quota struct {
	total, perUser int64

	mu    sync.Mutex
	used  int64
	users map[string]int64
}

// NewQuota returns an empty quota of total bytes, perUser bytes of them
// for each user at most.
func NewQuota(total, perUser int64) *Quota {
	return &Quota{total: total, perUser: perUser, users: map[string]int64{}}
}

// QuotaError is a trace cut at a bound of its Quota.
type QuotaError struct {
	// PerUser: the user's bound was reached; otherwise the total one.
	PerUser bool
	Bound   int64
}

func (e *QuotaError) Error() string {
	if e.PerUser {
		return fmt.Sprintf("trace: the record directory holds this user's bound of traces (%s, [effects] record_max_bytes_per_user); "+
			"the trace ends early", Size(e.Bound))
	}
	return fmt.Sprintf("trace: the record directory holds its bound of traces (%s, [effects] record_max_bytes); the trace ends early", Size(e.Bound))
}

// IsCut reports whether err says that a trace was cut at a bound (its own,
// MaxBytes, or its Quota's).
func IsCut(err error) bool {
	var q *QuotaError
	return errors.Is(err, ErrTooLarge) || errors.As(err, &q)
}

// Add counts n bytes that user's traces hold already.
func (q *Quota) Add(user string, n int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.used += n
	q.users[user] += n
}

// Remove stops counting n bytes of user's traces: a trace removed.
func (q *Quota) Remove(user string, n int64) { q.give(user, n) }

// Used is how many bytes all traces hold, and how many of them user's do.
func (q *Quota) Used(user string) (total, users int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.used, q.users[user]
}

// Full is the bound user has reached (a *QuotaError), nil while both
// bounds have room.
func (q *Quota) Full(user string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.reached(user)
}

func (q *Quota) reached(user string) error {
	switch {
	case q.users[user] >= q.perUser:
		return &QuotaError{PerUser: true, Bound: q.perUser}
	case q.used >= q.total:
		return &QuotaError{Bound: q.total}
	}
	return nil
}

// take grants up to n of user's bytes: all of them, or fewer and the
// bound that stopped the rest.
func (q *Quota) take(user string, n int64) (int64, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var err error
	switch {
	case q.users[user]+n > q.perUser:
		err = &QuotaError{PerUser: true, Bound: q.perUser}
	case q.used+n > q.total:
		err = &QuotaError{Bound: q.total}
	}
	granted := max(0, min(n, q.total-q.used, q.perUser-q.users[user]))
	q.used += granted
	q.users[user] += granted
	return granted, err
}

// give returns n bytes of user's that were taken and not written.
func (q *Quota) give(user string, n int64) {
	if n <= 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.used -= n
	q.users[user] -= n
}

// Size is n bytes for people: in GiB, MiB or KiB when a whole number of
// them, else in bytes.
func Size(n int64) string {
	for _, u := range []struct {
		unit  string
		bytes int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.bytes && n%u.bytes == 0 {
			return fmt.Sprintf("%d %s", n/u.bytes, u.unit)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}
