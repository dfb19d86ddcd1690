package hosted_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/serve/hosted"
)

// serving runs hosted.Serve on a loopback listener until the test's
// stop is called; it returns the base URL and the channel of Serve's
// result.
func serving(t *testing.T, h http.Handler, cfg hosted.ServeConfig) (url string, stop context.CancelFunc, served <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listener = ln
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done, returned := make(chan error, 1), make(chan struct{})
	go func() {
		done <- hosted.Serve(ctx, h, cfg)
		close(returned)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-returned:
		case <-time.After(30 * time.Second):
			t.Error("Serve did not return")
		}
	})
	scheme := "http"
	if cfg.TLSCertFile != "" {
		scheme = "https"
	}
	return scheme + "://" + ln.Addr().String(), cancel, done
}

// TestServeGracefulShutdown: after the signal, new connections are
// refused, a running request finishes within the grace period and is
// answered, and Serve returns nil.
func TestServeGracefulShutdown(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
		io.WriteString(w, "finished")
	})
	url, stop, served := serving(t, h, hosted.ServeConfig{ShutdownGrace: time.Minute})
	got := make(chan string, 1)
	go func() {
		resp, err := http.Get(url)
		if err != nil {
			got <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		got <- string(b)
	}()
	<-started
	stop()
	// Serve stops accepting at once: wait until a new connection is refused.
	for {
		c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
		if err != nil {
			break
		}
		c.Close()
		time.Sleep(10 * time.Millisecond)
	}
	close(release)
	if body := <-got; body != "finished" {
		t.Errorf("the running request got %q", body)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// TestServeGraceOver: when the grace period is over, StopScripts is
// called and the request answers; Serve returns nil.
func TestServeGraceOver(t *testing.T) {
	started, stopScripts := make(chan struct{}), make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-stopScripts
		io.WriteString(w, "stopped")
	})
	url, stop, served := serving(t, h, hosted.ServeConfig{ShutdownGrace: 50 * time.Millisecond, StopScripts: func() { close(stopScripts) }})
	got := make(chan string, 1)
	go func() {
		resp, err := http.Get(url)
		if err != nil {
			got <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		got <- string(b)
	}()
	<-started
	stop()
	if body := <-got; body != "stopped" {
		t.Errorf("the running request got %q", body)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// TestServeGraceOverCancels: a request that ignores StopScripts has its
// context cancelled.
func TestServeGraceOverCancels(t *testing.T) {
	started := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
	})
	url, stop, served := serving(t, h, hosted.ServeConfig{ShutdownGrace: 50 * time.Millisecond})
	go func() {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
		}
	}()
	<-started
	stop()
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

func TestServeTLS(t *testing.T) {
	cert, key, pool := selfSigned(t)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "over TLS") })
	url, _, _ := serving(t, h, hosted.ServeConfig{TLSCertFile: cert, TLSKeyFile: key})
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); string(b) != "over TLS" || resp.TLS == nil {
		t.Errorf("got %q, TLS %v", b, resp.TLS != nil)
	}
	// Plain HTTP to a TLS server is refused.
	if resp, err := http.Get(strings.Replace(url, "https", "http", 1)); err == nil {
		if resp.StatusCode == http.StatusOK {
			t.Error("plain HTTP was served")
		}
		resp.Body.Close()
	}
}

func TestServeErrors(t *testing.T) {
	cert, key, _ := selfSigned(t)
	h := http.NotFoundHandler()
	for _, c := range []struct {
		name string
		cfg  hosted.ServeConfig
		want string
	}{
		{"cert without key", hosted.ServeConfig{Addr: "127.0.0.1:0", TLSCertFile: cert}, "both"},
		{"missing cert", hosted.ServeConfig{Addr: "127.0.0.1:0", TLSCertFile: cert + ".nope", TLSKeyFile: key}, "TLS certificate"},
		{"key for the cert", hosted.ServeConfig{Addr: "127.0.0.1:0", TLSCertFile: key, TLSKeyFile: key}, "TLS certificate"},
		{"bad address", hosted.ServeConfig{Addr: "127.0.0.1:99999"}, "99999"},
	} {
		err := hosted.Serve(context.Background(), h, c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key to files, and
// returns them with a pool that trusts the certificate.
func selfSigned(t testing.TB) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "toolscript test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")},
		DNSNames:     []string{"localhost"},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := errors.Join(
		os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600),
		os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600),
	); err != nil {
		t.Fatal(err)
	}
	parsed, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(parsed)
	return certFile, keyFile, pool
}
