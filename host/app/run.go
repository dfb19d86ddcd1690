package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/toolscript/toolscript/host/config"
	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/contract/redact"
	"github.com/toolscript/toolscript/host/lint"
	"github.com/toolscript/toolscript/host/lint/scriptcheck"
	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/host/runtime/result"
	"github.com/toolscript/toolscript/host/runtime/typecheck"
	"github.com/toolscript/toolscript/host/sdk/sdkdocs"
)

// RunConfig is one script run.
type RunConfig struct {
	// File is the configuration file read (its APIs and servers).
	File *config.File
	// Settings are the resolved limits and io of the script.
	Settings config.Settings
	SDK      SDKOptions
	// Source is the script; Args its arguments (...). Name is how its
	// errors name it, as lint does (its path, or standard input's name):
	// every syntax error, and the position an error of another kind
	// begins with; empty is "script".
	Source []byte
	Name   string
	Args   []string
	// OnLog and OnProgress receive the script's print and progress calls.
	OnLog      func(line string)
	OnProgress func(done float64, total *float64, message string)
	// DryRun runs the script without its unsafe effects: writes go to an
	// overlay, unsafe calls are not sent, and the result lists them
	// (host/contract/effects).
	DryRun bool
	// Plan, when set, runs the script for real held to a dry run's
	// effects: the first unsafe effect the plan does not hold stops it
	// (host/contract/effects). Not with DryRun.
	Plan *effects.Approved
	// Record, when set, is a file the run records its trace to
	// (host/contract/effects/trace); Version goes in its header.
	Record  string
	Version string
	// Replay, when set, is a trace the run replays: every sdk response, io
	// outcome, clock reading and the seed come from it, and nothing is
	// sent or written. No credential is read.
	Replay string
	// OnRecordError, when set, is told that the recording could not be
	// written whole (the run's result is unchanged).
	OnRecordError func(error)
	// Ask, when set, makes the Asker a rule's ask puts its question to
	// (the terminal's prompt), given how it is to ask. Unset, nobody can
	// be asked and an ask is deny (effects.Refuse).
	Ask func(Asking) effects.Asker
	// Approve, when set, answers the questions whose effect it holds
	// (run --approve): each of its entries approves one effect; the
	// others go to Ask.
	Approve *effects.Approved
	// Check checks the script before it runs (run --check), against the
	// sdk's types: with type errors it does not run (error kind type);
	// unchecked, it runs with a warning in the result.
	Check bool
}

// Run opens the sdk, compiles the module with the sdk's functions and
// runs the script once. The error is the host's (a UsageError when the
// sdk cannot be opened); the script's own failure is in the result.
func Run(ctx context.Context, cfg RunConfig) (res *result.Result, err error) {
	script := luau.Script{Source: cfg.Source, Args: cfg.Args, Limits: scriptLimits(cfg.Settings.Limits), IO: scriptIO(cfg.Settings.IO),
		OnLog: cfg.OnLog, OnProgress: cfg.OnProgress}
	modes := 0
	for _, given := range []bool{cfg.DryRun, cfg.Plan != nil, cfg.Record != "", cfg.Replay != ""} {
		if given {
			modes++
		}
	}
	switch {
	case modes > 1:
		return nil, usage(errors.New("give one of a dry run, a plan, a recording and a replay"))
	case cfg.DryRun:
		script.Effects = effects.New(effects.DryRun)
	case cfg.Plan != nil:
		script.Effects = effects.NewPlan(cfg.Plan)
	case cfg.Replay != "":
		// No payload of the replay is larger than a response or than
		// one io read (which the script's heap holds).
		payload := max(maxResponseBytes(cfg.File), int64(script.Limits.HeapBytes))
		fx, closer, h, failed, err := openReplay(cfg.Replay, payload)
		if err != nil || failed != nil {
			return failed, err
		}
		defer closer.Close()
		defer func() { explainDivergence(res, h, cfg.Source) }()
		script.Effects = fx
		cfg.SDK.Flags.WithoutCredentials = true
	case cfg.Record != "":
		rec, err := startRecording(cfg.Record, false, header(cfg.Version, cfg.Source, cfg.File, effects.Real), nil, "")
		if err != nil {
			return nil, usage(err)
		}
		script.Effects = effects.NewRecording(rec.w)
		defer func() {
			if err := rec.finish(); err != nil && cfg.OnRecordError != nil {
				cfg.OnRecordError(err)
			}
		}()
	}
	rules, err := compileRules(cfg.File)
	if err != nil {
		return nil, usage(err)
	}
	script.Effects = script.Effects.WithRules(rules.For(localWho(cfg.Version)), nil)
	setup, err := resolveSDK(cfg.File, cfg.SDK)
	if err != nil {
		return nil, err
	}
	// The execution's span is the root of the run's trace.
	traces, err := openTracing(ctx, getenvOf(cfg.SDK), cfg.Version, setup.cfg.Redactor)
	if err != nil {
		return nil, usage(err)
	}
	defer traces.shutdown()
	setup.cfg.Tracer = traces.tracer
	if script.Effects.HasRules() {
		script.Effects.WithAsker(runAsker(cfg, Asking{Redactor: setup.cfg.Redactor, Timeout: approvalTimeout(cfg.File)}))
	}
	client, err := openSDK(ctx, setup, cfg.SDK)
	if err != nil {
		return nil, err
	}
	rtConfig := luau.Config{MaxMemoryBytes: luau.MaxMemoryFor(script.Limits.HeapBytes), CacheWarning: cacheWarning(cfg.SDK.Logger, cfg.SDK.Stderr),
		Tracer: traces.tracer}
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
	var check *scriptcheck.Outcome
	if cfg.Check {
		learnedSet := learnedTypes(ctx, cfg.File, getenvOf(cfg.SDK), cfg.SDK.Learn, warnTo(cfg.SDK.Stderr))
		warn := redactedWarn(setup.cfg.Redactor, warnTo(cfg.SDK.Stderr))
		check, err = checkScript(ctx, rt, docsOf(client, learnedSet), typecheck.Config{CacheWarning: rtConfig.CacheWarning, OnLoose: scriptcheck.WarnLoose(warn)},
			scriptcheck.Script{Name: cfg.Name, Source: cfg.Source, IO: script.IO != nil})
		if err != nil {
			return nil, err
		}
		if refusal := check.Refusal(); refusal != nil {
			return redactResult(setup.cfg.Redactor, &result.Result{Error: refusal}), nil
		}
	}
	res = rt.Execute(ctx, script)
	res.Warnings = append(res.Warnings, check.Warnings()...)
	switch {
	case res.Error == nil:
	case res.Error.Kind == result.Syntax:
		res.Error = syntaxErrors(ctx, rt, cfg.Name, cfg.Source, res.Error)
	default:
		res.Error.Message = namePosition(cfg.Name, res.Error.Message)
	}
	return redactResult(setup.cfg.Redactor, res), nil
}

