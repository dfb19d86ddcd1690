package app

import (
	"context"
	"errors"

	"github.com/toolscript/toolscript/host/config"
	"github.com/toolscript/toolscript/host/effects"
	"github.com/toolscript/toolscript/host/luau"
	"github.com/toolscript/toolscript/host/result"
)

// RunConfig is one script run.
type RunConfig struct {
	// File is the configuration file read (its APIs and servers).
	File *config.File
	// Settings are the resolved limits and io of the script.
	Settings config.Settings
	SDK      SDKOptions
	// Source is the script; Args its arguments (...).
	Source []byte
	Args   []string
	// OnLog and OnProgress receive the script's print and progress calls.
	OnLog      func(line string)
	OnProgress func(done float64, total *float64, message string)
	// DryRun runs the script without its unsafe effects: writes go to an
	// overlay, unsafe calls are not sent, and the result lists them
	// (host/effects).
	DryRun bool
	// Plan, when set, runs the script for real held to a dry run's
	// effects: the first unsafe effect the plan does not hold stops it
	// (host/effects). Not with DryRun.
	Plan *effects.Approved
}

// Run opens the sdk, compiles the module with the sdk's functions and
// runs the script once. The error is the host's (a UsageError when the
// sdk cannot be opened); the script's own failure is in the result.
func Run(ctx context.Context, cfg RunConfig) (*result.Result, error) {
	client, err := OpenSDK(ctx, cfg.File, cfg.SDK)
	if err != nil {
		return nil, err
	}
	s := cfg.Settings
	rtConfig := luau.Config{MaxMemoryBytes: luau.MaxMemoryFor(s.Limits.HeapBytes)}
	script := luau.Script{Source: cfg.Source, Args: cfg.Args, Limits: s.Limits, IO: s.IO,
		OnLog: cfg.OnLog, OnProgress: cfg.OnProgress}
	switch {
	case cfg.DryRun && cfg.Plan != nil:
		return nil, usage(errors.New("a dry run and a plan cannot be given together"))
	case cfg.DryRun:
		script.Effects = effects.New(effects.DryRun)
	case cfg.Plan != nil:
		script.Effects = effects.NewPlan(cfg.Plan)
	}
	if client != nil {
		defer client.Close()
		manifest := client.Manifest()
		rtConfig.SDK = &manifest
		script.SDK = client.Session(nil).WithEffects(script.Effects)
		script.MaxParallel = client.MaxParallel()
	}
	rt, err := luau.New(ctx, rtConfig)
	if err != nil {
		return nil, err
	}
	defer rt.Close(context.Background())
	return rt.Execute(ctx, script), nil
}
