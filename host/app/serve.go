package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolscript/toolscript/host/config"
	"github.com/toolscript/toolscript/host/contract/effects/trace"
	"github.com/toolscript/toolscript/host/contract/limit"
	"github.com/toolscript/toolscript/host/contract/policy"
	"github.com/toolscript/toolscript/host/contract/telemetry"
	"github.com/toolscript/toolscript/host/lint/scriptcheck"
	"github.com/toolscript/toolscript/host/platform/heapfloor"
	"github.com/toolscript/toolscript/host/platform/termtext"
	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/host/runtime/typecheck"
	"github.com/toolscript/toolscript/host/sdk"
	"github.com/toolscript/toolscript/host/sdk/learned"
	"github.com/toolscript/toolscript/host/sdk/sdkdocs"
	"github.com/toolscript/toolscript/host/serve/auth"
	"github.com/toolscript/toolscript/host/serve/hosted"
	"github.com/toolscript/toolscript/host/serve/mcpserver"
	"github.com/toolscript/toolscript/host/serve/metrics"
	"github.com/toolscript/toolscript/host/serve/requeststate"
)

// PoolSize is how many ready instances the server keeps.
const PoolSize = 4

// HeapFloor is how much the server's Go heap may always grow between two
// collections (package heapfloor): each execution makes and drops a wasm
// instance, and with the few megabytes a server keeps live the collector
// would otherwise run dozens of times a second.
const HeapFloor = 32 << 20

// ServeConfig is what `toolscript serve` serves, resolved.
type ServeConfig struct {
	// File is the configuration file read (its APIs, servers and hosted
	// settings).
	File *config.File
	// Server holds the server's limits; its HTTP address, when set, is
	// the hosted mode.
	Server config.ServerSettings
	// Settings are the resolved limits and io of each script.
	Settings config.Settings
	// Hosted are the hosted mode's command-line settings, resolved with
	// File's [server] section once the sdk is open.
	Hosted config.HostedFlags
	SDK    SDKOptions
	// Version is the serverInfo.version clients see.
	Version string
	// Stdin and Stdout carry the protocol in the stdio mode.
	Stdin  io.Reader
	Stdout io.Writer
	// Stderr gets the diagnostics: lines in the stdio mode, JSON lines
	// (and the access log) in the hosted mode.
	Stderr io.Writer
	// Listener, when set, is served in the hosted mode instead of the
	// address in Server (tests).
	Listener net.Listener
}