// checkScript checks s before a run against the definitions of docs with
// a type checker of cfg.
func checkScript(ctx context.Context, rt *luau.Runtime, docs *sdkdocs.Docs, cfg typecheck.Config, s scriptcheck.Script) (*scriptcheck.Outcome, error) {
	checker := scriptcheck.New(cfg)
	defer checker.Close(context.Background())
	return checker.Check(ctx, rt, docs, s)
}

// redactedWarn is warn with r's secrets redacted from each message.
func redactedWarn(r *redact.Redactor, warn func(string)) func(string) {
	return func(msg string) { warn(r.String(msg)) }
}

// Asking is how a run's Asker asks, from the configuration.
type Asking struct {
	// Redactor redacts the configuration's secrets from what is shown.
	Redactor *redact.Redactor
	// Timeout bounds the wait for one answer ([effects]
	// approval_timeout); zero is the Asker's default.
	Timeout time.Duration
}

// runAsker is who a run's rules ask: the plan --approve names for the
// effects it holds, else the person at the terminal, else nobody (deny).
func runAsker(cfg RunConfig, asking Asking) effects.Asker {
	person := effects.Refuse
	if cfg.Ask != nil {
		person = cfg.Ask(asking)
	}
	if cfg.Approve != nil {
		return cfg.Approve.Asker(person)
	}
	return person
}

// namePosition names the script in an error's position as syntax errors
// do: "script:3: boom" is "hello.luau:3: boom" when name is hello.luau.
// A message that does not begin with the script's position is kept.
func namePosition(name, message string) string {
	rest, ok := strings.CutPrefix(message, "script:")
	if name == "" || !ok {
		return message
	}
	digits := len(rest) - len(strings.TrimLeft(rest, "0123456789"))
	if digits == 0 || !strings.HasPrefix(rest[digits:], ":") {
		return message
	}
	return name + ":" + rest
}

// syntaxErrors reports a script that does not compile as lint does: every
// syntax error, one a line, each as NAME:LINE:COLUMN: message. A script
// larger than lint.SmallFileBytes (whose parse has no bound but its size)
// or one lint cannot parse keeps the first error, named.
func syntaxErrors(ctx context.Context, rt *luau.Runtime, name string, source []byte, first *result.Error) *result.Error {
	if name == "" {
		return first
	}
	named := &result.Error{Kind: result.Syntax, Line: first.Line,
		Message: name + strings.TrimPrefix(first.Message, "script")}
	if len(source) > lint.SmallFileBytes {
		return named
	}
	report, err := lint.Run(ctx, rt, []lint.Source{{Name: name, Text: source}}, lint.Options{Workers: 1})
	if err != nil {
		return named
	}
	var lines []string
	for _, d := range report.Diagnostics {
		if d.Rule == lint.RuleSyntax {
			lines = append(lines, fmt.Sprintf("%s:%d:%d: %s", d.File, d.Line, d.Column, d.Message))
		}
	}
	if len(lines) == 0 {
		return named
	}
	return &result.Error{Kind: result.Syntax, Line: first.Line, Message: strings.Join(lines, "\n")}
}

// redactResult redacts the configuration's secrets from what a run shows,
// as serve redacts its messages: the result's JSON value by value, every
// field of it (value, logs, error, the files touched, effects,
// warnings). A script never holds a secret, but an API may echo one
// back, and the script may put it anywhere, a file's name included. A
// dry run's effects with a secret redacted no longer match what a plan
// run does, which then stops (error kind plan) rather than show it.
func redactResult(r *redact.Redactor, res *result.Result) *result.Result {
	if !r.Active() || res == nil {
		return res
	}
	text := res.JSON()
	redacted := r.JSON(text)
	if bytes.Equal(redacted, text) {
		return res
	}
	var out result.Result
	if err := json.Unmarshal(redacted, &out); err != nil {
		return &result.Result{Error: &result.Error{Kind: result.Internal,
			Message: fmt.Sprintf("the result held a secret and reading it back redacted failed: %v", err)}}
	}
	return &out
}
