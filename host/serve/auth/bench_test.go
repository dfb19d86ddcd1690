package auth_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/toolscript/toolscript/host/serve/auth"
	"github.com/toolscript/toolscript/host/serve/auth/authtest"
)

// BenchmarkVerify measures the check of one valid token with the keys
// cached, the cost authentication adds to a request: "signature" checks
// everything each time (a client's first request), "cached" is every later
// request with the same token.
func BenchmarkVerify(b *testing.B) {
	issuer := authtest.NewIssuer(b, authtest.Options{})
	for _, alg := range []string{"PS256", "ES384"} {
		issuer.AddKey(b, alg)
	}
	newAuth := func(cacheSize int) *auth.Authenticator {
		a, err := auth.New(context.Background(), auth.Config{
			Issuer: issuer.URL, Audience: issuer.Audience, Scopes: []string{scope}, CacheSize: cacheSize,
			HTTPClient: issuer.Client(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(a.Close)
		return a
	}
	modes := []struct {
		name string
		auth *auth.Authenticator
	}{{"signature", newAuth(-1)}, {"cached", newAuth(0)}}
	ctx := context.Background()
	for _, alg := range []string{"RS256", "PS256", "ES256", "ES384", "EdDSA"} {
		token := authtest.Sign(b, issuer.Key(b, alg), claims(issuer, "alice"))
		for _, m := range modes {
			b.Run(alg+"/"+m.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := m.auth.Verify(ctx, token); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
