package mcpserver

import (
	"fmt"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/serve/auth"
)

// TestSessions: sessions belong to their user, end when closed or idle,
// and are bounded per user and overall.
func TestSessions(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newSessions()
	s.now = func() time.Time { return now }
	alice, bob := auth.User{Issuer: "i", Subject: "alice"}, auth.User{Issuer: "i", Subject: "bob"}

	a := s.open(alice)
	if a == "" || s.check(a, bob) || !s.check(a, alice) {
		t.Fatalf("session %q of alice", a)
	}
	if s.close(a, bob) || !s.close(a, alice) || s.check(a, alice) || s.close(a, alice) {
		t.Error("closing")
	}

	// Idle sessions end; used ones live on.
	idle, used := s.open(alice), s.open(alice)
	now = now.Add(SessionIdleTimeout / 2)
	s.check(used, alice)
	now = now.Add(SessionIdleTimeout/2 + time.Second)
	if s.check(idle, alice) || !s.check(used, alice) {
		t.Error("idle expiry")
	}
	now = now.Add(SessionIdleTimeout + time.Minute)
	s.open(bob) // sweeps
	if s.len() != 1 {
		t.Errorf("%d sessions after the sweep, want bob's only", s.len())
	}

	// Per user, then overall.
	s = newSessions()
	for range MaxSessionsPerUser {
		if s.open(alice) == "" {
			t.Fatal("a session refused under the bound")
		}
	}
	if s.open(alice) != "" || s.open(bob) == "" {
		t.Error("the bound per user")
	}
	for i := 0; s.len() < MaxSessions; i++ {
		s.open(auth.User{Subject: fmt.Sprint(i / MaxSessionsPerUser)})
	}
	if s.open(auth.User{Subject: "late"}) != "" {
		t.Error("the overall bound")
	}
}
