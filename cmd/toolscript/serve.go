package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/toolscript/toolscript/host/auth"
	"github.com/toolscript/toolscript/host/config"
	"github.com/toolscript/toolscript/host/hosted"
	"github.com/toolscript/toolscript/host/limit"
	"github.com/toolscript/toolscript/host/luau"
	"github.com/toolscript/toolscript/host/mcpserver"
	"github.com/toolscript/toolscript/host/metrics"
	"github.com/toolscript/toolscript/host/sdk"
	"github.com/toolscript/toolscript/host/sdkdocs"
)

// servePoolSize is how many ready instances the server keeps.
const servePoolSize = 4

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "serve the execute_script tool over MCP on standard input and output, or over HTTP (--http)",
		Description: "Standard output carries protocol messages only; diagnostics go to standard error.\n" +
			"Register the command in an MCP client (command \"toolscript\", args [\"serve\"]).\n" +
			"With --http ADDR it serves the streamable HTTP transport at /mcp for many users instead\n" +
			"(the hosted mode: tokens from --auth-authority, io off unless --io-dir; see docs/hosted.md).",
		Flags: append(sharedFlags(),
			&cli.IntFlag{Name: "max-concurrent", Usage: fmt.Sprintf("scripts run at once; later calls wait (default %d)", config.DefaultMaxConcurrent)},
			&cli.DurationFlag{Name: "max-timeout", Usage: fmt.Sprintf("the most a call's timeout_ms may ask for (default %s)", config.DefaultMaxTimeout)},
			&cli.Int64Flag{Name: "max-script-bytes", Usage: fmt.Sprintf("the largest script accepted, in bytes (default %d)", config.DefaultMaxScriptBytes)},
			&cli.DurationFlag{Name: "queue-wait", Usage: fmt.Sprintf("the longest a call waits for a slot before it fails (default: as long as it lives; %s with --http)", config.DefaultQueueWait)},
			&cli.StringFlag{Name: "http", Usage: "serve MCP over streamable HTTP at `ADDR`/mcp, e.g. 127.0.0.1:8080 or :8080 (the hosted mode)"},
			&cli.BoolFlag{Name: "stateless", Usage: "--http: issue no sessions, so that any replica serves any request"},
			&cli.StringFlag{Name: "metrics-addr", Usage: "--http: serve /metrics on this address (such as 127.0.0.1:9090) instead of the public one"},
			&cli.IntFlag{Name: "max-concurrent-per-user", Usage: "--http: scripts one user runs at once (default: --max-concurrent)"},
			&cli.IntFlag{Name: "rate-limit", Usage: "--http: executions a user may start a minute; beyond, HTTP 429 (default: no limit)"},
			&cli.StringSliceFlag{Name: "allowed-origins", Usage: "--http: web origins whose pages may call the server, e.g. https://app.example.com (comma-separated)"},
			&cli.StringFlag{Name: "tls-cert", Usage: "--http: serve HTTPS with this PEM certificate `FILE` (and --tls-key)"},
			&cli.StringFlag{Name: "tls-key", Usage: "--http: the PEM private key `FILE` of --tls-cert"},
			&cli.DurationFlag{Name: "shutdown-grace", Usage: fmt.Sprintf("--http: how long running scripts may finish after SIGTERM or SIGINT (default %s)", config.DefaultShutdownGrace)},
			&cli.StringFlag{Name: "auth-authority", Usage: "--http: the token issuer `URL` (its iss); turns authentication on"},
			&cli.StringFlag{Name: "auth-audience", Usage: "--http: the audience every token must name (its aud)"},
			&cli.StringFlag{Name: "auth-jwks-uri", Usage: "--http: the issuer's key set `URL` (default: from its discovery document)"},
			&cli.StringSliceFlag{Name: "auth-scopes", Usage: "--http: scopes every token must carry (comma-separated)"},
			&cli.StringFlag{Name: "public-url", Usage: "--http: the server's public base `URL`, when a proxy in front changes it"},
			&cli.BoolFlag{Name: "insecure-no-auth", Usage: "--http: serve without authentication on any address (anyone who reaches it runs scripts)"},
		),
		OnUsageError: usageError,
		Action:       serve,
	}
}