// Serve serves the execute_script tool until the client goes (stdio) or
// ctx ends (hosted: then running scripts get the shutdown grace). The
// module compiles while the sdk opens; an upstream MCP server whose tools
// change rebuilds the sdk.
func Serve(ctx context.Context, cfg ServeConfig) error {
	floor := heapfloor.Start(HeapFloor)
	defer floor.Stop()
	cfg.Server = serverLimits(cfg.Server)
	a := &assembly{cfg: cfg, changed: make(chan string, 1)}
	dir, err := cfg.File.RecordDir(os.Getenv)
	if err != nil {
		return usage(err)
	}
	if a.rules, err = compileRules(cfg.File); err != nil {
		return usage(err)
	}
	if a.states, a.approvalTimeout, err = pausing(cfg.File); err != nil {
		return usage(err)
	}
	a.local = localWho(cfg.Version)
	if a.sdk, err = resolveSDK(cfg.File, cfg.SDK); err != nil {
		return err
	}
	traces, err := openTracing(ctx, getenvOf(cfg.SDK), cfg.Version, a.sdk.cfg.Redactor)
	if err != nil {
		return usage(err)
	}
	// Runs after the server stopped (deferred first): its last spans
	// are exported.
	defer traces.shutdown()
	a.tracer, a.sdk.cfg.Tracer = traces.tracer, traces.tracer
	// Every line on standard error (the logs, the access log, the
	// upstream servers' lines) passes the configuration's redactor.
	a.cfg.Stderr = a.sdk.cfg.Redactor.Writer(cfg.Stderr)
	cfg = a.cfg
	if cfg.Server.Mode() == config.Hosted {
		// Everything on standard error is a JSON line, the upstream
		// servers' own lines and the specs' warnings included.
		a.logger = slog.New(slog.NewJSONHandler(cfg.Stderr, nil))
	}
	if dir != "" {
		// An unusable directory is the operator's to fix before any call.
		total, perUser := recordBounds(cfg.File)
		if a.records, err = openRecordDir(dir, total, perUser); err != nil {
			return usage(fmt.Errorf("effects.record_dir: %w", err))
		}
		if used, _ := a.records.quota.Used(""); used >= total {
			a.warn(fmt.Sprintf("effects.record_dir %s holds %d bytes of traces, its bound (record_max_bytes: %s): "+
				"executions are not recorded until traces are removed from it", dir, used, trace.Size(total)))
		}
	}
	if cfg.Server.Mode() != config.Hosted {
		a.learned = learnedTypes(ctx, cfg.File, getenvOf(cfg.SDK), cfg.SDK.Learn, func(msg string) { a.warn(msg) })
	}
	err = a.open(ctx)
	if a.rt != nil {
		defer a.rt.Close(context.Background())
	}
	if a.client != nil {
		defer a.client.Close()
	}
	if err != nil {
		return err
	}
	mcfg := a.mcpConfig()
	// The process's one type checker: compiled and loaded on the first
	// check, closed when the server is done; an API whose definitions do
	// not load is warned of (on the redacted standard error) when a load
	// finds it.
	checker := scriptcheck.New(typecheck.Config{CacheWarning: cacheWarning(a.logger, a.cfg.Stderr),
		OnLoose: scriptcheck.WarnLoose(func(msg string) { a.warn(termtext.Line(msg)) })})
	defer checker.Close(context.Background())
	mcfg.Checker = scriptChecker{checker: checker, rt: mcfg.Runtime}
	if cfg.Server.Mode() == config.Hosted {
		return a.serveHTTP(ctx, mcfg)
	}
	srv, err := mcpserver.New(mcfg)
	if err != nil {
		return err
	}
	a.watch(ctx, srv, func(format string, args ...any) {
		fmt.Fprintf(cfg.Stderr, "toolscript serve: %s\n", termtext.Line(fmt.Sprintf(format, args...)))
	})
	fmt.Fprintf(cfg.Stderr, "toolscript serve: ready (io directory: %s; %s at once)\n",
		ioDir(scriptIO(cfg.Settings.IO)), count(cfg.Server.MaxConcurrent, "script"))
	return srv.Serve(ctx, cfg.Stdin, cfg.Stdout)
}

// assembly is one server's parts.
type assembly struct {
	cfg ServeConfig
	rt  *luau.Runtime
	// rules are the [[policy]] rules every execution's effects pass (nil:
	// none); local is who runs the stdio mode's executions.
	rules *policy.Set
	local policy.Who
	// client is the first sdk, nil when there are no APIs; current is the
	// one calls get, which watchSDK replaces.
	client  *sdk.Client
	current atomic.Pointer[sdk.Client]
	// changed names an upstream server whose tools changed.
	changed chan string
	// logger is the hosted mode's (JSON lines on standard error), nil
	// under stdio.
	logger *slog.Logger
	// published is the sdk whose table the runtime has, and which the
	// docs show; its next is closed when another replaces it.
	published atomic.Pointer[publishedSDK]
	// records is [effects] record_dir: where each execution's trace is
	// recorded (nil: none are).
	records *recordDir
	// learned are the result types learned from record_dir's traces
	// (the stdio mode's; a hosted server's users' traces are theirs):
	// the docs show them.
	learned learned.Set
	// states seals and opens the state of executions paused for a
	// person's answer; approvalTimeout bounds the wait for one.
	states          *requeststate.Sealer
	approvalTimeout time.Duration
	// sdk is what the sdk is opened from, resolved; its Config's Redactor
	// is the one every sink of the server is handed.
	sdk sdkSetup
	// budget is [limits] max_host_bytes_total: the host bytes the sdk's
	// responses and the hosted mode's unwritten responses share.
	budget *limit.Bytes
	// tracer is the server's traces (nil: off), which the MCP server,
	// the runtime and the sdk are handed.
	tracer *telemetry.Tracer
}

// warn says msg on standard error: a JSON line in hosted mode.
func (a *assembly) warn(msg string, args ...any) {
	if a.logger != nil {
		a.logger.Warn(msg, args...)
		return
	}
	line := "toolscript serve: " + msg
	for i := 0; i+1 < len(args); i += 2 {
		line += fmt.Sprintf("; %v: %v", args[i], args[i+1])
	}
	fmt.Fprintln(a.cfg.Stderr, line)
}

