package auth_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/toolscript/toolscript/host/serve/auth"
	"github.com/toolscript/toolscript/host/serve/auth/authtest"
	"github.com/toolscript/toolscript/internal/syncbuf"
)

// scope is the scope the tests' resource server requires.
const scope = "scripts:run"

// fixture is an issuer and a resource server that trusts it: /mcp behind
// the middleware answers with the user's subject, and the metadata is at
// its path.
type fixture struct {
	issuer  *authtest.Issuer
	auth    *auth.Authenticator
	server  *httptest.Server
	logs    *syncbuf.Buffer
	reasons chan auth.Reason
}

func newFixture(t *testing.T, issuer *authtest.Issuer, cfg auth.Config) *fixture {
	t.Helper()
	f := &fixture{issuer: issuer, logs: &syncbuf.Buffer{}, reasons: make(chan auth.Reason, 1000)}
	if cfg.Issuer == "" {
		cfg.Issuer = issuer.URL
	}
	if cfg.Audience == "" {
		cfg.Audience = issuer.Audience
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = issuer.Client()
	}
	cfg.Logger = slog.New(slog.NewJSONHandler(f.logs, nil))
	cfg.OnFailure = func(_ *http.Request, r auth.Reason) { f.reasons <- r }
	a, err := auth.New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("auth.New: %v", err)
	}
	t.Cleanup(a.Close)
	f.auth = a
	mux := http.NewServeMux()
	mux.Handle(auth.MetadataPath, a.MetadataHandler())
	mux.Handle("/mcp", a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, ok := auth.UserFrom(r.Context())
		if !ok {
			http.Error(w, "no user in the context", http.StatusInternalServerError)
			return
		}
		fmt.Fprintf(w, "%s %s", u.Issuer, u.Subject)
	})))
	f.server = httptest.NewServer(mux)
	t.Cleanup(f.server.Close)
	return f
}