func serve(c *cli.Context) error {
	if c.NArg() > 0 {
		return usagef("serve takes no arguments")
	}
	file, err := loadConfig(c)
	if err != nil {
		return err
	}
	limits, err := config.ResolveServer(file, config.ServerFlags{
		MaxConcurrent:  c.Int("max-concurrent"),
		MaxTimeout:     c.Duration("max-timeout"),
		MaxScriptBytes: c.Int64("max-script-bytes"),
		QueueWait:      c.Duration("queue-wait"),
		HTTP:           c.String("http"),
	})
	if err != nil {
		return usagef("%v", err)
	}
	hostedFlags := config.HostedFlags{
		Stateless:            c.Bool("stateless"),
		MetricsAddr:          c.String("metrics-addr"),
		MaxConcurrentPerUser: c.Int("max-concurrent-per-user"),
		RateLimit:            c.Int("rate-limit"),
		AllowedOrigins:       c.StringSlice("allowed-origins"),
		TLSCert:              c.String("tls-cert"),
		TLSKey:               c.String("tls-key"),
		ShutdownGrace:        c.Duration("shutdown-grace"),
		InsecureNoAuth:       c.Bool("insecure-no-auth"),
		Auth: config.Auth{
			Authority: c.String("auth-authority"),
			Audience:  c.String("auth-audience"),
			JWKSURI:   c.String("auth-jwks-uri"),
			Scopes:    c.StringSlice("auth-scopes"),
			PublicURL: c.String("public-url"),
		},
	}
	if given := hostedFlags.Given(); limits.Mode() == config.Stdio && len(given) > 0 {
		return usagef("%s: only with --http ADDR (the hosted mode)", strings.Join(given, ", "))
	}
	s, err := settings(c, file, limits.Mode())
	if err != nil {
		return err
	}

	// A client that goes away must not kill the server with SIGPIPE while it
	// stops its scripts: writes fail instead.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// The module compiles while the sdk loads (both take a second or more
	// the first time); the sdk's table is set once it is known.
	type newRuntime struct {
		rt  *luau.Runtime
		err error
	}
	compiled := make(chan newRuntime, 1)
	go func() {
		rt, err := luau.New(ctx, luau.Config{MaxMemoryBytes: luau.MaxMemoryFor(s.Limits.HeapBytes)})
		compiled <- newRuntime{rt, err}
	}()

	// An upstream whose tools changed rebuilds the sdk (watchSDK).
	toolsChanged := make(chan string, 1)
	client, err := openSDK(ctx, c, file, func(server string) {
		select {
		case toolsChanged <- server:
		default: // a rebuild is pending already, and will see this change
		}
	})
	r := <-compiled
	if r.rt != nil {
		defer r.rt.Close(context.Background())
	}
	if err != nil {
		return err
	}
	if r.err != nil {
		return cli.Exit(fmt.Sprintf("toolscript: %v", r.err), exitScriptError)
	}
	rt := r.rt
	var current atomic.Pointer[sdk.Client]
	current.Store(client)
	if client != nil {
		defer client.Close()
		manifest := client.Manifest()
		if err := rt.SetSDK(&manifest); err != nil {
			return cli.Exit(fmt.Sprintf("toolscript: %v", err), exitScriptError)
		}
		for _, api := range client.Catalog().APIs {
			for _, w := range api.Warnings {
				fmt.Fprintf(c.App.ErrWriter, "toolscript serve: api %s: %s\n", api.Name, w)
			}
		}
	}
	rt.StartPool(servePoolSize)

	cfg := mcpserver.Config{
		Runtime:        rt,
		Limits:         s.Limits,
		IO:             s.IO,
		MaxConcurrent:  limits.MaxConcurrent,
		MaxTimeout:     limits.MaxTimeout,
		MaxScriptBytes: limits.MaxScriptBytes,
		QueueWait:      limits.QueueWait,
		Version:        toolscriptVersion(),
		ErrorLog:       c.App.ErrWriter,
	}
	if limits.Mode() == config.Hosted {
		cfg.Metrics = metrics.New(hosted.AuthReasons())
	}
	if client != nil {
		cfg.SDKDocs = sdkdocs.New(client.Catalog())
		// Each call gets its own session: its budgets, and the upstream
		// credentials of its own _meta.auth, which no other call sees.
		cfg.Prepare = func(_ context.Context, call *mcpserver.Call) error {
			creds, err := sdk.ParseMetaAuth(call.MetaAuth)
			if err != nil {
				return err
			}
			client := current.Load()
			call.Script.SDK = client.Session(creds)
			if cfg.Metrics != nil {
				call.Script.SDK = client.Observed(call.Script.SDK, countUpstreamCall(cfg.Metrics))
			}
			call.Script.MaxParallel = client.MaxParallel()
			return nil
		}
	}
	watch := func(srv *mcpserver.Server, logf func(format string, args ...any)) {
		if client != nil {
			go watchSDK(ctx, toolsChanged, &current, rt, srv, logf)
		}
	}
	if limits.Mode() == config.Hosted {
		ready := func(context.Context) error { return nil }
		if client != nil {
			ready = client.Ready // Refresh keeps the upstream servers: the first client's check is theirs
		}
		return serveHTTP(c, ctx, stop, cfg, file, limits, hostedFlags, watch, ready)
	}

	srv, err := mcpserver.New(cfg)
	if err != nil {
		return cli.Exit(fmt.Sprintf("toolscript: %v", err), exitScriptError)
	}
	watch(srv, func(format string, args ...any) {
		fmt.Fprintf(c.App.ErrWriter, "toolscript serve: "+format+"\n", args...)
	})
	fmt.Fprintf(c.App.ErrWriter, "toolscript serve: ready (io directory: %s; %s at once)\n", ioDir(s.IO), count(limits.MaxConcurrent, "script"))
	if err := srv.Serve(ctx, c.App.Reader, c.App.Writer); err != nil {
		return cli.Exit(fmt.Sprintf("toolscript: %v", err), exitScriptError)
	}
	return nil
}

