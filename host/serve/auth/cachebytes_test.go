package auth_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/toolscript/toolscript/host/serve/auth"
	"github.com/toolscript/toolscript/host/serve/auth/authtest"
)

// heavyClaims are valid claims for sub whose payload decodes to the most
// memory a token of about 16 KB can hold: thousands of empty objects (n
// tells the tokens apart).
func heavyClaims(i *authtest.Issuer, sub string, n int) jwt.MapClaims {
	c := i.Claims(sub)
	c["jti"] = fmt.Sprint(n)
	groups := make([]map[string]any, 3000)
	for g := range groups {
		groups[g] = map[string]any{}
	}
	c["groups"] = groups
	return c
}

// TestTokenCacheBytes: the verified tokens a server remembers are bounded
// in bytes, in all and per user, whatever the issuer puts in them: one
// user's many heavy tokens do not push out another's, and a token heavier
// than a user's share is still accepted, only not remembered.
func TestTokenCacheBytes(t *testing.T) {
	issuer := authtest.NewIssuer(t, authtest.Options{})
	const perUser, total = 1 << 20, 2 << 20
	f := newFixture(t, issuer, auth.Config{CacheBytesPerUser: perUser, CacheBytes: total})
	key := issuer.Key(t, "ES256")
	bob := auth.User{Issuer: issuer.URL, Subject: "bob"}
	client := f.server.Client()
	if status, _ := f.send(t, client, issuer.Token(t, "ES256", "bob")); status != 200 {
		t.Fatalf("bob: status %d", status)
	}
	bobBytes, _ := f.auth.CachedBytes(bob)
	if bobBytes == 0 {
		t.Fatal("bob's token is not cached")
	}

	for _, sub := range []string{"alice", "carol", "dave"} {
		for n := range 12 {
			token := authtest.Sign(t, key, heavyClaims(issuer, sub, n))
			if len(token) > auth.MaxTokenBytes {
				t.Fatalf("a test token of %d bytes", len(token))
			}
			if status, _ := f.send(t, client, token); status != http.StatusOK {
				t.Fatalf("%s's token %d: status %d", sub, n, status)
			}
			user, all := f.auth.CachedBytes(auth.User{Issuer: issuer.URL, Subject: sub})
			if user == 0 {
				t.Fatalf("%s's token %d, within the bounds, is not cached", sub, n)
			}
			if user > perUser || all > total {
				t.Fatalf("after %s's token %d: %d bytes cached for the user, %d in all; want at most %d and %d",
					sub, n, user, all, perUser, total)
			}
		}
		if sub == "alice" {
			// One user's tokens do not push out another's.
			if got, _ := f.auth.CachedBytes(bob); got != bobBytes {
				t.Errorf("bob's cached bytes went from %d to %d", bobBytes, got)
			}
		}
	}

	// A token heavier than a user's share passes, and is not remembered.
	small := newFixture(t, issuer, auth.Config{CacheBytesPerUser: 64 << 10})
	if status, _ := small.send(t, small.server.Client(), authtest.Sign(t, key, heavyClaims(issuer, "erin", 0))); status != 200 {
		t.Fatalf("a token heavier than a user's share: status %d", status)
	}
	if user, all := small.auth.CachedBytes(auth.User{Issuer: issuer.URL, Subject: "erin"}); user != 0 || all != 0 {
		t.Errorf("a token heavier than a user's share is cached: %d bytes, %d in all", user, all)
	}
}
