package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
)

func TestIssuerTokensVerifyAgainstItsKeys(t *testing.T) {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(nil)
	defer srv.Close()
	iss := &issuer{url: srv.URL, audience: "http://127.0.0.1:8080", ttl: time.Hour, key: key}
	srv.Config.Handler = iss.handler()

	var discovery struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := json.Unmarshal(get(t, srv.URL+"/.well-known/openid-configuration", 200), &discovery); err != nil {
		t.Fatal(err)
	}
	if discovery.Issuer != srv.URL || discovery.JWKSURI != srv.URL+"/jwks" {
		t.Fatalf("discovery %+v", discovery)
	}
	keys, err := keyfunc.NewDefault([]string{discovery.JWKSURI})
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(get(t, srv.URL+"/token?sub=alice", 200)))
	claims := jwt.MapClaims{}
	if _, err := jwt.ParseWithClaims(token, claims, keys.Keyfunc, jwt.WithIssuer(srv.URL),
		jwt.WithAudience("http://127.0.0.1:8080"), jwt.WithExpirationRequired(), jwt.WithValidMethods([]string{"EdDSA"})); err != nil {
		t.Fatalf("the token does not verify: %v", err)
	}
	if claims["sub"] != "alice" {
		t.Fatalf("sub %v", claims["sub"])
	}
	get(t, srv.URL+"/token?sub=a%20b", 400)
}

func TestIssuerListensOnLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "[::]:0"} {
		l, err := listenLoopback(addr)
		if err == nil {
			l.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "not a loopback address") {
			t.Errorf("listening on %s: %v", addr, err)
		}
	}
	l, err := listenLoopback("127.0.0.1:0")
	if err != nil {
		t.Fatalf("listening on loopback: %v", err)
	}
	l.Close()
}

func get(t *testing.T, url string, status int) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		t.Fatalf("GET %s: %d %s, want %d", url, resp.StatusCode, body, status)
	}
	return body
}
