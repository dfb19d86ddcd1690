package auth

import (
	"fmt"
	"testing"
	"time"
)

func TestTokenCache(t *testing.T) {
	now := time.Now()
	alice := User{Issuer: "i", Subject: "alice"}
	tests := []struct {
		name    string
		expires time.Time
		at      time.Time
		hit     bool
	}{
		{name: "fresh", expires: now.Add(time.Hour), at: now.Add(time.Minute), hit: true},
		{name: "past its expiry", expires: now.Add(time.Minute), at: now.Add(time.Minute), hit: false},
		{name: "past the ttl", expires: now.Add(time.Hour), at: now.Add(5 * time.Minute), hit: false},
		{name: "just before the ttl", expires: now.Add(time.Hour), at: now.Add(5*time.Minute - time.Nanosecond), hit: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newTokenCache(10, 1<<20, 1<<20, 5*time.Minute)
			c.put("token", alice, Claims{"role": "admin"}, tt.expires, now)
			u, claims, ok := c.get("token", tt.at)
			if ok != tt.hit || (ok && (u != alice || claims["role"] != "admin")) {
				t.Errorf("get: %+v %v %v, want hit %v", u, claims, ok, tt.hit)
			}
			if _, _, ok := c.get("token2", now); ok {
				t.Error("another token hits")
			}
		})
	}
}

func TestTokenCacheBounded(t *testing.T) {
	now := time.Now()
	c := newTokenCache(100, 1<<30, 1<<30, time.Minute)
	for i := range 1000 {
		c.put(fmt.Sprint("token", i), User{Subject: fmt.Sprint(i)}, nil, now.Add(time.Hour), now)
		if n := c.len(); n > 100 {
			t.Fatalf("%d entries in a cache of 100", n)
		}
	}
	// The last token put is always there.
	if u, _, ok := c.get("token999", now); !ok || u.Subject != "999" {
		t.Errorf("the newest token: %+v %v", u, ok)
	}
	// Expired entries go first.
	c = newTokenCache(4, 1<<30, 1<<30, time.Minute)
	c.put("old", User{}, nil, now.Add(time.Second), now)
	for i := range 3 {
		c.put(fmt.Sprint("new", i), User{}, nil, now.Add(time.Hour), now)
	}
	c.put("newest", User{}, nil, now.Add(time.Hour), now.Add(2*time.Second))
	for _, tok := range []string{"new0", "new1", "new2", "newest"} {
		if _, _, ok := c.get(tok, now.Add(2*time.Second)); !ok {
			t.Errorf("%s was evicted before an expired entry", tok)
		}
	}
	if c.len() != 4 {
		t.Errorf("%d entries, want 4", c.len())
	}
	if newTokenCache(-1, 1<<30, 1<<30, time.Minute) != nil {
		t.Error("a cache of negative size")
	}
}