// call sends a request to /mcp with the given Authorization headers.
func (f *fixture) call(t *testing.T, authorization ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.server.URL+"/mcp", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range authorization {
		req.Header.Add("Authorization", a)
	}
	resp, err := f.server.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// status sends a request to /mcp and returns the status; it may be
// called from any goroutine.
func (f *fixture) status(authorization ...string) (int, error) {
	req, err := http.NewRequest(http.MethodPost, f.server.URL+"/mcp", strings.NewReader("{}"))
	if err != nil {
		return 0, err
	}
	for _, a := range authorization {
		req.Header.Add("Authorization", a)
	}
	resp, err := f.server.Client().Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// claims returns valid claims for sub with the required scope.
func claims(i *authtest.Issuer, sub string) jwt.MapClaims {
	c := i.Claims(sub)
	c["scope"] = "openid " + scope
	return c
}

func with(c jwt.MapClaims, changes map[string]any) jwt.MapClaims {
	for k, v := range changes {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

func TestMiddleware(t *testing.T) {
	issuer := authtest.NewIssuer(t, authtest.Options{})
	for _, alg := range []string{"RS384", "RS512", "PS256", "ES384"} {
		issuer.AddKey(t, alg)
	}
	// An RSA key published without alg: only the key's type tells which
	// algorithms it suits.
	noAlg := issuer.GenerateKey(t, "RS256")
	noAlg.NoAlg = true
	issuer.SetKeys(append(issuer.Keys(), noAlg)...)
	f := newFixture(t, issuer, auth.Config{Scopes: []string{scope}})

	rsa := issuer.Key(t, "RS256")
	ec := issuer.Key(t, "ES256")
	stranger := issuer.GenerateKey(t, "RS256") // never published
	now := time.Now()
	rsaPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: must(x509.MarshalPKIXPublicKey(rsa.Public()))})
	wantMetadata := f.server.URL + auth.MetadataPath

	tests := []struct {
		name          string
		authorization []string
		status        int
		// errorCode is the challenge's error parameter; "" for none.
		errorCode string
		reason    auth.Reason
	}{
		{name: "valid RS256", authorization: bearer(authtest.Sign(t, rsa, claims(issuer, "alice"))), status: 200},
		{name: "valid ES256", authorization: bearer(authtest.Sign(t, ec, claims(issuer, "alice"))), status: 200},
		{name: "valid EdDSA", authorization: bearer(authtest.Sign(t, issuer.Key(t, "EdDSA"), claims(issuer, "alice"))), status: 200},
		{name: "valid RS384", authorization: bearer(authtest.Sign(t, issuer.Key(t, "RS384"), claims(issuer, "alice"))), status: 200},
		{name: "valid RS512", authorization: bearer(authtest.Sign(t, issuer.Key(t, "RS512"), claims(issuer, "alice"))), status: 200},
		{name: "valid PS256", authorization: bearer(authtest.Sign(t, issuer.Key(t, "PS256"), claims(issuer, "alice"))), status: 200},
		{name: "valid ES384", authorization: bearer(authtest.Sign(t, issuer.Key(t, "ES384"), claims(issuer, "alice"))), status: 200},
		{name: "valid, key without alg", authorization: bearer(authtest.Sign(t, noAlg, claims(issuer, "alice"))), status: 200},
		{name: "valid, no kid", authorization: bearer(authtest.Sign(t, authtest.Key{Alg: "ES256", Signer: ec.Signer}, claims(issuer, "alice"))), status: 200},
		{name: "valid, scope in scp array", status: 200, authorization: bearer(authtest.Sign(t, rsa,
			with(issuer.Claims("alice"), map[string]any{"scp": []string{"a", scope}})))},
		{name: "valid, scheme in lower case", authorization: []string{"bearer " + authtest.Sign(t, rsa, claims(issuer, "alice"))}, status: 200},
		{name: "valid, expired within the leeway", status: 200, authorization: bearer(authtest.Sign(t, rsa,
			with(claims(issuer, "alice"), map[string]any{"exp": now.Add(-30 * time.Second).Unix()})))},
		{name: "valid, not yet valid within the leeway", status: 200, authorization: bearer(authtest.Sign(t, rsa,
			with(claims(issuer, "alice"), map[string]any{"nbf": now.Add(30 * time.Second).Unix()})))},
		{name: "valid, several audiences", status: 200, authorization: bearer(authtest.Sign(t, rsa,
			with(claims(issuer, "alice"), map[string]any{"aud": []string{"other", issuer.Audience}})))},

		{name: "no token", status: 401, reason: auth.ReasonMissing},
		{name: "another scheme", authorization: []string{"Basic YWxpY2U6c2VjcmV0"}, status: 401, reason: auth.ReasonMissing},
		{name: "empty bearer", authorization: []string{"Bearer "}, status: 401, errorCode: "invalid_token", reason: auth.ReasonMalformed},
		{name: "malformed", authorization: bearer("not-a-jwt"), status: 401, errorCode: "invalid_token", reason: auth.ReasonMalformed},
		{name: "malformed, two segments", authorization: bearer("eyJhbGciOiJSUzI1NiJ9.e30"), status: 401, errorCode: "invalid_token", reason: auth.ReasonMalformed},
		{name: "malformed, bad base64", authorization: bearer("eyJ!.e30.sig"), status: 401, errorCode: "invalid_token", reason: auth.ReasonMalformed},
		{name: "too long", authorization: bearer(strings.Repeat("a", auth.MaxTokenBytes+1)), status: 401, errorCode: "invalid_token", reason: auth.ReasonMalformed},
		{name: "two Authorization headers", status: 401, errorCode: "invalid_token", reason: auth.ReasonMalformed,
			authorization: []string{"Bearer " + authtest.Sign(t, rsa, claims(issuer, "alice")), "Bearer x"}},
		{name: "wrong signature", status: 401, errorCode: "invalid_token", reason: auth.ReasonSignature,
			authorization: bearer(authtest.Sign(t, authtest.Key{ID: rsa.ID, Alg: "RS256", Signer: stranger.Signer}, claims(issuer, "alice")))},
		{name: "tampered claims", status: 401, errorCode: "invalid_token", reason: auth.ReasonSignature,
			authorization: bearer(tamper(t, authtest.Sign(t, rsa, claims(issuer, "alice")), "mallory"))},
		{name: "expired", status: 401, errorCode: "invalid_token", reason: auth.ReasonExpired, authorization: bearer(authtest.Sign(t, rsa,
			with(claims(issuer, "alice"), map[string]any{"exp": now.Add(-2 * time.Minute).Unix()})))},
		{name: "no exp", status: 401, errorCode: "invalid_token", reason: auth.ReasonExpired, authorization: bearer(authtest.Sign(t, rsa,
			with(claims(issuer, "alice"), map[string]any{"exp": nil})))},
		{name: "not yet valid", status: 401, errorCode: "invalid_token", reason: auth.ReasonNotYetValid, authorization: bearer(authtest.Sign(t, rsa,
			with(claims(issuer, "alice"), map[string]any{"nbf": now.Add(2 * time.Minute).Unix()})))},
		{name: "wrong iss", status: 401, errorCode: "invalid_token", reason: auth.ReasonIssuer, authorization: bearer(authtest.Sign(t, rsa,
			with(claims(issuer, "alice"), map[string]any{"iss": "https://evil.example"})))},
		{name: "no iss", status: 401, errorCode: "invalid_token", reason: auth.ReasonIssuer, authorization: bearer(authtest.Sign(t, rsa,
			with(claims(issuer, "alice"), map[string]any{"iss": nil})))},
		{name: "wrong aud", status: 401, errorCode: "invalid_token", reason: auth.ReasonAudience, authorization: bearer(authtest.Sign(t, rsa,
			with(claims(issuer, "alice"), map[string]any{"aud": "https://other.example"})))},
		{name: "no aud", status: 401, errorCode: "invalid_token", reason: auth.ReasonAudience, authorization: bearer(authtest.Sign(t, rsa,
			with(claims(issuer, "alice"), map[string]any{"aud": nil})))},
		{name: "no sub", status: 401, errorCode: "invalid_token", reason: auth.ReasonClaims, authorization: bearer(authtest.Sign(t, rsa,
			with(claims(issuer, "alice"), map[string]any{"sub": nil})))},
		{name: "missing scope", status: 403, errorCode: "insufficient_scope", reason: auth.ReasonScope,
			authorization: bearer(authtest.Sign(t, rsa, issuer.Claims("alice")))},
		{name: "scope only as a prefix", status: 403, errorCode: "insufficient_scope", reason: auth.ReasonScope, authorization: bearer(authtest.Sign(t, rsa,
			with(issuer.Claims("alice"), map[string]any{"scope": scope + "x"})))},
		{name: "alg none", status: 401, errorCode: "invalid_token", reason: auth.ReasonAlgorithm,
			authorization: bearer(authtest.SignWith(t, jwt.SigningMethodNone, rsa.ID, jwt.UnsafeAllowNoneSignatureType, claims(issuer, "alice")))},
		{name: "alg none without kid", status: 401, errorCode: "invalid_token", reason: auth.ReasonAlgorithm,
			authorization: bearer(authtest.SignWith(t, jwt.SigningMethodNone, "", jwt.UnsafeAllowNoneSignatureType, claims(issuer, "alice")))},
		{name: "HS256 with the public key as secret", status: 401, errorCode: "invalid_token", reason: auth.ReasonAlgorithm,
			authorization: bearer(authtest.SignWith(t, jwt.SigningMethodHS256, rsa.ID, rsaPEM, claims(issuer, "alice")))},
		{name: "HS256 with the public key as secret, no kid", status: 401, errorCode: "invalid_token", reason: auth.ReasonAlgorithm,
			authorization: bearer(authtest.SignWith(t, jwt.SigningMethodHS256, "", rsaPEM, claims(issuer, "alice")))},
		{name: "alg the library does not know", status: 401, errorCode: "invalid_token", reason: auth.ReasonAlgorithm,
			authorization: bearer(withHeader(t, authtest.Sign(t, rsa, claims(issuer, "alice")), `{"alg":"XS999","kid":"`+rsa.ID+`"}`))},
		{name: "ES256 token naming an RSA key", status: 401, errorCode: "invalid_token", reason: auth.ReasonKey,
			authorization: bearer(authtest.Sign(t, authtest.Key{ID: rsa.ID, Alg: "ES256", Signer: ec.Signer}, claims(issuer, "alice")))},
		{name: "ES256 token naming an RSA key without alg", status: 401, errorCode: "invalid_token", reason: auth.ReasonKey,
			authorization: bearer(authtest.Sign(t, authtest.Key{ID: noAlg.ID, Alg: "ES256", Signer: ec.Signer}, claims(issuer, "alice")))},
		{name: "PS256 token naming an EC key", status: 401, errorCode: "invalid_token", reason: auth.ReasonKey,
			authorization: bearer(authtest.Sign(t, authtest.Key{ID: ec.ID, Alg: "PS256", Signer: stranger.Signer}, claims(issuer, "alice")))},
		{name: "crit naming an unknown extension", status: 401, errorCode: "invalid_token", reason: auth.ReasonMalformed,
			authorization: bearer(authtest.SignHeader(t, rsa, map[string]any{"crit": []string{"exp-ext"}, "exp-ext": true}, claims(issuer, "alice")))},
		{name: "crit naming b64 (RFC 7797)", status: 401, errorCode: "invalid_token", reason: auth.ReasonMalformed,
			authorization: bearer(authtest.SignHeader(t, ec, map[string]any{"crit": []string{"b64"}, "b64": true}, claims(issuer, "alice")))},
		{name: "crit empty", status: 401, errorCode: "invalid_token", reason: auth.ReasonMalformed,
			authorization: bearer(authtest.SignHeader(t, rsa, map[string]any{"crit": []string{}}, claims(issuer, "alice")))},
		{name: "crit not an array", status: 401, errorCode: "invalid_token", reason: auth.ReasonMalformed,
			authorization: bearer(authtest.SignHeader(t, rsa, map[string]any{"crit": "exp-ext", "exp-ext": true}, claims(issuer, "alice")))},
		{name: "crit naming a standard header", status: 401, errorCode: "invalid_token", reason: auth.ReasonMalformed,
			authorization: bearer(authtest.SignHeader(t, rsa, map[string]any{"crit": []string{"kid"}}, claims(issuer, "alice")))},
		{name: "crit null", status: 401, errorCode: "invalid_token", reason: auth.ReasonMalformed,
			authorization: bearer(authtest.SignHeader(t, rsa, map[string]any{"crit": nil}, claims(issuer, "alice")))},
		{name: "valid, an unknown header that is not critical", status: 200,
			authorization: bearer(authtest.SignHeader(t, rsa, map[string]any{"x-note": "ignored"}, claims(issuer, "alice")))},
		{name: "unknown kid", status: 401, errorCode: "invalid_token", reason: auth.ReasonKey,
			authorization: bearer(authtest.Sign(t, stranger, claims(issuer, "alice")))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.logs.Reset()
			resp, body := f.call(t, tt.authorization...)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d (body %q; log %s)", resp.StatusCode, tt.status, body, f.logs.String())
			}
			challenge := resp.Header.Get("WWW-Authenticate")
			if tt.status == 200 {
				if want := issuer.URL + " alice"; body != want {
					t.Errorf("body %q, want %q", body, want)
				}
				if challenge != "" {
					t.Errorf("WWW-Authenticate %q on success", challenge)
				}
				return
			}
			want := `Bearer resource_metadata="` + wantMetadata + `"`
			switch tt.errorCode {
			case "invalid_token":
				want = `Bearer error="invalid_token", resource_metadata="` + wantMetadata + `"`
			case "insufficient_scope":
				want = `Bearer error="insufficient_scope", scope="` + scope + `", resource_metadata="` + wantMetadata + `"`
			}
			if challenge != want {
				t.Errorf("WWW-Authenticate %q, want %q", challenge, want)
			}
			if got := <-f.reasons; got != tt.reason {
				t.Errorf("reason %q, want %q (log %s)", got, tt.reason, f.logs.String())
			}
			// The reason is logged, never told: the body is one of two
			// fixed texts.
			if !strings.HasPrefix(body, "unauthorized: ") && !strings.HasPrefix(body, "forbidden: ") {
				t.Errorf("body %q", body)
			}
			var entry struct{ Reason, Error string }
			if err := json.Unmarshal(f.logs.Bytes(), &entry); err != nil || entry.Reason != string(tt.reason) || entry.Error == "" {
				t.Errorf("log %q: want one JSON line with reason %q and the error", f.logs.String(), tt.reason)
			}
			for _, a := range tt.authorization {
				if _, tok, _ := strings.Cut(a, " "); len(tok) > 8 && strings.Contains(f.logs.String(), tok) {
					t.Errorf("the log holds the token: %s", f.logs.String())
				}
			}
		})
	}
}

