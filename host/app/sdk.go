package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolscript/toolscript/host/config"
	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/platform/cachedir"
	"github.com/toolscript/toolscript/host/sdk"
	"github.com/toolscript/toolscript/host/sdk/openapi"
	"github.com/toolscript/toolscript/host/sdk/upstream"
)

// SDKOptions say which sdk to open, besides what the configuration file
// names.
type SDKOptions struct {
	// Flags are the sdk's command-line settings (--api, --auth, --mcp,
	// --max-calls).
	Flags config.SDKFlags
	// Getenv reads credentials and ${VAR}s; os.Getenv when nil.
	Getenv func(string) string
	// Stderr receives the upstream MCP servers' standard error.
	Stderr io.Writer
	// Logger, when set, receives it instead, as records naming each
	// server (the hosted mode's JSON lines).
	Logger *slog.Logger
	// CacheVersion keys the on-disk cache of remote specs; a program built
	// with another version does not reuse its entries.
	CacheVersion string
	// OnToolsChanged, when not nil, is told when an upstream MCP server's
	// tools changed.
	OnToolsChanged func(server string)
	// StartUpstreamsInBackground returns the sdk before the upstream MCP
	// servers answer (upstream.Launch): a server's API has no functions
	// and a State until its tools are listed, and OnToolsChanged is called
	// then (sdk.Config.StartUpstreamsInBackground).
	StartUpstreamsInBackground bool
	// Gateway relays the upstream MCP servers' requests to a client to the
	// client of the call they serve (upstream.Options.Gateway).
	Gateway bool
	// Learn are traces (files or directories) to learn result types from
	// (host/sdk/learned), besides [effects] record_dir: the docs and the
	// type checker's definitions.
	Learn []string
}

// SpecTimeout bounds fetching a spec (or a document it refers to) by URL.
const SpecTimeout = time.Minute

// OpenSDK loads the APIs and upstream MCP servers file and opts name; nil
// when there are none. A spec that cannot be loaded or a server that
// cannot be started is a UsageError naming the API, the source and the
// cause.
func OpenSDK(ctx context.Context, file *config.File, opts SDKOptions) (*sdk.Client, error) {
	setup, err := resolveSDK(file, opts)
	if err != nil {
		return nil, err
	}
	return openSDK(ctx, setup, opts)
}

// sdkSetup is what an sdk is opened from: its Config, and the upstream
// MCP servers to start with the variables they do not inherit.
type sdkSetup struct {
	cfg         sdk.Config
	servers     []upstream.Config
	withheldEnv []string
}

// resolveSDK resolves the sdk's settings from file, the flags and the
// environment, with the one redactor of their secrets (every value read
// from the environment, every credential), which every sink of the
// process is handed.
func resolveSDK(file *config.File, opts SDKOptions) (sdkSetup, error) {
	s, err := config.ResolveSDK(file, opts.Flags, getenvOf(opts))
	if err != nil {
		return sdkSetup{}, usage(err)
	}
	setup := sdkSetup{cfg: sdkConfig(s), withheldEnv: s.WithheldEnv}
	for _, u := range s.Upstreams {
		setup.servers = append(setup.servers, upstream.Config(u))
	}
	exporterSecrets(getenvOf(opts), &setup)
	setup.cfg.Redactor = setup.cfg.NewRedactor()
	return setup, nil
}

// getenvOf is how opts reads the environment: its Getenv, else
// os.Getenv.
func getenvOf(opts SDKOptions) func(string) string {
	if opts.Getenv != nil {
		return opts.Getenv
	}
	return os.Getenv
}

// openSDK opens the sdk of setup (resolveSDK's); nil when it has no APIs
// and no MCP servers.
func openSDK(ctx context.Context, setup sdkSetup, opts SDKOptions) (*sdk.Client, error) {
	cfg := setup.cfg
	if len(cfg.APIs) == 0 && len(setup.servers) == 0 {
		return nil, nil
	}
	cache := openapi.DefaultCache(opts.CacheVersion, cacheWarning(opts.Logger, opts.Stderr))
	client, err := newSDK(ctx, cfg, setup.servers, sdkSources{cache: cache, opts: opts, withheldEnv: setup.withheldEnv})
	if err != nil {
		return nil, usage(cfg.Redactor.Error(err))
	}
	return client, nil
}