// open compiles the module while the sdk loads (both take a second or more
// the first time), then sets the sdk's table and starts the pool. The
// sdk's error comes first: it is the caller's.
func (a *assembly) open(ctx context.Context) error {
	type newRuntime struct {
		rt  *luau.Runtime
		err error
	}
	compiled := make(chan newRuntime, 1)
	go func() {
		rt, err := luau.New(ctx, luau.Config{MaxMemoryBytes: luau.MaxMemoryFor(scriptLimits(a.cfg.Settings.Limits).HeapBytes),
			CacheWarning: cacheWarning(a.logger, a.cfg.Stderr), Tracer: a.tracer})
		compiled <- newRuntime{rt, err}
	}()
	opts := a.cfg.SDK
	// initialize is answered at once: the servers' tools come when they
	// are ready, and the scripts that name one wait for it.
	opts.StartUpstreamsInBackground = true
	// The servers' sampling, elicitation and roots requests reach the
	// client whose call they serve.
	opts.Gateway = true
	opts.Logger = a.logger
	opts.OnToolsChanged = func(server string) {
		select {
		case a.changed <- server:
		default: // a rebuild is pending already, and will see this change
		}
	}
	opts.Stderr = a.cfg.Stderr
	client, err := openSDK(ctx, a.sdk, opts)
	r := <-compiled
	a.rt, a.client = r.rt, client
	if err != nil {
		return err
	}
	if r.err != nil {
		return r.err
	}
	if a.budget, err = hostBudget(client, a.cfg.File); err != nil {
		return usage(err)
	}
	a.current.Store(client)
	a.published.Store(&publishedSDK{client: client, next: make(chan struct{})})
	if client != nil {
		manifest := client.Manifest()
		if err := a.rt.SetSDK(&manifest); err != nil {
			return err
		}
		for _, api := range client.Catalog().APIs {
			for _, w := range api.Warnings {
				if a.logger != nil {
					a.logger.Warn(w, "api", api.Name)
				} else {
					// One line: a spec's names are in it.
					fmt.Fprintf(a.cfg.Stderr, "toolscript serve: api %s: %s\n", termtext.Line(api.Name), termtext.Line(w))
				}
			}
		}
	}
	a.rt.StartPool(PoolSize)
	return nil
}

// mcpConfig is the MCP server's configuration: each call gets its own sdk
// session, with its budgets and the upstream credentials of its own
// _meta.auth, which no other call sees.
func (a *assembly) mcpConfig() mcpserver.Config {
	cfg := mcpserver.Config{
		Runtime:         a.rt,
		Limits:          scriptLimits(a.cfg.Settings.Limits),
		IO:              scriptIO(a.cfg.Settings.IO),
		MaxConcurrent:   a.cfg.Server.MaxConcurrent,
		MaxTimeout:      a.cfg.Server.MaxTimeout,
		MaxScriptBytes:  a.cfg.Server.MaxScriptBytes,
		QueueWait:       a.cfg.Server.QueueWait,
		Version:         a.cfg.Version,
		ErrorLog:        a.cfg.Stderr,
		Redactor:        a.sdk.cfg.Redactor,
		States:          a.states,
		ApprovalTimeout: a.approvalTimeout,
		LargeResults:    mcpserver.LargeResults(a.cfg.Server.LargeResults),
		Tracer:          a.tracer,
	}
	if a.cfg.Server.Mode() == config.Hosted {
		cfg.Metrics = metrics.New(hosted.AuthReasons())
	}
	records := a.records
	if a.client == nil && records == nil && a.rules == nil {
		return cfg
	}
	if a.client != nil {
		cfg.SDKDocs = sdkdocs.New(a.client.Catalog()).WithLearned(a.learned)
		cfg.AwaitSDK = a.awaitDocs
	}
	m := cfg.Metrics
	cfg.Prepare = func(ctx context.Context, call *mcpserver.Call) (err error) {
		// The rules decide every effect; who is asked is the server's
		// (the client, in the call or by its retry; else nobody).
		call.Script.Effects = call.Script.Effects.WithRules(a.rules.For(a.who(call.User, call.Claims, call.Client)), nil)
		if records != nil {
			// The operator's choice: every execution is recorded, to a file
			// of its own, whatever its caller asked for (a dry run sends its
			// safe calls, a plan run is a real run: the header names the
			// mode), within the directory's bounds; the trace's Close at the
			// execution's end closes it.
			fx := call.Script.Effects
			rec, recErr := records.record(a.recordUser(call.User), header(a.cfg.Version, call.Script.Source, a.cfg.File, fx.Mode()))
			if recErr != nil {
				return recErr
			}
			if fx.Resuming() {
				// A resumed execution's trace (its prefix replayed, then
				// the rest) goes to the record directory too.
				fx.RecordTo(rec.w)
				fx.OnRecordingFailed(a.recordingFailed(rec.path))
			} else {
				call.Script.Effects = fx.Record(rec.w).OnRecordingFailed(a.recordingFailed(rec.path))
			}
			defer func() {
				if err != nil { // no execution follows: there is nothing to keep
					rec.discard()
				}
			}()
		}
		if a.client == nil {
			return nil
		}
		creds, err := sdk.ParseMetaAuth(call.MetaAuth)
		if err != nil {
			return err
		}
		client, err := a.clientFor(ctx, call.Script)
		if err != nil {
			return err
		}
		session := client.Session(creds).WithEffects(call.Script.Effects)
		call.Script.SDK = session
		if m != nil {
			call.Script.SDK = client.Observed(session, countUpstreamCall(m))
		}
		call.Script.MaxParallel = client.MaxParallel()
		return nil
	}
	return cfg
}

