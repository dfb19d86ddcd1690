package config

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"
)

// Auth is the [auth] section: the hosted mode's token issuer (see
// docs/hosted.md, "Authentication").
type Auth struct {
	// Authority is the issuer: every token's iss.
	Authority string `toml:"authority"`
	// Audience is what every token's aud must name.
	Audience string `toml:"audience"`
	// JWKSURI is where the issuer's keys are, when not in its discovery
	// document.
	JWKSURI string `toml:"jwks_uri"`
	// Scopes are the scopes every token must carry.
	Scopes []string `toml:"scopes"`
	// PublicURL is the server's public base URL, when a proxy in front
	// changes it.
	PublicURL string `toml:"public_url"`
}

func (a Auth) check() error {
	if a.Authority == "" && (a.Audience != "" || a.JWKSURI != "" || len(a.Scopes) > 0 || a.PublicURL != "") {
		return errors.New("auth: audience, jwks_uri, scopes and public_url need authority (the token issuer)")
	}
	if a.Authority != "" && a.Audience == "" {
		return errors.New("auth.audience: needed with auth.authority (the aud every token must name)")
	}
	return nil
}

// HostedFlags are the command-line flags of the hosted mode. Zero values
// mean "not given".
type HostedFlags struct {
	Stateless            bool
	MaxConcurrentPerUser int
	RateLimit            int
	AllowedOrigins       []string
	TLSCert, TLSKey      string
	ShutdownGrace        time.Duration
	InsecureNoAuth       bool
	MetricsAddr          string
	Auth                 Auth
}

// Given returns the names of the flags given, as a user types them.
func (f HostedFlags) Given() []string {
	var names []string
	for _, g := range []struct {
		name  string
		given bool
	}{
		{"--stateless", f.Stateless},
		{"--max-concurrent-per-user", f.MaxConcurrentPerUser != 0},
		{"--rate-limit", f.RateLimit != 0},
		{"--allowed-origins", len(f.AllowedOrigins) > 0},
		{"--tls-cert", f.TLSCert != ""},
		{"--tls-key", f.TLSKey != ""},
		{"--shutdown-grace", f.ShutdownGrace != 0},
		{"--insecure-no-auth", f.InsecureNoAuth},
		{"--metrics-addr", f.MetricsAddr != ""},
		{"--auth-authority", f.Auth.Authority != ""},
		{"--auth-audience", f.Auth.Audience != ""},
		{"--auth-jwks-uri", f.Auth.JWKSURI != ""},
		{"--auth-scopes", len(f.Auth.Scopes) > 0},
		{"--public-url", f.Auth.PublicURL != ""},
	} {
		if g.given {
			names = append(names, g.name)
		}
	}
	return names
}

// HostedSettings are what `serve --http` runs with.
type HostedSettings struct {
	// Addr is the address listened on.
	Addr      string
	Stateless bool
	// MaxConcurrentPerUser is 0 for no bound of its own (max_concurrent).
	MaxConcurrentPerUser int
	// RateLimit is executions a minute per user; 0 is no limit.
	RateLimit       int
	AllowedOrigins  []string
	TLSCert, TLSKey string
	// ShutdownGrace is 0 for the HTTP server's default (host/serve/hosted).
	ShutdownGrace time.Duration
	// MaxConnections and MaxConnectionsPerClient cap the open
	// connections; 0 is hosted's default.
	MaxConnections, MaxConnectionsPerClient int
	// AuthFailuresPerMinute bounds the failed authentications of one
	// client address a minute; 0 is auth's default.
	AuthFailuresPerMinute int
	// BodyTimeout bounds the time a client takes to send a request body;
	// 0 is the HTTP server's default.
	BodyTimeout time.Duration
	// WriteTimeout bounds each write of a response; 0 is the HTTP
	// server's default.
	WriteTimeout time.Duration
	// MaxUnwrittenBytesPerUser bounds one user's responses not yet
	// written; 0 is mcpserver's default (half of max_host_bytes_total).
	MaxUnwrittenBytesPerUser int64
	// MetricsAddr, when set, is the address /metrics is served on, alone
	// and without authentication; the public address then has none.
	MetricsAddr string
	// Auth is the token issuer; nil when authentication is off.
	Auth *Auth
	// Warnings are for the operator, printed at start-up.
	Warnings []string
}