// TestKeyRotation: a token signed with a key published after the keys
// were cached is accepted after one refresh, and the keys withdrawn then
// are refused.
func TestKeyRotation(t *testing.T) {
	issuer := authtest.NewIssuer(t, authtest.Options{})
	f := newFixture(t, issuer, auth.Config{})
	old := issuer.Key(t, "ES256")
	if resp, _ := f.call(t, bearer(authtest.Sign(t, old, issuer.Claims("alice")))...); resp.StatusCode != 200 {
		t.Fatalf("before the rotation: status %d", resp.StatusCode)
	}
	before := issuer.JWKSFetches()
	fresh := issuer.Rotate(t)
	for _, k := range fresh {
		if resp, _ := f.call(t, bearer(authtest.Sign(t, k, issuer.Claims("alice")))...); resp.StatusCode != 200 {
			t.Errorf("new %s key: status %d (log %s)", k.Alg, resp.StatusCode, f.logs.String())
		}
	}
	if got := issuer.JWKSFetches() - before; got != 1 {
		t.Errorf("%d fetches of the keys after the rotation, want 1", got)
	}
	if resp, _ := f.call(t, bearer(authtest.Sign(t, old, issuer.Claims("alice")))...); resp.StatusCode != 401 {
		t.Errorf("withdrawn key: status %d, want 401", resp.StatusCode)
	}
}

