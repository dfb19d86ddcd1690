package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestHostedSections(t *testing.T) {
	f := loadText(t, `
[server]
http = "127.0.0.1:9000"
stateless = true
max_concurrent_per_user = 2
rate_limit = 120
queue_wait = "5s"
allowed_origins = ["https://app.example.com"]
tls_cert = "cert.pem"
tls_key = "key.pem"
shutdown_grace = "20s"
max_connections = 2000
max_connections_per_client = 50
auth_failures_per_minute = 30
body_timeout = "5s"
write_timeout = "45s"
max_unwritten_bytes_per_user = 8388608

[auth]
authority = "https://issuer.example.com"
audience = "https://toolscript.example.com"
jwks_uri = "https://issuer.example.com/keys"
scopes = ["toolscript"]
public_url = "https://toolscript.example.com"
`)
	srv, err := ResolveServer(f, ServerFlags{})
	if err != nil {
		t.Fatal(err)
	}
	if srv.HTTP != "127.0.0.1:9000" || srv.QueueWait != 5*time.Second || srv.Mode() != Hosted {
		t.Errorf("server settings %+v", srv)
	}
	h, err := ResolveHosted(f, srv.HTTP, HostedFlags{})
	if err != nil {
		t.Fatal(err)
	}
	want := HostedSettings{
		Addr: "127.0.0.1:9000", Stateless: true, MaxConcurrentPerUser: 2, RateLimit: 120,
		AllowedOrigins: []string{"https://app.example.com"}, TLSCert: "cert.pem", TLSKey: "key.pem",
		ShutdownGrace: 20 * time.Second, MaxConnections: 2000, MaxConnectionsPerClient: 50, AuthFailuresPerMinute: 30, BodyTimeout: 5 * time.Second,
		WriteTimeout: 45 * time.Second, MaxUnwrittenBytesPerUser: 8 << 20,
		Auth: &Auth{Authority: "https://issuer.example.com", Audience: "https://toolscript.example.com",
			JWKSURI: "https://issuer.example.com/keys", Scopes: []string{"toolscript"}, PublicURL: "https://toolscript.example.com"},
	}
	if !reflect.DeepEqual(h, want) {
		t.Errorf("from the file:\n%+v\nwant\n%+v", h, want)
	}

	// Flags win.
	srv, _ = ResolveServer(f, ServerFlags{HTTP: ":8080", QueueWait: time.Second})
	h, err = ResolveHosted(f, srv.HTTP, HostedFlags{
		MaxConcurrentPerUser: 3, RateLimit: 10, AllowedOrigins: []string{"http://localhost:3000"},
		TLSCert: "c2", TLSKey: "k2", ShutdownGrace: time.Second,
		Auth: Auth{Authority: "https://other.example.com", Audience: "aud", Scopes: []string{"a", "b"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if srv.QueueWait != time.Second || h.Addr != ":8080" || h.MaxConcurrentPerUser != 3 || h.RateLimit != 10 ||
		h.AllowedOrigins[0] != "http://localhost:3000" || h.TLSCert != "c2" || h.ShutdownGrace != time.Second ||
		h.Auth.Authority != "https://other.example.com" || h.Auth.Audience != "aud" || len(h.Auth.Scopes) != 2 ||
		h.Auth.JWKSURI != "https://issuer.example.com/keys" {
		t.Errorf("flags over the file: %+v %+v", srv, h)
	}
}

func TestHostedDefaults(t *testing.T) {
	srv, err := ResolveServer(nil, ServerFlags{HTTP: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	// Unset is zero: host/app fills in the defaults (TestSettingsDefaults).
	if srv.QueueWait != 0 || srv.Mode() != Hosted {
		t.Errorf("hosted: %+v", srv)
	}
	if stdio, _ := ResolveServer(nil, ServerFlags{}); stdio.QueueWait != 0 || stdio.Mode() != Stdio {
		t.Errorf("stdio: %+v", stdio)
	}
	h, err := ResolveHosted(nil, srv.HTTP, HostedFlags{})
	if err != nil {
		t.Fatal(err)
	}
	if h.Auth != nil || h.ShutdownGrace != 0 || h.RateLimit != 0 || len(h.Warnings) != 1 ||
		h.BodyTimeout != 0 || h.WriteTimeout != 0 || h.MaxUnwrittenBytesPerUser != 0 ||
		h.MaxConnections != 0 || h.MaxConnectionsPerClient != 0 || h.AuthFailuresPerMinute != 0 ||
		!strings.Contains(h.Warnings[0], "authentication is off") {
		t.Errorf("defaults: %+v", h)
	}
}

// TestHostedFailsClosed: without an issuer, only loopback addresses, unless
// --insecure-no-auth.
func TestHostedFailsClosed(t *testing.T) {
	for _, c := range []struct {
		addr     string
		insecure bool
		ok       bool
	}{
		{"127.0.0.1:8080", false, true},
		{"[::1]:8080", false, true},
		{"localhost:8080", false, true},
		{"127.3.4.5:8080", false, true},
		{":8080", false, false},
		{"0.0.0.0:8080", false, false},
		{"[::]:8080", false, false},
		{"192.168.1.10:8080", false, false},
		{"example.com:8080", false, false},
		{"8080", false, false},
		{":8080", true, true},
		{"0.0.0.0:8080", true, true},
	} {
		h, err := ResolveHosted(nil, c.addr, HostedFlags{InsecureNoAuth: c.insecure})
		if (err == nil) != c.ok {
			t.Errorf("%s insecure=%v: error %v", c.addr, c.insecure, err)
			continue
		}
		if err != nil && !strings.Contains(err.Error(), "--insecure-no-auth") {
			t.Errorf("%s: the error does not say how to go on: %v", c.addr, err)
		}
		if err == nil && len(h.Warnings) == 0 {
			t.Errorf("%s: no warning that authentication is off", c.addr)
		}
	}
	// With an issuer, any address.
	if _, err := ResolveHosted(nil, ":8080", HostedFlags{Auth: Auth{Authority: "https://i.example.com", Audience: "a"}}); err != nil {
		t.Error(err)
	}
}

func TestHostedErrors(t *testing.T) {
	for _, c := range []struct {
		name  string
		flags HostedFlags
		want  string
	}{
		{"cert without key", HostedFlags{TLSCert: "c"}, "--tls-key"},
		{"key without cert", HostedFlags{TLSKey: "k"}, "--tls-cert"},
		{"negative rate", HostedFlags{RateLimit: -1}, "--rate-limit"},
		{"negative per user", HostedFlags{MaxConcurrentPerUser: -1}, "--max-concurrent-per-user"},
		{"negative grace", HostedFlags{ShutdownGrace: -time.Second}, "--shutdown-grace"},
		{"insecure and an issuer", HostedFlags{InsecureNoAuth: true, Auth: Auth{Authority: "https://i", Audience: "a"}}, "contradict"},
		{"scopes without issuer", HostedFlags{Auth: Auth{Scopes: []string{"x"}}}, "need authority"},
	} {
		if _, err := ResolveHosted(nil, "127.0.0.1:1", c.flags); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := ResolveServer(nil, ServerFlags{QueueWait: -time.Second}); err == nil {
		t.Error("a negative --queue-wait was accepted")
	}
}

func TestHostedFlagsGiven(t *testing.T) {
	if got := (HostedFlags{}).Given(); len(got) != 0 {
		t.Errorf("no flags: %v", got)
	}
	got := HostedFlags{RateLimit: 1, Auth: Auth{Authority: "x"}}.Given()
	if !reflect.DeepEqual(got, []string{"--rate-limit", "--auth-authority"}) {
		t.Errorf("given %v", got)
	}
}

func TestHostedMetricsAddr(t *testing.T) {
	f := loadText(t, "[server]\nmetrics_addr = \"127.0.0.1:9090\"\n")
	s, err := ResolveHosted(f, "127.0.0.1:8080", HostedFlags{})
	if err != nil || s.MetricsAddr != "127.0.0.1:9090" {
		t.Errorf("from the file: %q, %v", s.MetricsAddr, err)
	}
	s, err = ResolveHosted(f, "127.0.0.1:8080", HostedFlags{MetricsAddr: "127.0.0.1:9191"})
	if err != nil || s.MetricsAddr != "127.0.0.1:9191" {
		t.Errorf("the flag wins: %q, %v", s.MetricsAddr, err)
	}
	if _, err := ResolveHosted(f, "127.0.0.1:8080", HostedFlags{MetricsAddr: "9191"}); err == nil || !strings.Contains(err.Error(), "want HOST:PORT") {
		t.Errorf("a bad address: %v", err)
	}
	if got := (HostedFlags{MetricsAddr: "x:1"}).Given(); len(got) != 1 || got[0] != "--metrics-addr" {
		t.Errorf("given %v", got)
	}
}
