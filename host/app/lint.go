package app

import (
	"context"

	"github.com/toolscript/toolscript/host/config"
	"github.com/toolscript/toolscript/host/lint"
	"github.com/toolscript/toolscript/host/luau"
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
	var rtConfig luau.Config
	if client != nil {
		defer client.Close()
		manifest := client.Manifest()
		rtConfig.SDK = &manifest
	}
	rt, err := luau.New(ctx, rtConfig)
	if err != nil {
		return nil, usage(err)
	}
	defer rt.Close(context.Background())
	report, err := lint.Run(ctx, rt, cfg.Sources, cfg.Options)
	if err != nil {
		return nil, usage(err)
	}
	return report, nil
}
