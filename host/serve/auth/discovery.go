package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// serverMetadata is what discovery reads from an authorization server's
// metadata (RFC 8414) or OpenID Provider configuration.
type serverMetadata struct {
	Issuer  string `json:"issuer"`
	JWKSURI string `json:"jwks_uri"`
}

// discoveryURLs returns where an issuer's metadata may be, in the order the
// MCP authorization specification has clients try them: for an issuer
// with a path, OAuth metadata and OpenID configuration with the well-known
// segment inserted before the path, then the OpenID configuration appended
// to it; without a path, the OAuth metadata, then the OpenID configuration.
func discoveryURLs(issuer string) ([]string, error) {
	u, err := url.Parse(issuer)
	if err != nil {
		return nil, fmt.Errorf("issuer %q: %w", issuer, err)
	}
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	at := func(p string) string {
		v := *u
		v.RawQuery, v.Fragment = "", ""
		v.Path, v.RawPath = "", ""
		return v.String() + p
	}
	if path == "" {
		return []string{
			at("/.well-known/oauth-authorization-server"),
			at("/.well-known/openid-configuration"),
		}, nil
	}
	return []string{
		at("/.well-known/oauth-authorization-server" + path),
		at("/.well-known/openid-configuration" + path),
		at(path + "/.well-known/openid-configuration"),
	}, nil
}

// discover fetches the issuer's metadata from the first of discoveryURLs
// that has it. The document must name the issuer exactly (RFC 8414 section
// 3.3, OpenID Connect Discovery section 4.3) and give a jwks_uri.
func discover(ctx context.Context, client *http.Client, issuer string) (serverMetadata, error) {
	urls, err := discoveryURLs(issuer)
	if err != nil {
		return serverMetadata{}, fmt.Errorf("auth: %w", err)
	}
	var tried []string
	for _, u := range urls {
		meta, err := fetchMetadata(ctx, client, u)
		if errors.Is(err, errNoDocument) {
			tried = append(tried, fmt.Sprintf("%s (%v)", u, err))
			continue
		}
		if err != nil {
			return serverMetadata{}, fmt.Errorf("auth: discovery at %s: %w", u, err)
		}
		if meta.Issuer != issuer {
			return serverMetadata{}, fmt.Errorf("auth: discovery at %s: the document is for issuer %q, not %q", u, meta.Issuer, issuer)
		}
		if meta.JWKSURI == "" {
			return serverMetadata{}, fmt.Errorf("auth: discovery at %s: the document gives no jwks_uri (give --auth-jwks-uri)", u)
		}
		if err := checkFetchURL(meta.JWKSURI); err != nil {
			return serverMetadata{}, fmt.Errorf("auth: discovery at %s: jwks_uri %q: %w", u, meta.JWKSURI, err)
		}
		return meta, nil
	}
	return serverMetadata{}, fmt.Errorf("auth: no discovery document for issuer %s: tried %s", issuer, strings.Join(tried, ", "))
}

// errNoDocument is a discovery URL that has no document: the next is tried.
var errNoDocument = errors.New("no document")

func fetchMetadata(ctx context.Context, client *http.Client, u string) (serverMetadata, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return serverMetadata{}, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return serverMetadata{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return serverMetadata{}, fmt.Errorf("%w: HTTP status %d", errNoDocument, resp.StatusCode)
	}
	var meta serverMetadata
	if err := json.NewDecoder(resp.Body).Decode(&meta); err != nil {
		// Some servers answer every path with a web page: try the next.
		return serverMetadata{}, fmt.Errorf("%w: not a JSON document: %v", errNoDocument, err)
	}
	return meta, nil
}
