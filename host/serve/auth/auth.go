// Package auth authenticates the requests of toolscript's hosted mode: it
// is an OAuth 2.0 resource server that accepts JWT access tokens from one
// issuer (docs/hosted.md, "Authentication").
//
// An Authenticator finds the issuer's keys (through its OpenID Connect or
// OAuth 2.0 discovery document, or at a configured JWKS URI), keeps them
// cached, and checks each bearer token: the signature (RS256/384/512,
// PS256, ES256/384, EdDSA; never "none", HMAC or a key of the wrong type),
// iss, aud, exp and nbf with a leeway, and the scopes every token must
// carry. A token whose header has "crit" is refused: it names extensions
// the recipient must understand, and this one understands none. A token signed with a key it does not know triggers one refresh of
// the keys, rate-limited so that a flood of unknown key ids cannot hammer
// the issuer. The tokens that passed are remembered, bounded in number and
// in the memory their claims hold, in all and per user (cache.go), so
// that a client's token has its signature checked once; the failures are
// bounded per client address (Config.FailuresPerMinute), so that tokens
// with wrong signatures cannot make the server check signatures without
// end.
//
// Its Middleware is plain net/http and decides from the headers alone,
// before any of the request's body is read: it refuses a request without
// a valid token with 401 (403 for a missing scope) and a WWW-Authenticate
// header pointing to the RFC 9728 metadata, which MetadataHandler serves
// (429 with Retry-After, before any check, from an address past its bound
// on failures), and hands an accepted request on with its User in the
// context. Why a token failed is logged, never told to the client.
//
// JOSE and JWT are github.com/golang-jwt/jwt/v5; the key set is
// github.com/MicahParks/keyfunc/v3 over github.com/MicahParks/jwkset.
package auth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"

	"github.com/toolscript/toolscript/host/contract/limit"
	"github.com/toolscript/toolscript/host/platform/positive"
)

// Config configures an Authenticator.
type Config struct {
	// Issuer is the authorization server's issuer identifier
	// (--auth-authority): every token's iss must equal it. Required; https,
	// or http on a loopback address.
	Issuer string
	// Audience is what every token's aud must contain (--auth-audience).
	// Required.
	Audience string
	// JWKSURI is where the issuer publishes its keys (--auth-jwks-uri).
	// Empty means: read it from the issuer's discovery document.
	JWKSURI string
	// Scopes are the scopes every token must carry (--auth-scopes).
	Scopes []string
	// PublicURL is this server's public base URL, such as
	// https://toolscript.example.com: the resource its metadata describes,
	// and the base of the metadata URL in WWW-Authenticate. Empty means:
	// taken from each request (scheme and Host), which is right unless a
	// proxy in front changes them.
	PublicURL string

	// Leeway is the clock skew tolerated on exp and nbf. Default 60s.
	Leeway time.Duration
	// RefreshInterval is how often the keys are fetched again in the
	// background. Default 1 hour.
	RefreshInterval time.Duration
	// UnknownKeyInterval is the least time between two refreshes triggered
	// by tokens whose key id is unknown. Default 1 minute. (The first is
	// allowed at once.)
	UnknownKeyInterval time.Duration
	// FetchTimeout bounds each fetch of the discovery document or the keys,
	// including the wait of a request for a refresh it triggered. Default
	// 10s.
	FetchTimeout time.Duration
	// CacheSize is how many verified tokens are remembered, so that a
	// client's token has its signature checked once, not with every
	// request. Default 10000; negative turns the cache off.
	CacheSize int
	// CacheBytes and CacheBytesPerUser bound the weight of the verified
	// tokens remembered (their decoded claims, which the issuer chooses,
	// by an estimate never less than what they hold), in all and of one
	// user. Defaults DefaultCacheBytes and DefaultCacheBytesPerUser.
	CacheBytes, CacheBytesPerUser int64
	// CacheTTL is how long a verified token is remembered at most (never
	// past its expiry). Default 5 minutes.
	CacheTTL time.Duration
	// FailuresPerMinute bounds the failed authentications of one client
	// address (clientaddr.OfRemote of the request's RemoteAddr: an IPv6
	// client's /64) a minute, in bursts of as many; a refusal charges its
	// address, a token that passes does not. Past the bound, a request
	// from that address whose token is not in the cache gets 429 with
	// Retry-After before its signature is checked; a cached token still
	// passes. Default DefaultFailuresPerMinute; negative turns the bound
	// off.
	FailuresPerMinute int
	// HTTPClient fetches the discovery document and the keys. Default: a
	// client of its own. Responses are capped at MaxFetchBytes either way.
	HTTPClient *http.Client

	// Logger receives why tokens fail and key refresh errors. Default
	// slog.Default().
	Logger *slog.Logger
	// OnFailure, when set, is called for every refused request, with the
	// reason (for metrics and access logs).
	OnFailure func(r *http.Request, reason Reason)
	// OnThrottled, when set, is called for every request refused for its
	// address's failures (FailuresPerMinute): no authentication was tried.
	OnThrottled func(r *http.Request)
	// Now is the clock the checks read: exp and nbf, the cache, the bound
	// on failures. Default time.Now.
	Now func() time.Time
}

