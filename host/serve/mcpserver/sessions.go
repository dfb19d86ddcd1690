package mcpserver

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"

	"github.com/toolscript/toolscript/host/serve/auth"
)

// sessions are the sessions the HTTP transport issued, each bound to the
// user who opened it. It is safe for concurrent use.
type sessions struct {
	mu      sync.Mutex
	byID    map[string]*session
	perUser map[auth.User]int
	sweptAt time.Time
	now     func() time.Time
}

type session struct {
	user auth.User
	seen time.Time
	// peer is what its client declared at initialize (gateway.go).
	peer *peer
}

func newSessions() *sessions {
	return &sessions{byID: map[string]*session{}, perUser: map[auth.User]int{}, now: time.Now}
}

// open returns a new session of u, or "" when u or the server has as many
// sessions as it may.
func (t *sessions) open(u auth.User) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	t.sweep(now)
	if len(t.byID) >= MaxSessions || t.perUser[u] >= MaxSessionsPerUser {
		return ""
	}
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	id := "ts-" + hex.EncodeToString(b[:])
	t.byID[id] = &session{user: u, seen: now}
	t.perUser[u]++
	return id
}

// check tells whether id is a live session of u, and keeps it alive.
func (t *sessions) check(id string, u auth.User) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	t.sweep(now)
	s := t.byID[id]
	if s == nil || s.user != u {
		return false
	}
	if now.Sub(s.seen) > SessionIdleTimeout {
		t.remove(id, s)
		return false
	}
	s.seen = now
	return true
}

// close ends a session of u; it returns false if id is none of u's.
func (t *sessions) close(id string, u auth.User) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.byID[id]
	if s == nil || s.user != u {
		return false
	}
	t.remove(id, s)
	return true
}

func (t *sessions) remove(id string, s *session) {
	delete(t.byID, id)
	if t.perUser[s.user]--; t.perUser[s.user] <= 0 {
		delete(t.perUser, s.user)
	}
}

// sweep forgets, at most once a minute, the sessions idle for longer than
// SessionIdleTimeout.
func (t *sessions) sweep(now time.Time) {
	if now.Sub(t.sweptAt) < time.Minute {
		return
	}
	t.sweptAt = now
	for id, s := range t.byID {
		if now.Sub(s.seen) > SessionIdleTimeout {
			t.remove(id, s)
		}
	}
}

// len returns the number of sessions.
func (t *sessions) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.byID)
}

// setPeer records what the client of session id declared.
func (t *sessions) setPeer(id string, p *peer) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.byID[id]; s != nil {
		s.peer = p
	}
}

// peer returns what the client of session id declared, nil if unknown.
func (t *sessions) peer(id string) *peer {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.byID[id]; s != nil {
		return s.peer
	}
	return nil
}
