package hosted_test

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/serve/hosted"
	"github.com/toolscript/toolscript/internal/testcert"
	"github.com/toolscript/toolscript/internal/testwait"
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

// getBody gets url in the background: the body it was answered, or the
// error.
func getBody(url string) <-chan string {
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
	return got
}

// heldHandler answers one request with body once release is closed; started
// is closed when the request arrives.
func heldHandler(release <-chan struct{}, body string) (h http.Handler, started <-chan struct{}) {
	arrived := make(chan struct{})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-release
		io.WriteString(w, body)
	}), arrived
}

// TestServeGracefulShutdown: after the signal, new connections are
// refused, a running request finishes within the grace period and is
// answered, and Serve returns nil.
func TestServeGracefulShutdown(t *testing.T) {
	release := make(chan struct{})
	h, started := heldHandler(release, "finished")
	url, stop, served := serving(t, h, hosted.ServeConfig{ShutdownGrace: time.Minute})
	got := getBody(url)
	<-started
	stop()
	// Serve stops accepting at once: wait until a new connection is refused.
	testwait.Until(t, "a new connection refused", func() bool {
		c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
		if err != nil {
			return true
		}
		c.Close()
		return false
	})
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
	stopScripts := make(chan struct{})
	h, started := heldHandler(stopScripts, "stopped")
	url, stop, served := serving(t, h, hosted.ServeConfig{ShutdownGrace: 50 * time.Millisecond, StopScripts: func() { close(stopScripts) }})
	got := getBody(url)
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
	cert, key, pool := testcert.SelfSigned(t)
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
	cert, key, _ := testcert.SelfSigned(t)
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