// ResolveHosted combines the [server] and [auth] sections with the flags
// (which win) for a server on addr (ServerSettings.HTTP). It fails closed:
// without an issuer the server may listen only on a loopback address,
// unless InsecureNoAuth says otherwise.
func ResolveHosted(f *File, addr string, flags HostedFlags) (HostedSettings, error) {
	if f == nil {
		f = &File{}
	}
	sv := f.Server
	s := HostedSettings{
		Addr:                 addr,
		Stateless:            sv.Stateless || flags.Stateless,
		MaxConcurrentPerUser: sv.MaxConcurrentPerUser,
		RateLimit:            sv.RateLimit,
		AllowedOrigins:       sv.AllowedOrigins,
		TLSCert:              sv.TLSCert,
		TLSKey:               sv.TLSKey,
		MaxConnections:       sv.MaxConnections,
		// 0 is hosted's default; the total bounds it.
		MaxConnectionsPerClient:  sv.MaxConnectionsPerClient,
		AuthFailuresPerMinute:    sv.AuthFailuresPerMinute,
		MaxUnwrittenBytesPerUser: sv.MaxUnwrittenBytesPerUser,
		MetricsAddr:              sv.MetricsAddr,
	}
	if sv.ShutdownGrace != "" {
		s.ShutdownGrace, _ = time.ParseDuration(sv.ShutdownGrace) // checked by Load
	}
	if sv.BodyTimeout != "" {
		s.BodyTimeout, _ = time.ParseDuration(sv.BodyTimeout) // checked by Load
	}
	if sv.WriteTimeout != "" {
		s.WriteTimeout, _ = time.ParseDuration(sv.WriteTimeout) // checked by Load
	}
	if err := s.applyFlags(flags); err != nil {
		return s, err
	}
	auth, warning, err := resolveAuth(f.Auth, addr, flags)
	if err != nil {
		return s, err
	}
	s.Auth = auth
	if warning != "" {
		s.Warnings = append(s.Warnings, warning)
	}
	return s, nil
}

// applyFlags puts the flags given over what the file says, and checks
// the result.
func (s *HostedSettings) applyFlags(flags HostedFlags) error {
	switch {
	case flags.MaxConcurrentPerUser < 0:
		return fmt.Errorf("--max-concurrent-per-user must be positive (got %d)", flags.MaxConcurrentPerUser)
	case flags.RateLimit < 0:
		return fmt.Errorf("--rate-limit must be positive (got %d)", flags.RateLimit)
	case flags.ShutdownGrace < 0:
		return fmt.Errorf("--shutdown-grace must be positive (got %s)", flags.ShutdownGrace)
	}
	if flags.MaxConcurrentPerUser > 0 {
		s.MaxConcurrentPerUser = flags.MaxConcurrentPerUser
	}
	if flags.RateLimit > 0 {
		s.RateLimit = flags.RateLimit
	}
	if len(flags.AllowedOrigins) > 0 {
		s.AllowedOrigins = flags.AllowedOrigins
	}
	for _, v := range []struct{ flag, field *string }{
		{&flags.TLSCert, &s.TLSCert}, {&flags.TLSKey, &s.TLSKey}, {&flags.MetricsAddr, &s.MetricsAddr},
	} {
		if *v.flag != "" {
			*v.field = *v.flag
		}
	}
	if flags.ShutdownGrace > 0 {
		s.ShutdownGrace = flags.ShutdownGrace
	}
	if s.MetricsAddr != "" {
		if _, _, err := net.SplitHostPort(s.MetricsAddr); err != nil {
			return fmt.Errorf("metrics address %q: want HOST:PORT, such as 127.0.0.1:9090 (--metrics-addr, [server] metrics_addr)", s.MetricsAddr)
		}
	}
	if (s.TLSCert == "") != (s.TLSKey == "") {
		return errors.New("TLS needs both a certificate (--tls-cert) and its key (--tls-key)")
	}
	return nil
}

// resolveAuth combines the [auth] section with the flags into the token
// issuer (nil when authentication is off, with a warning for the
// operator). It fails closed: without an issuer only a loopback address,
// unless InsecureNoAuth.
func resolveAuth(a Auth, addr string, flags HostedFlags) (*Auth, string, error) {
	for _, v := range []struct {
		flag  string
		field *string
	}{
		{flags.Auth.Authority, &a.Authority},
		{flags.Auth.Audience, &a.Audience},
		{flags.Auth.JWKSURI, &a.JWKSURI},
		{flags.Auth.PublicURL, &a.PublicURL},
	} {
		if v.flag != "" {
			*v.field = v.flag
		}
	}
	if len(flags.Auth.Scopes) > 0 {
		a.Scopes = flags.Auth.Scopes
	}
	if err := a.check(); err != nil {
		return nil, "", fmt.Errorf("%w (flags --auth-authority, --auth-audience)", err)
	}
	switch {
	case a.Authority != "" && flags.InsecureNoAuth:
		return nil, "", errors.New("--insecure-no-auth and an issuer (--auth-authority) contradict each other: give one")
	case a.Authority != "":
		return &a, "", nil
	case flags.InsecureNoAuth:
		return nil, "authentication is off (--insecure-no-auth): anyone who reaches " + addr + " runs scripts, as one anonymous user", nil
	case !isLoopback(addr):
		return nil, "", fmt.Errorf("--http %s listens beyond this machine without authentication: give the token issuer "+
			"(--auth-authority and --auth-audience), listen on a loopback address such as 127.0.0.1:8080, "+
			"or pass --insecure-no-auth", addr)
	default:
		return nil, "authentication is off: listening on " + addr + " (loopback) only, every request as one anonymous user; give --auth-authority to require tokens", nil
	}
}

// isLoopback tells whether addr (host:port) names a loopback host only:
// "localhost" or a loopback IP. An empty host is every interface.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