// who is the user and client a call's rules see: the hosted mode's token
// subject, or the OS user under stdio.
func (a *assembly) who(u auth.User, claims auth.Claims, client mcp.Implementation) policy.Who {
	who := policy.Who{Sub: u.Subject, Claims: map[string]any(claims)}
	if who.Claims == nil {
		who.Claims = map[string]any{}
	}
	if u == (auth.User{}) {
		who = a.local
	}
	if client.Name != "" {
		who.ClientName, who.ClientVersion = client.Name, client.Version
	}
	return who
}

// recordUser is whose traces an execution of user's counts as: the
// hosted mode's users each have a directory of their own; the stdio
// mode's one user has record_dir itself ("").
func (a *assembly) recordUser(user auth.User) string {
	if a.cfg.Server.Mode() == config.Hosted {
		return user.DirName()
	}
	return ""
}

// hostBudget is the process's budget of host bytes: the sdk's, or without
// one, a budget as [limits] sets it.
func hostBudget(client *sdk.Client, f *config.File) (*limit.Bytes, error) {
	if client != nil {
		return client.HostBudget(), nil
	}
	var cfg sdk.Config
	if f != nil {
		cfg.MaxHostBytes, cfg.MaxHostBytesTotal = f.Limits.MaxHostBytes, f.Limits.MaxHostBytesTotal
	}
	return sdk.NewHostBudget(cfg)
}

// recordingFailed is what serve does when an execution's trace at path is
// not whole: it says so on standard error (a JSON line in hosted mode),
// once (the result says so too: luau). A trace the bounds left empty is
// removed: it holds nothing.
func (a *assembly) recordingFailed(path string) func(error) {
	return func(err error) {
		if path != "" {
			if info, serr := os.Stat(path); serr == nil && info.Size() == 0 {
				_ = os.Remove(path)
				path = ""
			}
		}
		if path == "" {
			a.warn("an execution was not recorded", "error", err.Error())
			return
		}
		if a.logger != nil {
			a.logger.Warn("the recording of an execution is not whole", "trace", path, "error", err.Error())
			return
		}
		fmt.Fprintf(a.cfg.Stderr, "toolscript serve: the recording %s is not whole: %s\n", path, termtext.Line(err.Error()))
	}
}

// watch rebuilds the sdk of srv when an upstream server's tools change,
// until ctx ends, when there is an sdk.
func (a *assembly) watch(ctx context.Context, srv *mcpserver.Server, logf func(format string, args ...any)) {
	if a.client != nil {
		go watchSDK(ctx, a.changed, &a.current, a.rt, srv, logf, a.publish, a.learned)
	}
}

