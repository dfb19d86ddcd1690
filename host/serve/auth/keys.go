package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/MicahParks/jwkset"
	"golang.org/x/time/rate"
)

// MinRSABits is the smallest RSA key accepted.
const MinRSABits = 2048

// newKeyStorage returns the issuer's key set at jwksURI, fetched once now
// (an error if that fails) and then every cfg.RefreshInterval until bg
// ends; a key id it does not know triggers a refresh, at most one every
// cfg.UnknownKeyInterval.
func newKeyStorage(bg context.Context, client *http.Client, jwksURI string, cfg Config) (jwkset.Storage, error) {
	logRefreshError := func(ctx context.Context, err error) {
		cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "auth: fetching the keys failed",
			slog.String("jwks_uri", jwksURI), slog.String("error", err.Error()))
	}
	remote, err := jwkset.NewStorageFromHTTP(jwksURI, jwkset.HTTPClientStorageOptions{
		Client:              client,
		Ctx:                 bg,
		HTTPTimeout:         cfg.FetchTimeout,
		RefreshErrorHandler: logRefreshError,
		RefreshInterval:     cfg.RefreshInterval,
	})
	if err != nil {
		return nil, fmt.Errorf("auth: fetching the keys from %s: %w", jwksURI, err)
	}
	storage, err := jwkset.NewHTTPClient(jwkset.HTTPClientOptions{
		HTTPURLs: map[string]jwkset.Storage{jwksURI: remote},
		// A request that triggers a refresh waits at most this long for the
		// rate limiter and the fetch together; when the next refresh is
		// further away, it fails at once.
		RateLimitWaitMax:  cfg.FetchTimeout,
		RefreshUnknownKID: rate.NewLimiter(rate.Every(cfg.UnknownKeyInterval), 1),
	})
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	return storage, nil
}

// keySuits checks that key is of the type alg needs: an RSA key of at
// least MinRSABits for RS* and PS*, an ECDSA key on the alg's curve for
// ES*, an Ed25519 key for EdDSA.
func keySuits(alg string, key any) error {
	switch alg {
	case "RS256", "RS384", "RS512", "PS256":
		k, ok := key.(*rsa.PublicKey)
		if !ok {
			return fmt.Errorf("alg %s needs an RSA key, not %T", alg, key)
		}
		if n := k.N.BitLen(); n < MinRSABits {
			return fmt.Errorf("RSA key of %d bits, less than %d", n, MinRSABits)
		}
	case "ES256", "ES384":
		want := elliptic.P256()
		if alg == "ES384" {
			want = elliptic.P384()
		}
		k, ok := key.(*ecdsa.PublicKey)
		if !ok {
			return fmt.Errorf("alg %s needs an ECDSA key, not %T", alg, key)
		}
		if k.Curve != want {
			return fmt.Errorf("alg %s needs a key on %s, not %s", alg, want.Params().Name, k.Curve.Params().Name)
		}
	case "EdDSA":
		if _, ok := key.(ed25519.PublicKey); !ok {
			return fmt.Errorf("alg %s needs an Ed25519 key, not %T", alg, key)
		}
	default:
		return fmt.Errorf("alg %s is not accepted", alg)
	}
	return nil
}

// checkFetchURL checks a URL the keys or the discovery document come from:
// https, or http to a loopback address (an issuer on the same machine, or
// in tests).
func checkFetchURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	switch {
	case u.Host == "":
		return errors.New("not an absolute URL")
	case u.Fragment != "" || u.RawQuery != "":
		return errors.New("has a query or a fragment")
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && isLoopback(u.Hostname()):
		return nil
	case u.Scheme == "http":
		return errors.New("http is accepted on loopback addresses only: use https")
	}
	return fmt.Errorf("scheme %q: use https", u.Scheme)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// cappedClient returns a copy of base (or of a new client) whose responses
// fail past MaxFetchBytes, whose requests take at most timeout, and which
// follows redirects only to URLs checkFetchURL accepts.
func cappedClient(base *http.Client, timeout time.Duration) *http.Client {
	c := &http.Client{}
	if base != nil {
		*c = *base
	}
	if c.Timeout == 0 {
		c.Timeout = timeout
	}
	next := c.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if err := checkFetchURL(req.URL.String()); err != nil {
			return fmt.Errorf("redirected to %s: %w", req.URL.Redacted(), err)
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	inner := c.Transport
	if inner == nil {
		inner = http.DefaultTransport
	}
	c.Transport = cappedTransport{inner}
	return c
}

// cappedTransport caps the bodies of its responses at MaxFetchBytes.
type cappedTransport struct{ inner http.RoundTripper }

func (t cappedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.inner.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = &cappedBody{ReadCloser: resp.Body, left: MaxFetchBytes}
	return resp, nil
}

// errTooLarge is a response over MaxFetchBytes.
var errTooLarge = fmt.Errorf("response larger than %d bytes", MaxFetchBytes)

type cappedBody struct {
	io.ReadCloser
	left int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly the cap from a larger one.
		var one [1]byte
		n, err := b.ReadCloser.Read(one[:])
		if n > 0 {
			return 0, errTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}