// TestUnknownKeyFlood: many tokens with unknown key ids, sent at once,
// cost the issuer at most one fetch.
func TestUnknownKeyFlood(t *testing.T) {
	issuer := authtest.NewIssuer(t, authtest.Options{})
	// All from one address, unbounded: what is counted here is the
	// fetches (TestFailureBound bounds the address).
	f := newFixture(t, issuer, auth.Config{UnknownKeyInterval: time.Hour, FailuresPerMinute: -1})
	stranger := issuer.GenerateKey(t, "ES256")
	before := issuer.JWKSFetches()

	const clients, perClient = 16, 25
	tokens := make([][]string, clients*perClient)
	for n := range tokens {
		k := authtest.Key{ID: fmt.Sprintf("bogus-%d", n), Alg: "ES256", Signer: stranger.Signer}
		tokens[n] = bearer(authtest.Sign(t, k, issuer.Claims("mallory")))
	}
	var wg sync.WaitGroup
	statuses := make(chan int, len(tokens))
	for c := range clients {
		wg.Go(func() {
			for _, tok := range tokens[c*perClient : (c+1)*perClient] {
				status, err := f.status(tok...)
				if err != nil {
					t.Error(err)
				}
				statuses <- status
			}
		})
	}
	wg.Wait()
	close(statuses)
	for s := range statuses {
		if s != 401 {
			t.Fatalf("status %d for an unknown key, want 401", s)
		}
	}
	if got := issuer.JWKSFetches() - before; got > 1 {
		t.Errorf("%d requests with unknown keys made %d fetches of the keys, want at most 1", clients*perClient, got)
	}
	// Known keys still work.
	if resp, _ := f.call(t, bearer(issuer.Token(t, "RS256", "alice"))...); resp.StatusCode != 200 {
		t.Errorf("a valid token after the flood: status %d", resp.StatusCode)
	}
}

