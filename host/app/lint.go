package app

import (
	"context"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/contract/effects"

	"github.com/toolscript/toolscript/host/config"
	"github.com/toolscript/toolscript/host/lint"
	"github.com/toolscript/toolscript/host/runtime/luau"
)

// LintConfig is one lint of scripts.
type LintConfig struct {
	// File is the configuration file read (its APIs and servers).
	File    *config.File
	SDK     SDKOptions
	Sources []lint.Source
	Options lint.Options
}

// Lint checks the sources against the sandbox and the sdk's functions
// (when there are APIs: sdk calls are checked against the functions the
// runtime would build the sdk from). Every error is a UsageError: the
// lint could not be run as asked.
func Lint(ctx context.Context, cfg LintConfig) (*lint.Report, error) {
	client, err := OpenSDK(ctx, cfg.File, cfg.SDK)
	if err != nil {
		return nil, err
	}
	rtConfig := luau.Config{CacheWarning: cacheWarning(cfg.SDK.Logger, cfg.SDK.Stderr)}
	if client != nil {
		defer client.Close()
		manifest := client.Manifest()
		rtConfig.SDK = &manifest
		if cfg.Options.Effects {
			cfg.Options.Functions = sdkFunctions(client.Catalog())
		}
	}
	rt, err := luau.New(ctx, rtConfig)
	if err != nil {
		return nil, usage(err)
	}
	defer rt.Close(context.Background())
	// A large file's deadline (lint.Options.FileTimeout) stops the module
	// wherever it is, in a Runtime of its own, made only when one comes.
	var stoppable *luau.Runtime
	defer func() {
		if stoppable != nil {
			stoppable.Close(context.Background())
		}
	}()
	cfg.Options.Stoppable = func() (*luau.Runtime, error) {
		c := rtConfig
		c.StopOnContextDone = true
		var err error
		stoppable, err = luau.New(ctx, c)
		return stoppable, err
	}
	report, err := lint.Run(ctx, rt, cfg.Sources, cfg.Options)
	if err != nil {
		return nil, usage(err)
	}
	return report, nil
}

// sdkFunctions says, for lint --effects, whether each function of cat is
// unsafe as a dry run classifies it (effects.OfFunction: the client's
// catalog has the configuration's safe and unsafe) and what a call does.
func sdkFunctions(cat *catalog.Catalog) func(string) (lint.Function, bool) {
	byName := map[string]lint.Function{}
	for _, api := range cat.APIs {
		for _, f := range api.Functions {
			does := f.Method + " " + f.Path
			if f.Kind == catalog.MCP {
				does = "MCP tool " + f.Tool
			}
			byName["sdk."+api.Name+"."+f.Name] = lint.Function{Unsafe: effects.OfFunction(f) == effects.Unsafe, Does: does}
		}
	}
	return func(name string) (lint.Function, bool) {
		f, ok := byName[name]
		return f, ok
	}
}
