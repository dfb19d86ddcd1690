// Package authtest runs a real OAuth 2.0 authorization server for tests of
// the hosted mode: an httptest server that serves a discovery document and
// a JWKS, and signs access tokens with freshly generated RSA, ECDSA and
// Ed25519 keys. It counts the fetches it serves, and its keys can be
// rotated, so that tests can watch how a resource server caches them.
package authtest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
)

// Discovery says which discovery document an Issuer serves.
type Discovery int

// The discovery documents.
const (
	// OpenID serves /.well-known/openid-configuration (appended to the
	// issuer's path, as OpenID Connect Discovery has it).
	OpenID Discovery = iota
	// OAuth serves /.well-known/oauth-authorization-server (inserted
	// before the issuer's path, as RFC 8414 has it).
	OAuth
	// NoDiscovery serves neither: the JWKS URI must be configured.
	NoDiscovery
)

// Options configure an Issuer. The zero value is an OpenID issuer at the
// server's root, over TLS.
type Options struct {
	Discovery Discovery
	// Path is the issuer identifier's path, such as "/tenant1".
	Path string
	// PlainHTTP serves over http instead of https.
	PlainHTTP bool
	// Audience is the aud of the tokens Token makes. Default
	// "https://toolscript.test".
	Audience string
}

// Key is one signing key of an Issuer.
type Key struct {
	ID     string
	Alg    string
	Signer crypto.Signer
	// NoAlg leaves alg out of the key's JWK, as some issuers do.
	NoAlg bool
}

// Public returns the key's public half.
func (k Key) Public() crypto.PublicKey { return k.Signer.Public() }

// Issuer is a running authorization server.
type Issuer struct {
	// URL is the issuer identifier: the iss of its tokens.
	URL string
	// JWKSURI is where its keys are.
	JWKSURI string
	// Audience is the aud of the tokens Token makes.
	Audience string
	// Server is the HTTP server; its Client trusts its certificate.
	Server *httptest.Server

	mu   sync.Mutex
	keys []Key

	jwksFetches      atomic.Int64
	discoveryFetches atomic.Int64
	nextID           atomic.Int64
}

// NewIssuer starts an issuer with one key of each algorithm family (RS256,
// ES256, EdDSA) and stops it when the test ends.
func NewIssuer(t testing.TB, opts Options) *Issuer {
	t.Helper()
	i := &Issuer{Audience: opts.Audience}
	if i.Audience == "" {
		i.Audience = "https://toolscript.test"
	}
	mux := http.NewServeMux()
	if opts.PlainHTTP {
		i.Server = httptest.NewServer(mux)
	} else {
		i.Server = httptest.NewTLSServer(mux)
	}
	t.Cleanup(i.Server.Close)
	path := strings.TrimSuffix(opts.Path, "/")
	i.URL = i.Server.URL + path
	i.JWKSURI = i.Server.URL + "/keys" + path

	mux.HandleFunc("GET /keys"+path, i.serveJWKS)
	switch opts.Discovery {
	case OpenID:
		mux.HandleFunc("GET "+path+"/.well-known/openid-configuration", i.serveDiscovery)
	case OAuth:
		mux.HandleFunc("GET /.well-known/oauth-authorization-server"+path, i.serveDiscovery)
	}
	for _, alg := range []string{"RS256", "ES256", "EdDSA"} {
		i.AddKey(t, alg)
	}
	return i
}

// Client returns an HTTP client that trusts the issuer's certificate.
func (i *Issuer) Client() *http.Client { return i.Server.Client() }

// JWKSFetches returns how many times the JWKS was fetched.
func (i *Issuer) JWKSFetches() int64 { return i.jwksFetches.Load() }

// DiscoveryFetches returns how many times the discovery document was
// fetched.
func (i *Issuer) DiscoveryFetches() int64 { return i.discoveryFetches.Load() }

// GenerateKey makes a fresh key for alg (RS256/384/512 and PS256 get an
// RSA-2048 key, ES256 P-256, ES384 P-384, EdDSA Ed25519), with a new id.
func (i *Issuer) GenerateKey(t testing.TB, alg string) Key {
	t.Helper()
	var signer crypto.Signer
	var err error
	switch alg {
	case "RS256", "RS384", "RS512", "PS256":
		signer, err = rsa.GenerateKey(rand.Reader, 2048)
	case "ES256":
		signer, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "ES384":
		signer, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case "EdDSA":
		_, signer, err = ed25519.GenerateKey(rand.Reader)
	default:
		t.Fatalf("authtest: no key for alg %q", alg)
	}
	if err != nil {
		t.Fatalf("authtest: generating a key: %v", err)
	}
	return Key{ID: fmt.Sprintf("key-%d-%s", i.nextID.Add(1), alg), Alg: alg, Signer: signer}
}