// cacheWarning is where a cache that cannot be used says so, once: a
// record of logger when there is one (the hosted mode), else a line on
// stderr (nil: nowhere).
func cacheWarning(logger *slog.Logger, stderr io.Writer) *cachedir.Warning {
	return cachedir.NewWarning(func(msg string) {
		switch {
		case logger != nil:
			logger.Warn(msg)
		case stderr != nil:
			fmt.Fprintf(stderr, "toolscript: warning: %s\n", msg)
		}
	})
}

// NewSDK loads the specs of cfg's APIs and starts the upstream MCP
// servers (all in parallel), and returns the sdk over their catalog: the
// assembly OpenSDK makes from a configuration file, for a caller that has
// an sdk.Config (tests, benchmarks). Specs are not cached on disk.
func NewSDK(ctx context.Context, cfg sdk.Config, servers []upstream.Config, opts SDKOptions) (*sdk.Client, error) {
	if cfg.Redactor == nil {
		for _, u := range servers {
			cfg.Secrets = append(cfg.Secrets, u.Secrets...)
		}
		cfg.Redactor = cfg.NewRedactor()
	}
	return newSDK(ctx, cfg, servers, sdkSources{opts: opts})
}

// sdkSources are where newSDK's catalog comes from besides the Config.
type sdkSources struct {
	cache       *openapi.Cache
	opts        SDKOptions
	withheldEnv []string
}

// newSDK loads every API of cfg and starts the servers (all in parallel)
// and returns the Client. A spec that cannot be read or parsed, a server
// that cannot be started, or a name clash, is an error naming the API or
// server and the cause.
func newSDK(ctx context.Context, cfg sdk.Config, servers []upstream.Config, src sdkSources) (*sdk.Client, error) {
	cfg.StartUpstreamsInBackground = src.opts.StartUpstreamsInBackground
	cat := &catalog.Catalog{APIs: make([]*catalog.API, len(cfg.APIs))}
	errs := make([]error, len(cfg.APIs))
	var parsed atomic.Bool
	loader := cfg.HTTPClient
	if loader == nil {
		loader = &http.Client{Timeout: SpecTimeout}
	}
	var wg sync.WaitGroup
	var set *upstream.Set
	var setErr error
	if len(servers) > 0 {
		wg.Go(func() { set, setErr = startUpstreams(ctx, cfg, servers, src) })
	}
	for i, a := range cfg.APIs {
		wg.Go(func() {
			api, p, err := openapi.LoadParsed(ctx, openapi.Source{Name: a.Name, Spec: a.Spec, Dir: a.Dir},
				openapi.Options{Cache: src.cache, HTTPClient: loader})
			cat.APIs[i], errs[i] = api, err
			if p {
				parsed.Store(true)
			}
		})
	}
	wg.Wait()
	if parsed.Load() {
		// A parser's document of a large spec is hundreds of MB of garbage
		// now: give it back, so a long-lived serve keeps only the catalog.
		debug.FreeOSMemory()
	}
	if err := errors.Join(append(errs, setErr)...); err != nil {
		if set != nil {
			set.Close()
		}
		return nil, err
	}
	if set != nil {
		cat.APIs = append(cat.APIs, set.APIs()...)
		cfg.Upstreams = set
	}
	c, err := sdk.New(cat, cfg)
	if err != nil {
		if set != nil {
			set.Close()
		}
		return nil, err
	}
	return c, nil
}

// startUpstreams starts the servers: waiting for each (an error when one
// cannot start), or in the background under serve.
func startUpstreams(ctx context.Context, cfg sdk.Config, servers []upstream.Config, src sdkSources) (*upstream.Set, error) {
	maxBytes := cfg.MaxResponseBytes
	if maxBytes <= 0 {
		maxBytes = sdk.DefaultMaxResponseBytes
	}
	opts := upstream.Options{
		Stderr: src.opts.Stderr, Logger: src.opts.Logger, OnToolsChanged: src.opts.OnToolsChanged, MaxResponseBytes: maxBytes,
		WithheldEnv: src.withheldEnv, Gateway: src.opts.Gateway, Redactor: cfg.Redactor,
	}
	if src.opts.StartUpstreamsInBackground {
		return upstream.Launch(servers, opts)
	}
	return upstream.Start(ctx, servers, opts)
}
