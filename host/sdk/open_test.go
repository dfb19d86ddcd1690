package sdk

import (
	"context"
	"io"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/sdk/openapi"
	"github.com/toolscript/toolscript/host/sdk/upstream"
)

// testSources are what a test's Client is opened from besides its Config:
// the upstream MCP servers to start, and where specs are cached.
type testSources struct {
	upstreams      []upstream.Config
	cache          *openapi.Cache
	stderr         io.Writer
	onToolsChanged func(server string)
}

// open loads the specs of cfg's APIs and starts src's servers, then makes
// the Client over their catalog (which Close stops): what host/app
// assembles for the commands, in the order a test needs.
func open(ctx context.Context, cfg Config, src testSources) (*Client, error) {
	cat := &catalog.Catalog{}
	for _, a := range cfg.APIs {
		api, err := openapi.Load(ctx, openapi.Source{Name: a.Name, Spec: a.Spec, Dir: a.Dir},
			openapi.Options{Cache: src.cache, HTTPClient: cfg.HTTPClient})
		if err != nil {
			return nil, err
		}
		cat.APIs = append(cat.APIs, api)
	}
	if cfg.Redactor == nil {
		for _, u := range src.upstreams {
			cfg.Secrets = append(cfg.Secrets, u.Secrets...)
		}
		cfg.Redactor = cfg.NewRedactor()
	}
	var set *upstream.Set
	if len(src.upstreams) > 0 {
		var err error
		set, err = upstream.Start(ctx, src.upstreams, upstream.Options{
			Stderr: src.stderr, OnToolsChanged: src.onToolsChanged,
			MaxResponseBytes: DefaultMaxResponseBytes, Redactor: cfg.Redactor,
		})
		if err != nil {
			return nil, err
		}
		cat.APIs = append(cat.APIs, set.APIs()...)
		cfg.Upstreams = set
	}
	c, err := New(cat, cfg)
	if err != nil && set != nil {
		set.Close()
	}
	return c, err
}