// serveHTTP is the hosted mode (docs/hosted.md): the MCP server behind
// authentication, limits, logs and metrics (host/hosted), until ctx ends.
// Its diagnostics and access log are JSON lines on standard error.
func serveHTTP(c *cli.Context, ctx context.Context, stopSignals context.CancelFunc, cfg mcpserver.Config,
	file *config.File, limits config.ServerSettings, flags config.HostedFlags,
	watch func(*mcpserver.Server, func(string, ...any)), sdkReady func(context.Context) error) error {
	h, err := config.ResolveHosted(file, limits.HTTP, flags)
	if err != nil {
		return usagef("%v", err)
	}
	logger := slog.New(slog.NewJSONHandler(c.App.ErrWriter, nil))
	for _, w := range h.Warnings {
		logger.Warn(w)
	}
	fail := func(err error) error { return cli.Exit(fmt.Sprintf("toolscript: %v", err), exitScriptError) }

	m := cfg.Metrics
	var authn *auth.Authenticator
	if h.Auth != nil {
		authn, err = auth.New(ctx, auth.Config{
			Issuer: h.Auth.Authority, Audience: h.Auth.Audience, JWKSURI: h.Auth.JWKSURI,
			Scopes: h.Auth.Scopes, PublicURL: h.Auth.PublicURL,
			Logger: logger, OnFailure: hosted.AuthFailureHook(m),
		})
		if err != nil {
			return fail(err)
		}
		defer authn.Close()
	}
	var rate *limit.Rate[auth.User]
	if h.RateLimit > 0 {
		if rate, err = limit.NewRate[auth.User](h.RateLimit); err != nil {
			return fail(err)
		}
	}

	cfg.PerUserIO = cfg.IO != nil
	cfg.MaxConcurrentPerUser = h.MaxConcurrentPerUser
	cfg.ErrorLog = slog.NewLogLogger(logger.Handler(), slog.LevelWarn).Writer()
	srv, err := mcpserver.New(cfg)
	if err != nil {
		return fail(err)
	}
	watch(srv, func(format string, args ...any) { logger.Info(fmt.Sprintf(format, args...)) })
	transport, err := srv.HTTPHandler(mcpserver.HTTPConfig{Stateless: h.Stateless, CheckLoopbackHost: authn == nil, Logger: logger})
	if err != nil {
		return fail(err)
	}
	handler, err := hosted.New(hosted.Config{
		MCP: transport, Auth: authn, Rate: rate, MaxBodyBytes: srv.MaxRequestBytes(), BodyTimeout: h.BodyTimeout,
		Metrics: m, MetricsElsewhere: h.MetricsAddr != "", AccessLog: logger, AllowedOrigins: h.AllowedOrigins,
		// The module is compiled and the specs are loaded by now; the
		// upstream MCP servers are checked on each probe.
		Ready: hosted.AllReady(sdkReady),
	})
	if err != nil {
		return usagef("%v", err)
	}

	if h.MetricsAddr != "" {
		ln, err := net.Listen("tcp", h.MetricsAddr)
		if err != nil {
			return fail(fmt.Errorf("metrics address: %w", err))
		}
		logger.Info("metrics", "url", "http://"+ln.Addr().String()+hosted.PathMetrics)
		go func() {
			if err := hosted.ServeMetrics(ctx, ln, m.Handler()); err != nil {
				logger.Error(err.Error())
			}
		}()
	}

	// The first signal shuts down gracefully; the next one gets the
	// default action and ends the process at once.
	go func() {
		<-ctx.Done()
		stopSignals()
	}()
	scheme := "http"
	if h.TLSCert != "" {
		scheme = "https"
	}
	issuer := "off"
	if h.Auth != nil {
		issuer = h.Auth.Authority
	}
	err = hosted.Serve(ctx, handler, hosted.ServeConfig{
		Addr: h.Addr, TLSCertFile: h.TLSCert, TLSKeyFile: h.TLSKey, ShutdownGrace: h.ShutdownGrace,
		Logger: logger, StopScripts: srv.Stop,
		MaxConnections: h.MaxConnections, MaxConnectionsPerClient: h.MaxConnectionsPerClient, OnShed: m.Refused,
		OnListen: func(addr net.Addr) {
			logger.Info("ready", "url", scheme+"://"+addr.String()+hosted.PathMCP, "auth", issuer,
				"stateless", h.Stateless, "io", userIODir(cfg.IO), "max_concurrent", limits.MaxConcurrent,
				"version", cfg.Version)
		},
	})
	if err != nil {
		return fail(err)
	}
	return nil
}