func TestDiscovery(t *testing.T) {
	tests := []struct {
		name    string
		opts    authtest.Options
		jwksURI bool // configure the JWKS URI
	}{
		{name: "OpenID at the root", opts: authtest.Options{Discovery: authtest.OpenID}},
		{name: "OAuth at the root", opts: authtest.Options{Discovery: authtest.OAuth}},
		{name: "OpenID with a path", opts: authtest.Options{Discovery: authtest.OpenID, Path: "/tenant1"}},
		{name: "OAuth with a path", opts: authtest.Options{Discovery: authtest.OAuth, Path: "/tenant1"}},
		{name: "plain HTTP on loopback", opts: authtest.Options{PlainHTTP: true}},
		{name: "JWKS URI configured", opts: authtest.Options{Discovery: authtest.NoDiscovery}, jwksURI: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			issuer := authtest.NewIssuer(t, tt.opts)
			cfg := auth.Config{}
			if tt.jwksURI {
				cfg.JWKSURI = issuer.JWKSURI
			}
			f := newFixture(t, issuer, cfg)
			if got := f.auth.JWKSURI(); got != issuer.JWKSURI {
				t.Errorf("JWKS URI %q, want %q", got, issuer.JWKSURI)
			}
			if err := f.auth.Ready(context.Background()); err != nil {
				t.Errorf("Ready: %v", err)
			}
			if resp, body := f.call(t, bearer(issuer.Token(t, "EdDSA", "bob"))...); resp.StatusCode != 200 {
				t.Errorf("status %d (%s)", resp.StatusCode, body)
			}
			wantDiscovery := int64(1)
			if tt.jwksURI {
				wantDiscovery = 0
			}
			if got := issuer.DiscoveryFetches(); got != wantDiscovery {
				t.Errorf("%d fetches of the discovery document, want %d", got, wantDiscovery)
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	issuer := authtest.NewIssuer(t, authtest.Options{})
	bare := authtest.NewIssuer(t, authtest.Options{Discovery: authtest.NoDiscovery})
	huge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte(`{"keys":[`))
		for range auth.MaxFetchBytes / 16 {
			w.Write([]byte(`{"kty":"oct"},  `))
		}
		w.Write([]byte(`]}`))
	}))
	t.Cleanup(huge.Close)
	redirecting := httptest.NewServer(http.RedirectHandler("http://auth.example.com/keys", http.StatusFound))
	t.Cleanup(redirecting.Close)
	tests := []struct {
		name string
		cfg  auth.Config
		want string
	}{
		{name: "no issuer", cfg: auth.Config{Audience: "a"}, want: "no issuer"},
		{name: "no audience", cfg: auth.Config{Issuer: issuer.URL}, want: "no audience"},
		{name: "http issuer elsewhere", cfg: auth.Config{Issuer: "http://auth.example.com", Audience: "a"}, want: "use https"},
		{name: "relative issuer", cfg: auth.Config{Issuer: "auth.example.com", Audience: "a"}, want: "not an absolute URL"},
		{name: "issuer with a trailing slash", cfg: auth.Config{Issuer: issuer.URL + "/", Audience: "a", HTTPClient: issuer.Client()},
			want: "the document is for issuer"},
		{name: "no discovery document", cfg: auth.Config{Issuer: bare.URL, Audience: "a", HTTPClient: bare.Client()},
			want: "no discovery document"},
		{name: "bad scope", cfg: auth.Config{Issuer: issuer.URL, Audience: "a", Scopes: []string{"a b"}}, want: "scope"},
		{name: "bad public URL", cfg: auth.Config{Issuer: issuer.URL, Audience: "a", PublicURL: "example.com"}, want: "public URL"},
		{name: "JWKS too large", cfg: auth.Config{Issuer: issuer.URL, Audience: "a", JWKSURI: huge.URL}, want: "larger than"},
		{name: "JWKS redirected to plain HTTP elsewhere", cfg: auth.Config{Issuer: issuer.URL, Audience: "a", JWKSURI: redirecting.URL},
			want: "http is accepted on loopback addresses only"},
		{name: "JWKS unreachable", cfg: auth.Config{Issuer: issuer.URL, Audience: "a", JWKSURI: "http://127.0.0.1:1/keys"}, want: "fetching the keys"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := auth.New(context.Background(), tt.cfg)
			if err == nil {
				a.Close()
				t.Fatalf("no error, want one containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestMetadata(t *testing.T) {
	issuer := authtest.NewIssuer(t, authtest.Options{})
	tests := []struct {
		name      string
		cfg       auth.Config
		resource  func(f *fixture) string
		wantScope []string
	}{
		{name: "from the request", cfg: auth.Config{Scopes: []string{scope, "b"}},
			resource: func(f *fixture) string { return f.server.URL }, wantScope: []string{scope, "b"}},
		{name: "public URL", cfg: auth.Config{PublicURL: "https://toolscript.example.com/"},
			resource: func(*fixture) string { return "https://toolscript.example.com" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, issuer, tt.cfg)
			resp, err := http.Get(f.server.URL + auth.MetadataPath)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var m map[string]any
			if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
				t.Fatal(err)
			}
			want := map[string]any{
				"resource":                 tt.resource(f),
				"authorization_servers":    []any{issuer.URL},
				"bearer_methods_supported": []any{"header"},
				"resource_name":            "toolscript",
			}
			if tt.wantScope != nil {
				want["scopes_supported"] = toAny(tt.wantScope)
			}
			if got, w := fmt.Sprint(m), fmt.Sprint(want); got != w {
				t.Errorf("metadata %s, want %s", got, w)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			// The challenge points to the same place.
			r, _ := f.call(t)
			if got, want := r.Header.Get("WWW-Authenticate"), `Bearer resource_metadata="`+tt.resource(f)+auth.MetadataPath+`"`; got != want {
				t.Errorf("WWW-Authenticate %q, want %q", got, want)
			}
		})
	}
}

func TestMetadataMethods(t *testing.T) {
	f := newFixture(t, authtest.NewIssuer(t, authtest.Options{}), auth.Config{})
	for method, want := range map[string]int{"GET": 200, "HEAD": 200, "OPTIONS": 204, "POST": 405, "DELETE": 405} {
		req, _ := http.NewRequest(method, f.server.URL+auth.MetadataPath, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s: status %d, want %d", method, resp.StatusCode, want)
		}
		if resp.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("%s: no CORS header", method)
		}
	}
}

func bearer(token string) []string { return []string{"Bearer " + token} }

// tamper replaces the subject of a signed token, keeping its signature.
func tamper(t *testing.T, token, sub string) string {
	t.Helper()
	parts := strings.Split(token, ".")
	var c map[string]any
	if err := json.Unmarshal(must(jwt.NewParser().DecodeSegment(parts[1])), &c); err != nil {
		t.Fatal(err)
	}
	c["sub"] = sub
	parts[1] = new(jwt.Token).EncodeSegment(must(json.Marshal(c)))
	return strings.Join(parts, ".")
}

// withHeader replaces the header of a signed token.
func withHeader(t *testing.T, token, header string) string {
	t.Helper()
	parts := strings.Split(token, ".")
	parts[0] = new(jwt.Token).EncodeSegment([]byte(header))
	return strings.Join(parts, ".")
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