// serveHTTP is the hosted mode: the MCP server behind authentication,
// limits, logs and metrics (host/serve/hosted), until ctx ends. Its diagnostics
// and access log are JSON lines on standard error.
func (a *assembly) serveHTTP(ctx context.Context, cfg mcpserver.Config) error {
	h, err := config.ResolveHosted(a.cfg.File, a.cfg.Server.HTTP, a.cfg.Hosted)
	if err != nil {
		return usage(err)
	}
	logger := a.logger
	for _, w := range h.Warnings {
		logger.Warn(w)
	}
	m := cfg.Metrics
	var authn *auth.Authenticator
	if h.Auth != nil {
		authn, err = auth.New(ctx, auth.Config{
			Issuer: h.Auth.Authority, Audience: h.Auth.Audience, JWKSURI: h.Auth.JWKSURI,
			Scopes: h.Auth.Scopes, PublicURL: h.Auth.PublicURL,
			FailuresPerMinute: h.AuthFailuresPerMinute, OnThrottled: hosted.AuthThrottledHook(m),
			Logger: logger, OnFailure: hosted.AuthFailureHook(m),
		})
		if err != nil {
			return err
		}
		defer authn.Close()
	}
	var rate *limit.Rate[auth.User]
	if h.RateLimit > 0 {
		if rate, err = limit.NewRate[auth.User](h.RateLimit); err != nil {
			return err
		}
	}

	cfg.PerUserIO = cfg.IO != nil
	cfg.MaxConcurrentPerUser = h.MaxConcurrentPerUser
	// Responses count against the host's budget until they are written.
	cfg.ResponseBudget, cfg.MaxUnwrittenBytesPerUser = a.budget, h.MaxUnwrittenBytesPerUser
	cfg.ErrorLog = slog.NewLogLogger(logger.Handler(), slog.LevelWarn).Writer()
	srv, err := mcpserver.New(cfg)
	if err != nil {
		return err
	}
	a.watch(ctx, srv, func(format string, args ...any) { logger.Info(fmt.Sprintf(format, args...)) })
	transport, err := srv.HTTPHandler(mcpserver.HTTPConfig{Stateless: h.Stateless, CheckLoopbackHost: authn == nil, Logger: logger})
	if err != nil {
		return err
	}
	ready := func(context.Context) error { return nil }
	if a.client != nil {
		ready = a.client.Ready // Refresh keeps the upstream servers: the first client's check is theirs
	}
	handler, err := hosted.New(hosted.Config{
		MCP: transport, Auth: authn, Rate: rate, MaxBodyBytes: srv.MaxRequestBytes(), BodyTimeout: h.BodyTimeout,
		Metrics: m, MetricsElsewhere: h.MetricsAddr != "", AccessLog: logger, AllowedOrigins: h.AllowedOrigins,
		// The module is compiled and the specs are loaded by now; the
		// upstream MCP servers are checked on each probe.
		Ready:    hosted.AllReady(ready),
		Redactor: a.sdk.cfg.Redactor,
	})
	if err != nil {
		return usage(err)
	}
	if h.MetricsAddr != "" {
		if err := serveMetrics(ctx, h.MetricsAddr, m, logger); err != nil {
			return err
		}
	}

	scheme := "http"
	if h.TLSCert != "" {
		scheme = "https"
	}
	issuer := "off"
	if h.Auth != nil {
		issuer = h.Auth.Authority
	}
	return hosted.Serve(ctx, handler, hosted.ServeConfig{
		Addr: h.Addr, Listener: a.cfg.Listener, TLSCertFile: h.TLSCert, TLSKeyFile: h.TLSKey, ShutdownGrace: h.ShutdownGrace,
		Logger: logger, StopScripts: srv.Stop, WriteTimeout: h.WriteTimeout,
		MaxConnections: h.MaxConnections, MaxConnectionsPerClient: h.MaxConnectionsPerClient, OnShed: m.Refused,
		OnListen: func(addr net.Addr) {
			logger.Info("ready", "url", scheme+"://"+addr.String()+hosted.PathMCP, "auth", issuer,
				"stateless", h.Stateless, "io", userIODir(cfg.IO), "max_concurrent", a.cfg.Server.MaxConcurrent,
				"version", cfg.Version)
		},
	})
}

// serveMetrics serves m's /metrics on addr of its own until ctx ends.
func serveMetrics(ctx context.Context, addr string, m *metrics.Metrics, logger *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("metrics address: %w", err)
	}
	logger.Info("metrics", "url", "http://"+ln.Addr().String()+hosted.PathMetrics)
	go func() {
		if err := hosted.ServeMetrics(ctx, ln, m.Handler()); err != nil {
			logger.Error(err.Error())
		}
	}()
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
	rt *luau.Runtime, srv *mcpserver.Server, logf func(format string, args ...any), published func(*sdk.Client), learnedSet learned.Set) {
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
			docs := sdkdocs.New(next.Catalog()).WithLearned(learnedSet)
			srv.SetSDKDocs(docs)
			published(next)
			was := prev.Catalog().API(server)
			switch api := next.Catalog().API(server); {
			case api != nil && api.State != "":
				logf("mcp server %s: %s", server, api.Description)
			case was != nil && was.State != "":
				logf("mcp server %s: ready; the sdk now has %d functions", server, docs.Count())
			default:
				logf("mcp server %s: its tools changed; the sdk now has %d functions", server, docs.Count())
			}
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