// ioDir describes the io directory for the start-up message.
func ioDir(io *luau.IO) string {
	if io == nil {
		return "off"
	}
	if abs, err := filepath.Abs(io.Dir); err == nil {
		return abs
	}
	return io.Dir
}

// userIODir describes the hosted mode's io directories.
func userIODir(io *luau.IO) string {
	if io == nil {
		return "off"
	}
	return filepath.Join(ioDir(io), "<user>")
}

// watchSDK rebuilds the sdk each time an upstream MCP server's tools
// change (notifications/tools/list_changed), until ctx ends: the client
// scripts get, the runtime's sdk table and the docs. Executions running
// keep what they started with; function ids keep their meaning across
// the change (sdk.Client.Refresh).
func watchSDK(ctx context.Context, changed <-chan string, current *atomic.Pointer[sdk.Client],
	rt *luau.Runtime, srv *mcpserver.Server, logf func(format string, args ...any)) {
	for {
		select {
		case <-ctx.Done():
			return
		case server := <-changed:
			next, err := current.Load().Refresh()
			if err != nil {
				logf("mcp server %s: its tools changed, and the sdk could not be rebuilt (keeping the previous one): %v", server, err)
				continue
			}
			// The client first: it knows every id of the old manifest too.
			prev := current.Swap(next)
			manifest := next.Manifest()
			if err := rt.SetSDK(&manifest); err != nil {
				current.Store(prev)
				logf("mcp server %s: its tools changed, and the sdk could not be rebuilt (keeping the previous one): %v", server, err)
				continue
			}
			docs := sdkdocs.New(next.Catalog())
			srv.SetSDKDocs(docs)
			logf("mcp server %s: its tools changed; the sdk now has %d functions", server, docs.Count())
		}
	}
}

// countUpstreamCall counts an sdk call in m: an HTTP status by its class.
func countUpstreamCall(m *metrics.Metrics) func(source, status string) {
	return func(source, status string) {
		if code, err := strconv.Atoi(status); err == nil {
			status = metrics.HTTPStatus(code)
		}
		m.UpstreamCall(source, status)
	}
}