// AddKey generates a key for alg and publishes it.
func (i *Issuer) AddKey(t testing.TB, alg string) Key {
	t.Helper()
	k := i.GenerateKey(t, alg)
	i.SetKeys(append(i.Keys(), k)...)
	return k
}

// SetKeys replaces the published keys.
func (i *Issuer) SetKeys(keys ...Key) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.keys = append([]Key(nil), keys...)
}

// Keys returns the published keys.
func (i *Issuer) Keys() []Key {
	i.mu.Lock()
	defer i.mu.Unlock()
	return append([]Key(nil), i.keys...)
}

// Key returns the first published key for alg.
func (i *Issuer) Key(t testing.TB, alg string) Key {
	t.Helper()
	for _, k := range i.Keys() {
		if k.Alg == alg {
			return k
		}
	}
	t.Fatalf("authtest: the issuer publishes no %s key", alg)
	return Key{}
}

// Rotate replaces every published key with a fresh one of the same alg,
// and returns the new keys.
func (i *Issuer) Rotate(t testing.TB) []Key {
	t.Helper()
	var fresh []Key
	for _, k := range i.Keys() {
		n := i.GenerateKey(t, k.Alg)
		n.NoAlg = k.NoAlg
		fresh = append(fresh, n)
	}
	i.SetKeys(fresh...)
	return fresh
}

// Claims returns valid claims for sub: this issuer, its audience, issued
// now, valid for an hour.
func (i *Issuer) Claims(sub string) jwt.MapClaims {
	now := time.Now()
	return jwt.MapClaims{
		"iss": i.URL,
		"aud": i.Audience,
		"sub": sub,
		"iat": now.Unix(),
		"nbf": now.Unix(),
		"exp": now.Add(time.Hour).Unix(),
	}
}

// Token returns a valid token for sub signed with the issuer's first key
// for alg.
func (i *Issuer) Token(t testing.TB, alg, sub string) string {
	t.Helper()
	return Sign(t, i.Key(t, alg), i.Claims(sub))
}

// Sign signs claims with key, naming the key's id in the header.
func Sign(t testing.TB, key Key, claims jwt.Claims) string {
	t.Helper()
	method := jwt.GetSigningMethod(key.Alg)
	if method == nil {
		t.Fatalf("authtest: unknown alg %q", key.Alg)
	}
	return SignWith(t, method, key.ID, key.Signer, claims)
}

// SignHeader signs claims with key as Sign does, with the fields of
// header added to the protected header (a "crit" list, say: the tokens
// that name extensions a resource server must understand).
func SignHeader(t testing.TB, key Key, header map[string]any, claims jwt.Claims) string {
	t.Helper()
	method := jwt.GetSigningMethod(key.Alg)
	if method == nil {
		t.Fatalf("authtest: unknown alg %q", key.Alg)
	}
	tok := jwt.NewWithClaims(method, claims)
	tok.Header["kid"] = key.ID
	for k, v := range header {
		tok.Header[k] = v
	}
	s, err := tok.SignedString(key.Signer)
	if err != nil {
		t.Fatalf("authtest: signing a token: %v", err)
	}
	return s
}

// SignWith signs claims with any method and key (an HMAC secret, say, or
// jwt.UnsafeAllowNoneSignatureType for alg none), naming kid in the header
// unless it is empty: the tokens a resource server must refuse.
func SignWith(t testing.TB, method jwt.SigningMethod, kid string, key any, claims jwt.Claims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatalf("authtest: signing a token: %v", err)
	}
	return s
}

func (i *Issuer) serveDiscovery(w http.ResponseWriter, _ *http.Request) {
	i.discoveryFetches.Add(1)
	writeJSON(w, map[string]any{
		"issuer":                                i.URL,
		"jwks_uri":                              i.JWKSURI,
		"authorization_endpoint":                i.Server.URL + "/authorize",
		"token_endpoint":                        i.Server.URL + "/token",
		"response_types_supported":              []string{"code"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256", "ES256", "EdDSA"},
	})
}

func (i *Issuer) serveJWKS(w http.ResponseWriter, _ *http.Request) {
	i.jwksFetches.Add(1)
	var set jwkset.JWKSMarshal
	for _, k := range i.Keys() {
		meta := jwkset.JWKMetadataOptions{KID: k.ID, USE: jwkset.UseSig}
		if !k.NoAlg {
			meta.ALG = jwkset.ALG(k.Alg)
		}
		jwk, err := jwkset.NewJWKFromKey(k.Public(), jwkset.JWKOptions{Metadata: meta})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		set.Keys = append(set.Keys, jwk.Marshal())
	}
	writeJSON(w, set)
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}
