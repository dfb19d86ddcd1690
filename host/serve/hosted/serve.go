package hosted

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/toolscript/toolscript/host/platform/positive"
)

// The http.Server settings of the hosted mode.
const (
	// ReadHeaderTimeout bounds the time a client takes to send a request's
	// headers (a slow-loris client is cut off after it).
	ReadHeaderTimeout = 10 * time.Second
	// IdleTimeout closes a keep-alive connection with no request for so long.
	IdleTimeout = 2 * time.Minute
	// MaxHeaderBytes caps a request's headers; a bearer token is at most
	// auth.MaxTokenBytes.
	MaxHeaderBytes = 64 << 10
	// DefaultWriteTimeout bounds, by default, each write of a response
	// (ServeConfig.WriteTimeout).
	DefaultWriteTimeout = 30 * time.Second
	// DefaultShutdownGrace is how long running scripts may go on after a
	// signal, by default (--shutdown-grace).
	DefaultShutdownGrace = 10 * time.Second
	// stopWait bounds the wait for the requests to be answered once their
	// scripts are stopped, and again once they are cancelled.
	stopWait = 5 * time.Second
)

// ServeConfig configures Serve.
type ServeConfig struct {
	// Addr is the address to listen on, such as ":8080" or
	// "127.0.0.1:8080". Ignored when Listener is set.
	Addr string
	// Listener, when set, is listened on instead of Addr (tests).
	Listener net.Listener
	// TLSCertFile and TLSKeyFile serve HTTPS when both are set: a PEM
	// certificate (chain) and its key.
	TLSCertFile, TLSKeyFile string
	// ShutdownGrace is how long running requests may go on once ctx ends;
	// then their scripts are stopped. Default DefaultShutdownGrace.
	ShutdownGrace time.Duration
	// Logger receives start and shutdown messages. Default slog.Default().
	Logger *slog.Logger
	// OnListen, when set, is called with the address listened on once the
	// server accepts connections.
	OnListen func(net.Addr)
	// StopScripts, when set, is called when the grace period is over: it
	// stops the running scripts, whose calls are then answered (an MCP
	// server's Stop). Requests still running after that have their
	// context cancelled.
	StopScripts func()

	// MaxConnections caps the connections open at once; one over it takes
	// the place of a connection waiting for a request, or, when every
	// connection has a request in progress, is answered 503 with
	// Retry-After and closed. 0 means DefaultMaxConnections for the
	// process's descriptor limit.
	MaxConnections int
	// MaxConnectionsPerClient caps the connections open at once from one
	// client address (an IPv6 client's /64), so that one client cannot
	// take them all. 0 means DefaultMaxConnectionsPerClient, or a quarter
	// of MaxConnections when that is less; it is never more than
	// MaxConnections. Behind a proxy every connection is the proxy's:
	// make it MaxConnections.
	MaxConnectionsPerClient int
	// OnShed, when set, is called for every connection over a cap, with
	// the cap (ShedConnections, ShedClientConnections).
	OnShed func(limit string)
	// WriteTimeout bounds each write of a response: the client must take
	// it within WriteTimeout, or the connection is closed (writeDeadlines).
	// Default DefaultWriteTimeout.
	WriteTimeout time.Duration
}

// connectionCaps returns the caps on connections cfg asks for, the
// defaults filled in, and a warning when the total is more than the
// descriptor limit allows.
func (cfg ServeConfig) connectionCaps() (total, perClient int, warning string, err error) {
	if cfg.MaxConnections < 0 || cfg.MaxConnectionsPerClient < 0 {
		return 0, 0, "", fmt.Errorf("hosted: the caps on connections must not be negative (got %d and %d per client)",
			cfg.MaxConnections, cfg.MaxConnectionsPerClient)
	}
	files := fileLimit()
	total = cfg.MaxConnections
	if total == 0 {
		total = DefaultMaxConnections(files)
	} else if files > 0 && uint64(total) > files {
		warning = fmt.Sprintf("max_connections %d is more than the process may open files (%d): "+
			"connections beyond that fail to be accepted instead of getting 503", total, files)
	}
	perClient = cfg.MaxConnectionsPerClient
	if perClient == 0 {
		// A quarter of a small total, so that one client never holds it all.
		perClient = min(DefaultMaxConnectionsPerClient, max(total/4, 1))
	}
	return total, min(perClient, total), warning, nil
}

