package app

import (
	"context"
	"io"
	"log/slog"
	"os"

	"github.com/toolscript/toolscript/host/config"
	"github.com/toolscript/toolscript/host/openapi"
	"github.com/toolscript/toolscript/host/sdk"
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
	// servers answer (sdk.Config.StartUpstreamsInBackground).
	StartUpstreamsInBackground bool
	// Gateway relays the upstream MCP servers' requests to a client to the
	// client of the call they serve (sdk.Config.Gateway).
	Gateway bool
}

// OpenSDK loads the APIs and upstream MCP servers file and opts name; nil
// when there are none. A spec that cannot be loaded or a server that
// cannot be started is a UsageError naming the API, the source and the
// cause.
func OpenSDK(ctx context.Context, file *config.File, opts SDKOptions) (*sdk.Client, error) {
	cfg, err := resolveSDK(file, opts)
	if err != nil {
		return nil, err
	}
	return openSDK(ctx, cfg, opts)
}

// resolveSDK resolves the sdk's configuration from file, the flags and
// the environment, with the one redactor of its secrets (every value read
// from the environment, every credential), which every sink of the
// process is handed.
func resolveSDK(file *config.File, opts SDKOptions) (sdk.Config, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	s, err := config.ResolveSDK(file, opts.Flags, getenv)
	if err != nil {
		return sdk.Config{}, usage(err)
	}
	cfg := sdkConfig(s)
	cfg.Redactor = cfg.NewRedactor()
	return cfg, nil
}

// openSDK opens the sdk of cfg (resolveSDK's); nil when it has no APIs
// and no MCP servers.
func openSDK(ctx context.Context, cfg sdk.Config, opts SDKOptions) (*sdk.Client, error) {
	if len(cfg.APIs) == 0 && len(cfg.Upstreams) == 0 {
		return nil, nil
	}
	cfg.Stderr = opts.Stderr
	cfg.Logger = opts.Logger
	cfg.OnToolsChanged = opts.OnToolsChanged
	cfg.StartUpstreamsInBackground = opts.StartUpstreamsInBackground
	cfg.Gateway = opts.Gateway
	if dir, err := openapi.DefaultCacheDir(); err == nil {
		cfg.Cache = openapi.NewCache(dir, opts.CacheVersion)
	}
	client, err := sdk.Open(ctx, cfg)
	if err != nil {
		return nil, usage(cfg.Redactor.Error(err))
	}
	return client, nil
}
