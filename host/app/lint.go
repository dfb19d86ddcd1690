package app

import (
	"context"
	"fmt"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/contract/policy"

	"github.com/toolscript/toolscript/host/config"
	"github.com/toolscript/toolscript/host/lint"
	"github.com/toolscript/toolscript/host/lint/scriptcheck"
	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/host/runtime/typecheck"
	"github.com/toolscript/toolscript/host/sdk"
	"github.com/toolscript/toolscript/host/sdk/learned"
	"github.com/toolscript/toolscript/host/sdk/sdkdocs"
)

// LintConfig is one lint of scripts.
type LintConfig struct {
	// File is the configuration file read (its APIs and servers).
	File    *config.File
	SDK     SDKOptions
	Sources []lint.Source
	Options lint.Options
	// Types type-checks the sources against the sdk's definitions (the
	// configured APIs and servers, toolscript's globals).
	Types bool
}

// Lint checks the sources against the sandbox and the sdk's functions
// (when there are APIs: sdk calls are checked against the functions the
// runtime would build the sdk from). Every error is a UsageError: the
// lint could not be run as asked.
func Lint(ctx context.Context, cfg LintConfig) (*lint.Report, error) {
	setup, err := resolveSDK(cfg.File, cfg.SDK)
	if err != nil {
		return nil, err
	}
	client, err := openSDK(ctx, setup, cfg.SDK)
	if err != nil {
		return nil, err
	}
	rtConfig := luau.Config{CacheWarning: cacheWarning(cfg.SDK.Logger, cfg.SDK.Stderr)}
	if client != nil {
		defer client.Close()
		manifest := client.Manifest()
		rtConfig.SDK = &manifest
		if cfg.Options.Effects {
			rules, err := compileRules(cfg.File)
			if err != nil {
				return nil, usage(err)
			}
			cfg.Options.Functions = sdkFunctions(client.Catalog(), rules)
		}
	}
	if cfg.Types {
		learnedSet := learnedTypes(ctx, cfg.File, getenvOf(cfg.SDK), cfg.SDK.Learn, warnTo(cfg.SDK.Stderr))
		checker, err := typeChecker(ctx, client, learnedSet, typecheck.Config{CacheWarning: rtConfig.CacheWarning,
			OnLoose: scriptcheck.WarnLoose(redactedWarn(setup.cfg.Redactor, warnTo(cfg.SDK.Stderr)))})
		if err != nil {
			return nil, usage(err)
		}
		defer checker.Close(context.Background())
		cfg.Options.Types = checker
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

// typeChecker returns a type checker of cfg with the sdk's definitions
// loaded, in parts (scriptcheck.Definitions): those of client's catalog
// (toolscript's globals alone without one), with the result types
// learned from recorded calls.
func typeChecker(ctx context.Context, client *sdk.Client, learnedSet learned.Set, cfg typecheck.Config) (*typecheck.Checker, error) {
	checker, err := typecheck.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	docs := docsOf(client, learnedSet)
	if err := checker.LoadParts(scriptcheck.Definitions(docs, []byte(docs.Definitions()))); err != nil {
		checker.Close(context.Background())
		return nil, err
	}
	return checker, nil
}

// docsOf are the docs of client's catalog, the built-ins' alone without
// a client: what scripts are type-checked against.
func docsOf(client *sdk.Client, learnedSet learned.Set) *sdkdocs.Docs {
	if client == nil {
		return sdkdocs.New(&catalog.Catalog{}).WithLearned(learnedSet)
	}
	return sdkdocs.New(client.Catalog()).WithLearned(learnedSet)
}

// sdkFunctions says, for lint --effects, whether each function of cat is
// unsafe as a dry run classifies it (effects.OfFunction: the client's
// catalog has the configuration's safe and unsafe), what a call does and
// what rules (nil: none) decide of its calls.
func sdkFunctions(cat *catalog.Catalog, rules *policy.Set) func(string) (lint.Function, bool) {
	byName := map[string]lint.Function{}
	for _, api := range cat.APIs {
		for _, f := range api.Functions {
			does := f.Method + " " + f.Path
			if f.Kind == catalog.MCP {
				does = "MCP tool " + f.Tool
			}
			name := "sdk." + api.Name + "." + f.Name
			safety := effects.OfFunction(f)
			byName[name] = lint.Function{Unsafe: safety == effects.Unsafe, Does: does, Decided: decided(rules, api, f, name, safety)}
		}
	}
	return func(name string) (lint.Function, bool) {
		f, ok := byName[name]
		return f, ok
	}
}

// decided is what rules decide of the calls of f, as far as f tells: the
// rule and its action, a rule that depends on the arguments, or the
// default; "" without rules, and for a safe function no rule names.
func decided(rules *policy.Set, api *catalog.API, f *catalog.Function, name string, safety effects.Safety) string {
	if rules == nil || (safety == effects.Safe && !rules.DecidesSafe()) {
		return ""
	}
	operation := f.OperationID
	if f.Kind == catalog.MCP {
		operation = f.Tool
	}
	v, known := rules.Static(&effects.Facts{Kind: string(effects.OpCall), Safe: safety == effects.Safe,
		API: api.Name, Function: name, Operation: operation, Method: f.Method})
	switch {
	case !known && v.Rule != "":
		return fmt.Sprintf("rule %q depends on arguments", v.Rule)
	case !known:
		return "the rules cannot tell: " + v.Reason
	case v.Rule == "":
		return "[effects] default: " + v.Action.String()
	}
	return fmt.Sprintf("rule %q: %s", v.Rule, v.Action)
}