// The defaults of Config.
const (
	DefaultLeeway             = 60 * time.Second
	DefaultRefreshInterval    = time.Hour
	DefaultUnknownKeyInterval = time.Minute
	DefaultFetchTimeout       = 10 * time.Second
	DefaultCacheSize          = 10000
	DefaultCacheTTL           = 5 * time.Minute
	// DefaultCacheBytes bounds the cache's weight: room for its 10,000
	// entries of common tokens (about 1.9 KB each), or for 38 of the
	// heaviest a 16 KB token can be (about 850 KB: thousands of nested
	// objects).
	DefaultCacheBytes = 32 << 20
	// DefaultCacheBytesPerUser bounds one user's part: hundreds of common
	// tokens, or one of the heaviest.
	DefaultCacheBytesPerUser = 1 << 20
	// DefaultFailuresPerMinute lets a client address fail one
	// authentication a second on average: a signature check costs 75 µs
	// to 2 ms, so a client alone costs at most a fifth of a percent of a
	// core.
	DefaultFailuresPerMinute = 60
)

// MaxFailureClients bounds the client addresses whose failures are
// counted at once (about 270 bytes each, measured: 4.4 MB in all): past
// it the least recently seen is forgotten.
const MaxFailureClients = 16384

// MaxFetchBytes caps a discovery document or a key set.
const MaxFetchBytes = 1 << 20

// MaxTokenBytes caps a bearer token; longer ones are malformed.
const MaxTokenBytes = 16 << 10

// algorithms are the signature algorithms a token may use: asymmetric
// only, so that a public key can never serve as an HMAC secret.
var algorithms = []string{"RS256", "RS384", "RS512", "PS256", "ES256", "ES384", "EdDSA"}

// Algorithms returns the signature algorithms a token may use.
func Algorithms() []string { return slices.Clone(algorithms) }

// Reason says why a request was refused. The set is closed: every value is
// in Reasons, so a metric labelled by it stays small.
type Reason string

// The reasons a request is refused.
const (
	// ReasonMissing: no bearer token was sent.
	ReasonMissing Reason = "missing"
	// ReasonMalformed: the token is not a well-formed JWT.
	ReasonMalformed Reason = "malformed"
	// ReasonAlgorithm: the token's alg is not one of Algorithms.
	ReasonAlgorithm Reason = "algorithm"
	// ReasonKey: no usable key: the kid is unknown (after a refresh, or
	// when none was allowed), or the key does not suit the alg.
	ReasonKey Reason = "key"
	// ReasonSignature: the signature does not verify.
	ReasonSignature Reason = "signature"
	// ReasonExpired: exp has passed (beyond the leeway), or is missing.
	ReasonExpired Reason = "expired"
	// ReasonNotYetValid: nbf is in the future (beyond the leeway).
	ReasonNotYetValid Reason = "not_yet_valid"
	// ReasonIssuer: iss is not the configured issuer.
	ReasonIssuer Reason = "issuer"
	// ReasonAudience: aud does not name the configured audience.
	ReasonAudience Reason = "audience"
	// ReasonClaims: another claim is missing or invalid (sub, say).
	ReasonClaims Reason = "claims"
	// ReasonScope: a required scope is missing (HTTP 403, not 401).
	ReasonScope Reason = "scope"
)

// Reasons lists every Reason.
var Reasons = []Reason{ReasonMissing, ReasonMalformed, ReasonAlgorithm, ReasonKey, ReasonSignature,
	ReasonExpired, ReasonNotYetValid, ReasonIssuer, ReasonAudience, ReasonClaims, ReasonScope}