// Serve serves h until ctx ends (a signal), then shuts down gracefully: it
// stops accepting connections, lets the running requests finish for the
// grace period, then stops their scripts (StopScripts) and waits briefly
// for their answers before it cancels the requests left and closes their
// connections. It returns nil after such a shutdown, and an error if it could not
// listen or serve.
func Serve(ctx context.Context, h http.Handler, cfg ServeConfig) error {
	cfg.ShutdownGrace = positive.Or(cfg.ShutdownGrace, DefaultShutdownGrace)
	if cfg.WriteTimeout < 0 {
		return fmt.Errorf("hosted: the write timeout must not be negative (got %s)", cfg.WriteTimeout)
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	maxConns, perClient, warning, err := cfg.connectionCaps()
	if err != nil {
		return err
	}
	if warning != "" {
		logger.Warn(warning)
	}
	logger.Info("connections capped", "max_connections", maxConns, "max_connections_per_client", perClient,
		"open_files_limit", fileLimit())
	var tlsConfig *tls.Config
	if cfg.TLSCertFile != "" || cfg.TLSKeyFile != "" {
		if cfg.TLSCertFile == "" || cfg.TLSKeyFile == "" {
			return errors.New("hosted: TLS needs both a certificate (--tls-cert) and a key (--tls-key)")
		}
		cert, err := tls.LoadX509KeyPair(cfg.TLSCertFile, cfg.TLSKeyFile)
		if err != nil {
			return fmt.Errorf("hosted: loading the TLS certificate: %w", err)
		}
		tlsConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	ln := cfg.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", cfg.Addr); err != nil {
			return fmt.Errorf("hosted: %w", err)
		}
	}
	// The caps count TCP connections, below TLS: the server sees each
	// one as TLS, and a connection over a cap costs no more than its 503.
	limited := newLimitListener(ln, maxConns, perClient, tlsConfig, cfg.OnShed)
	ln = limited
	if tlsConfig != nil {
		ln = tls.NewListener(ln, tlsConfig)
	}

	// Every request's context ends with base: that is how the requests
	// still running after the grace period and StopScripts are stopped.
	base, stopRequests := context.WithCancel(context.Background())
	defer stopRequests()
	srv := &http.Server{
		Handler:           limited.tracking(writeDeadlines(cfg.WriteTimeout, h)),
		ReadHeaderTimeout: ReadHeaderTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ConnState:         limited.connState,
		ConnContext:       limited.connContext,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		TLSConfig:         tlsConfig,
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	if cfg.OnListen != nil {
		cfg.OnListen(ln.Addr())
	}

	select {
	case err := <-served:
		return fmt.Errorf("hosted: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down: no new connections; running scripts may finish", "grace", cfg.ShutdownGrace.String())
	// Shutdown returns once every connection is idle (its responses
	// written) and closed, or when its context ends.
	if shutdown(srv, cfg.ShutdownGrace) != nil {
		logger.Warn("the grace period is over: stopping the running scripts")
		if cfg.StopScripts != nil {
			cfg.StopScripts()
		}
		if cfg.StopScripts == nil || shutdown(srv, stopWait) != nil {
			stopRequests()
			if shutdown(srv, stopWait) != nil {
				srv.Close()
			}
		}
	}
	<-served // http.ErrServerClosed
	logger.Info("stopped")
	return nil
}

// writeDeadlines gives each write of a response a deadline of its own:
// every Write, and every Flush, must reach the client within timeout of
// its start, or it fails and net/http closes the connection. A response
// that goes on being written (an event stream of a long script, each
// event one write) is never cut while the client takes it; one the client
// does not read fails within timeout, and what it held (its bytes in the
// host's budgets, its connection) is given back. There is no deadline
// while the handler writes nothing (a script running); the rest of the
// response, which net/http writes once the handler returns, gets one
// too.
func writeDeadlines(timeout time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		// Fails only on writers without a connection (tests).
		_ = rc.SetWriteDeadline(time.Time{}) // the last response's is over
		dw := &deadlineWriter{ResponseWriter: w, rc: rc, timeout: timeout}
		next.ServeHTTP(dw, r)
		dw.arm()
	})
}

// deadlineWriter sets the write deadline before each write.
type deadlineWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (w *deadlineWriter) arm() { _ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout)) }

func (w *deadlineWriter) Write(p []byte) (int, error) {
	w.arm()
	return w.ResponseWriter.Write(p)
}

func (w *deadlineWriter) FlushError() error {
	w.arm()
	return w.rc.Flush()
}

func (w *deadlineWriter) Flush() { _ = w.FlushError() }

func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// shutdown shuts srv down, waiting at most d for its connections.
func shutdown(srv *http.Server, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return srv.Shutdown(ctx)
}

// ServeMetrics serves m at /metrics (and nothing else) on ln until ctx
// ends: the address for Prometheus to scrape, kept off the public one.
func ServeMetrics(ctx context.Context, ln net.Listener, m http.Handler) error {
	mux := http.NewServeMux()
	mux.Handle("GET "+PathMetrics, m)
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadHeaderTimeout,
		WriteTimeout:      time.Minute,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("hosted: metrics address: %w", err)
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.Background(), stopWait)
		defer cancel()
		srv.Shutdown(shutdown)
		return nil
	}
}
