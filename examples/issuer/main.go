// Command issuer is an OAuth 2.0 issuer for trying toolscript's hosted mode
// on one machine: it serves an OpenID discovery document and its key set on
// loopback, and signs an access token for anyone who asks at /token. That
// is what makes it a try-out only: it listens on loopback addresses alone.
// Its Ed25519 key is made at start-up and lives as long as the process, so
// tokens from an earlier run are refused.
//
//	go run ./examples/issuer        # http://127.0.0.1:9000, tokens for http://127.0.0.1:8080
//	curl -s http://127.0.0.1:9000/token?sub=alice
package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"regexp"
	"syscall"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
)

// keyID names the issuer's one key in its tokens and its key set.
const keyID = "example"

// issuer signs tokens for one audience with one key.
type issuer struct {
	url      string
	audience string
	ttl      time.Duration
	key      ed25519.PrivateKey
}

func main() {
	addr := flag.String("addr", "127.0.0.1:9000", "the loopback address to listen on")
	audience := flag.String("audience", "http://127.0.0.1:8080", "the aud of the tokens: toolscript's --auth-audience")
	ttl := flag.Duration("ttl", time.Hour, "how long a token is valid")
	flag.Parse()
	if err := run(*addr, *audience, *ttl); err != nil {
		fmt.Fprintln(os.Stderr, "issuer:", err)
		os.Exit(1)
	}
}

func run(addr, audience string, ttl time.Duration) error {
	l, err := listenLoopback(addr)
	if err != nil {
		return err
	}
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	iss := &issuer{url: "http://" + l.Addr().String(), audience: audience, ttl: ttl, key: key}
	token, err := iss.token("me")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: iss.handler(), ReadHeaderTimeout: 10 * time.Second}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-stop
		srv.Close()
	}()
	fmt.Printf("issuer: listening on %s (tokens for the audience %s)\n", iss.url, audience)
	fmt.Printf("issuer: a token for \"me\", valid for %s (more at %s/token?sub=NAME):\n%s\n", ttl, iss.url, token)
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// listenLoopback listens on addr, which must be a loopback address.
func listenLoopback(addr string) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	if ip := l.Addr().(*net.TCPAddr).IP; !ip.IsLoopback() {
		l.Close()
		return nil, fmt.Errorf("%s is not a loopback address: this issuer gives a token to anyone who asks", addr)
	}
	return l, nil
}

func (iss *issuer) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]any{
			"issuer":                                iss.url,
			"jwks_uri":                              iss.url + "/jwks",
			"token_endpoint":                        iss.url + "/token",
			"response_types_supported":              []string{"token"},
			"subject_types_supported":               []string{"public"},
			"id_token_signing_alg_values_supported": []string{"EdDSA"},
		})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, _ *http.Request) {
		jwk, err := jwkset.NewJWKFromKey(iss.key.Public(), jwkset.JWKOptions{
			Metadata: jwkset.JWKMetadataOptions{KID: keyID, ALG: jwkset.AlgEdDSA, USE: jwkset.UseSig},
		})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		writeJSON(w, jwkset.JWKSMarshal{Keys: []jwkset.JWKMarshal{jwk.Marshal()}})
	})
	mux.HandleFunc("GET /token", func(w http.ResponseWriter, r *http.Request) {
		sub := r.URL.Query().Get("sub")
		if sub == "" {
			sub = "me"
		}
		if !validSub.MatchString(sub) {
			http.Error(w, "sub must be 1 to 64 letters, digits, '.', '_', '-' or '@'", http.StatusBadRequest)
			return
		}
		token, err := iss.token(sub)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Cache-Control", "no-store")
		fmt.Fprintln(w, token)
	})
	return mux
}

var validSub = regexp.MustCompile(`^[A-Za-z0-9._@-]{1,64}$`)

// token signs an access token for sub.
func (iss *issuer) token(sub string) (string, error) {
	now := time.Now()
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims{
		"iss":   iss.url,
		"aud":   iss.audience,
		"sub":   sub,
		"iat":   now.Unix(),
		"exp":   now.Add(iss.ttl).Unix(),
		"scope": "toolscript",
	})
	tok.Header["kid"] = keyID
	return tok.SignedString(iss.key)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