// Error is why a token was refused. Its message is for logs; clients learn
// only the HTTP status and the OAuth error code.
type Error struct {
	Reason Reason
	Err    error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("token refused (%s)", e.Reason)
	}
	return fmt.Sprintf("token refused (%s): %v", e.Reason, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

func refused(reason Reason, err error) *Error { return &Error{Reason: reason, Err: err} }

// Authenticator checks bearer tokens. It is safe for concurrent use.
type Authenticator struct {
	cfg     Config
	log     *slog.Logger
	jwksURI string
	keys    keyfunc.Keyfunc
	parser  *jwt.Parser
	cache   *tokenCache
	// failures counts the failed authentications by client address; nil
	// when unbounded.
	failures *limit.Rate[string]
	// stop ends the background refresh.
	stop context.CancelFunc
}

// New returns an Authenticator for cfg. It fetches the discovery document
// (unless cfg.JWKSURI is set) and the keys once, so that a wrong issuer or
// an unreachable one is an error at start-up; ctx bounds these fetches.
// Close stops the background refresh.
func New(ctx context.Context, cfg Config) (*Authenticator, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	client := cappedClient(cfg.HTTPClient, cfg.FetchTimeout)

	jwksURI := cfg.JWKSURI
	if jwksURI == "" {
		fetchCtx, cancel := context.WithTimeout(ctx, cfg.FetchTimeout)
		meta, err := discover(fetchCtx, client, cfg.Issuer)
		cancel()
		if err != nil {
			return nil, err
		}
		jwksURI = meta.JWKSURI
	}

	// The refresh goroutine lives until Close, not until ctx ends.
	bg, stop := context.WithCancel(context.WithoutCancel(ctx))
	storage, err := newKeyStorage(bg, client, jwksURI, cfg)
	if err != nil {
		stop()
		return nil, err
	}
	kf, err := keyfunc.New(keyfunc.Options{
		Ctx:          bg,
		Storage:      storage,
		UseWhitelist: []jwkset.USE{jwkset.UseSig, ""},
	})
	if err != nil {
		stop()
		return nil, fmt.Errorf("auth: %w", err)
	}
	var failures *limit.Rate[string]
	if cfg.FailuresPerMinute > 0 {
		if failures, err = limit.NewBoundedRate[string](cfg.FailuresPerMinute, MaxFailureClients); err != nil {
			stop()
			return nil, fmt.Errorf("auth: %w", err)
		}
	}
	a := &Authenticator{
		failures: failures,
		cfg:      cfg,
		log:      cfg.Logger,
		jwksURI:  jwksURI,
		keys:     kf,
		stop:     stop,
		cache:    newTokenCache(cfg.CacheSize, cfg.CacheBytes, cfg.CacheBytesPerUser, cfg.CacheTTL),
		parser: jwt.NewParser(
			jwt.WithValidMethods(slices.Clone(algorithms)),
			jwt.WithIssuer(cfg.Issuer),
			jwt.WithAudience(cfg.Audience),
			jwt.WithLeeway(cfg.Leeway),
			jwt.WithExpirationRequired(),
			jwt.WithTimeFunc(cfg.Now),
		),
	}
	return a, nil
}

// withDefaults checks cfg and fills in its defaults.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Issuer == "" {
		return cfg, errors.New("auth: no issuer (--auth-authority) given")
	}
	if err := checkFetchURL(cfg.Issuer); err != nil {
		return cfg, fmt.Errorf("auth: issuer %q: %w", cfg.Issuer, err)
	}
	if cfg.Audience == "" {
		return cfg, errors.New("auth: no audience (--auth-audience) given: tokens meant for other services would be accepted")
	}
	if cfg.JWKSURI != "" {
		if err := checkFetchURL(cfg.JWKSURI); err != nil {
			return cfg, fmt.Errorf("auth: JWKS URI %q: %w", cfg.JWKSURI, err)
		}
	}
	if cfg.PublicURL != "" {
		u, err := url.Parse(cfg.PublicURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return cfg, fmt.Errorf("auth: public URL %q: want an absolute http(s) URL without query or fragment", cfg.PublicURL)
		}
		cfg.PublicURL = strings.TrimSuffix(cfg.PublicURL, "/")
	}
	for _, s := range cfg.Scopes {
		if s == "" || strings.ContainsAny(s, " \"\\") {
			return cfg, fmt.Errorf("auth: scope %q: scopes are non-empty and hold no space, quote or backslash", s)
		}
	}
	cfg.Leeway = positive.Or(cfg.Leeway, DefaultLeeway)
	cfg.RefreshInterval = positive.Or(cfg.RefreshInterval, DefaultRefreshInterval)
	cfg.UnknownKeyInterval = positive.Or(cfg.UnknownKeyInterval, DefaultUnknownKeyInterval)
	cfg.FetchTimeout = positive.Or(cfg.FetchTimeout, DefaultFetchTimeout)
	if cfg.CacheSize == 0 {
		cfg.CacheSize = DefaultCacheSize
	}
	cfg.CacheTTL = positive.Or(cfg.CacheTTL, DefaultCacheTTL)
	cfg.CacheBytes = positive.Or(cfg.CacheBytes, DefaultCacheBytes)
	cfg.CacheBytesPerUser = positive.Or(cfg.CacheBytesPerUser, DefaultCacheBytesPerUser)
	if cfg.FailuresPerMinute == 0 {
		cfg.FailuresPerMinute = DefaultFailuresPerMinute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return cfg, nil
}

// Close stops the background refresh of the keys.
func (a *Authenticator) Close() { a.stop() }

// JWKSURI returns where the keys are fetched from (discovered or
// configured).
func (a *Authenticator) JWKSURI() string { return a.jwksURI }

// Ready reports whether at least one key is loaded, for a readiness probe.
func (a *Authenticator) Ready(ctx context.Context) error {
	keys, err := a.keys.Storage().KeyReadAll(ctx)
	if err != nil {
		return fmt.Errorf("auth: reading the keys: %w", err)
	}
	if len(keys) == 0 {
		return fmt.Errorf("auth: no keys loaded from %s", a.jwksURI)
	}
	return nil
}

// claims are the claims a token is checked for: the registered ones, and
// the scopes, as "scope" (RFC 9068: a space-separated string) or "scp" (a
// string or an array, as some issuers write it).
type claims struct {
	jwt.RegisteredClaims
	Scope string `json:"scope,omitempty"`
	Scp   any    `json:"scp,omitempty"`
}

// scopes returns the token's scopes.
func (c *claims) scopes() []string {
	out := strings.Fields(c.Scope)
	switch scp := c.Scp.(type) {
	case string:
		out = append(out, strings.Fields(scp)...)
	case []any:
		for _, s := range scp {
			if s, ok := s.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// Verify checks a bearer token and returns the user it names. A refusal is
// an *Error whose Reason says why.
func (a *Authenticator) Verify(ctx context.Context, token string) (User, error) {
	u, _, err := a.VerifyClaims(ctx, token)
	return u, err
}

// VerifyClaims is Verify that also returns the token's claims, all of
// them, as its payload holds them (what [[policy]] rules see as
// user.claims).
func (a *Authenticator) VerifyClaims(ctx context.Context, token string) (User, Claims, error) {
	if err := checkLength(token); err != nil {
		return User{}, nil, err
	}
	now := a.cfg.Now()
	if u, all, ok := a.cache.get(token, now); ok {
		return u, all, nil
	}
	return a.verify(ctx, token, now)
}

// checkLength refuses an empty token, or one longer than MaxTokenBytes.
func checkLength(token string) error {
	if token == "" {
		return refused(ReasonMissing, nil)
	}
	if len(token) > MaxTokenBytes {
		return refused(ReasonMalformed, fmt.Errorf("token of %d bytes, more than %d", len(token), MaxTokenBytes))
	}
	return nil
}

// verify checks a token that is not in the cache, and caches it when it
// passes.
func (a *Authenticator) verify(ctx context.Context, token string, now time.Time) (User, Claims, error) {
	var c claims
	all := Claims{}
	parsed, err := a.parser.ParseWithClaims(token, &c, a.keyFor(ctx))
	if err != nil {
		return User{}, nil, classify(parsed, &c, err)
	}
	if c.Subject == "" {
		return User{}, nil, refused(ReasonClaims, errors.New("the token has no sub"))
	}
	if missing := missingScopes(a.cfg.Scopes, c.scopes()); len(missing) > 0 {
		return User{}, nil, refused(ReasonScope, fmt.Errorf("the token lacks scope %s", strings.Join(missing, ", ")))
	}
	// The payload verified is read once more as a whole: the claims the
	// struct above does not name.
	if _, payload, ok := strings.Cut(token, "."); ok {
		payload, _, _ = strings.Cut(payload, ".")
		if b, err := base64.RawURLEncoding.DecodeString(payload); err == nil {
			_ = json.Unmarshal(b, &all)
		}
	}
	u := User{Issuer: c.Issuer, Subject: c.Subject}
	a.cache.put(token, u, all, c.ExpiresAt.Add(a.cfg.Leeway), now)
	return u, all, nil
}

// Claims are a verified token's claims, by name.
type Claims map[string]any

func missingScopes(required, have []string) []string {
	var missing []string
	for _, s := range required {
		if !slices.Contains(have, s) {
			missing = append(missing, s)
		}
	}
	return missing
}

// keyFor returns the jwt.Keyfunc of one verification: the token's key from
// the key set, refused unless it suits the token's alg.
func (a *Authenticator) keyFor(ctx context.Context) jwt.Keyfunc {
	lookup := a.keys.KeyfuncCtx(ctx)
	return func(t *jwt.Token) (any, error) {
		if err := checkCritical(t.Header); err != nil {
			return nil, refused(ReasonMalformed, err)
		}
		alg := t.Method.Alg()
		key, err := lookup(t)
		if err != nil {
			return nil, refused(ReasonKey, err)
		}
		if set, ok := key.(jwt.VerificationKeySet); ok {
			// No kid: try the keys that suit the alg.
			var suitable jwt.VerificationKeySet
			for _, k := range set.Keys {
				if keySuits(alg, k) == nil {
					suitable.Keys = append(suitable.Keys, k)
				}
			}
			if len(suitable.Keys) == 0 {
				return nil, refused(ReasonKey, fmt.Errorf("no key suits alg %s", alg))
			}
			return suitable, nil
		}
		if err := keySuits(alg, key); err != nil {
			return nil, refused(ReasonKey, err)
		}
		return key, nil
	}
}

// checkCritical refuses a protected header with "crit" (RFC 7515
// §4.1.11): it names extensions the recipient must understand, and this
// one understands none (not even RFC 7797's b64), so any crit is refused,
// and the malformed ones (not an array of names, empty, naming a header
// parameter the JWS and JWA specifications define) are told apart in the
// message only. golang-jwt does not look at crit.
func checkCritical(header map[string]any) error {
	crit, ok := header["crit"]
	if !ok {
		return nil
	}
	names, ok := crit.([]any)
	if !ok {
		return fmt.Errorf("the header's crit is not an array (%T)", crit)
	}
	if len(names) == 0 {
		return errors.New("the header's crit is an empty array")
	}
	for _, n := range names {
		name, ok := n.(string)
		if !ok {
			return fmt.Errorf("the header's crit lists a %T, not a name", n)
		}
		if slices.Contains(standardHeaders, name) {
			return fmt.Errorf("the header's crit lists %q, a standard header parameter", name)
		}
	}
	return fmt.Errorf("the header's crit names extensions this server does not understand: %v", names)
}

// standardHeaders are the header parameters that RFC 7515 and RFC 7518
// define, which crit must not list.
var standardHeaders = []string{"alg", "jku", "jwk", "kid", "x5u", "x5c", "x5t", "x5t#S256", "typ", "cty", "crit",
	"epk", "apu", "apv", "iv", "tag", "p2s", "p2c", "enc", "zip"}

// classify turns golang-jwt's error into a refusal with its reason; c
// holds the claims as far as they could be read.
func classify(t *jwt.Token, c *claims, err error) *Error {
	var e *Error
	switch {
	case errors.As(err, &e):
		return refused(e.Reason, err)
	case errors.Is(err, jwt.ErrTokenMalformed):
		return refused(ReasonMalformed, err)
	case t != nil && t.Method != nil && !slices.Contains(algorithms, t.Method.Alg()):
		return refused(ReasonAlgorithm, err)
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		// An alg golang-jwt does not know, say.
		return refused(ReasonAlgorithm, err)
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return refused(ReasonSignature, err)
	case errors.Is(err, jwt.ErrTokenExpired):
		return refused(ReasonExpired, err)
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return refused(ReasonNotYetValid, err)
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return refused(ReasonIssuer, err)
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return refused(ReasonAudience, err)
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		switch {
		case c.ExpiresAt == nil:
			return refused(ReasonExpired, err)
		case c.Issuer == "":
			return refused(ReasonIssuer, err)
		case len(c.Audience) == 0:
			return refused(ReasonAudience, err)
		}
	}
	return refused(ReasonClaims, err)
}
