package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/toolscript/toolscript/host/app"
	"github.com/toolscript/toolscript/host/platform/termtext"
)

// sharedFlags are the flags run and serve take alike.
func sharedFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: "config", Usage: "config `FILE` (default: ./toolscript.toml if it exists)"},
		&cli.DurationFlag{Name: "timeout", Usage: "wall-clock limit per script, e.g. 500ms, 30s", DefaultText: app.DefaultTimeout.String()},
		&cli.Int64Flag{Name: "memory-limit", Usage: "Luau heap limit in `MB`", DefaultText: fmt.Sprint(app.DefaultMemoryLimitMB)},
		&cli.StringFlag{Name: "io-dir", Usage: "directory the io library works in (enables io)"},
		&cli.BoolFlag{Name: "no-io", Usage: "disable the io library"},
		&cli.Int64Flag{Name: "max-bytes", Usage: "cumulative write budget of one script, in bytes", DefaultText: fmt.Sprint(app.DefaultIOMaxBytes>>20) + " MiB"},
		&cli.StringFlag{Name: "output-dir", Usage: "deprecated: use --io-dir", Hidden: true},
	}, sdkFlags()...)
}

// loadConfig reads the configuration file --config names (or the
// default one): once per command.
func loadConfig(c *cli.Context) (*app.ConfigFile, error) {
	file, err := app.LoadConfig(c.String("config"))
	if err != nil {
		return nil, usagef("%v", err)
	}
	return file, nil
}

// settings resolves the config file, flags and environment for mode, and
// prints deprecation warnings.
func settings(c *cli.Context, file *app.ConfigFile, mode app.Mode) (app.Settings, error) {
	s, err := app.Resolve(file, app.Flags{
		Timeout:       c.Duration("timeout"),
		MemoryLimitMB: c.Int64("memory-limit"),
		IODir:         c.String("io-dir"),
		NoIO:          c.Bool("no-io"),
		MaxBytes:      c.Int64("max-bytes"),
		OutputDir:     c.String("output-dir"),
	}, os.Getenv, mode)
	if err != nil {
		return s, usagef("%v", err)
	}
	// A warning is one line: a name in it cannot start a line of its own
	// (such as a CI system's workflow command).
	warn := func(w string) { fmt.Fprintf(c.App.ErrWriter, "toolscript: warning: %s\n", termtext.Line(w)) }
	if mode == app.ModeHosted { // standard error is JSON lines only
		logger := slog.New(slog.NewJSONHandler(termtext.NewJSONWriter(termtext.Raw(c.App.ErrWriter)), nil))
		warn = func(w string) { logger.Warn(w) }
	}
	for _, w := range s.Warnings {
		warn(w)
	}
	// An unusable io directory is not fatal: scripts that use no files
	// still run, and those that do get the same message as their error.
	if s.IO != nil && c.String("replay") == "" { // a replay does not use the directory
		if err := app.CheckIODir(s.IO.Dir); err != nil {
			warn(err.Error())
		}
	}
	return s, nil
}

func runCommand() *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "run one script; its arguments are passed as ...",
		ArgsUsage: "SCRIPT|- [ARGS...]",
		Flags: append(sharedFlags(),
			&cli.BoolFlag{Name: "json", Usage: "print exactly one JSON execution result on standard output"},
			&cli.BoolFlag{Name: "dry-run", Usage: "run without changing anything: writes go to a discarded overlay, unsafe sdk calls are not sent; the effects are listed (on standard error, or in the JSON result)"},
			&cli.StringFlag{Name: "plan", Usage: "run for real, held to a dry run's effects: `FILE` holds a dry run's JSON result or its \"effects\"; the first unsafe effect not in it stops the script before it happens (error kind plan)"},
			&cli.StringFlag{Name: "approve", Usage: "answer the questions of rules whose action is ask from a plan: `FILE` holds a dry run's JSON result or its \"effects\"; each entry approves one effect; an effect it does not hold is asked at the terminal, or denied without one"},
			&cli.BoolFlag{Name: "check", Usage: "type-check the script first against the sdk's types (as lint --types does): with type errors it does not run (error kind type); a script the checker cannot finish runs, with a warning"},
			learnFlag(),
			&cli.StringFlag{Name: "record", Usage: "record the run's trace to `FILE` (JSON Lines: every sdk call with its response, io, clock readings, the random seed)"},
			&cli.StringFlag{Name: "replay", Usage: "replay the trace in `FILE`: responses, reads, clock and seed come from it, nothing is sent or written, no credential is needed"},
		),
		OnUsageError: usageError,
		Action:       runScript,
	}
}

// runPlans checks that run's flags go together, and reads the plans of
// --plan and --approve (nil when not given).
func runPlans(c *cli.Context) (plan, approve *app.Plan, err error) {
	if len(c.StringSlice("learn")) > 0 && !c.Bool("check") {
		return nil, nil, usagef("--learn goes with --check: the types it learns are the checker's")
	}
	if c.String("plan") != "" && c.Bool("dry-run") {
		return nil, nil, usagef("--plan and --dry-run cannot be given together: a dry run makes a plan, --plan applies one")
	}
	if n := countTrue(c.Bool("dry-run"), c.String("plan") != "", c.String("record") != "", c.String("replay") != ""); n > 1 {
		return nil, nil, usagef("give one of --dry-run, --plan, --record and --replay")
	}
	if name := c.String("plan"); name != "" {
		if plan, err = app.ReadPlanFile(name); err != nil {
			return nil, nil, usagef("reading the plan %s: %v", name, err)
		}
	}
	if name := c.String("approve"); name != "" {
		if approve, err = app.ReadPlanFile(name); err != nil {
			return nil, nil, usagef("reading the plan --approve names, %s: %v", name, err)
		}
	}
	return plan, approve, nil
}

func runScript(c *cli.Context) error {
	if c.NArg() == 0 {
		return usagef("run needs a script path, or - for standard input")
	}
	path := c.Args().First()
	name := path // how syntax errors name the script, as lint does
	var source []byte
	var err error
	if path == app.LintStdinPath {
		name = app.LintStdinName
		source, err = io.ReadAll(c.App.Reader)
	} else {
		source, err = os.ReadFile(path)
	}
	if err != nil {
		return usagef("reading the script: %v", err)
	}
	plan, approve, err := runPlans(c)
	if err != nil {
		return err
	}
	file, err := loadConfig(c)
	if err != nil {
		return err
	}
	s, err := settings(c, file, app.ModeRun)
	if err != nil {
		return err
	}

	// The first signal asks the script to stop; the next one ends the
	// process, whatever the guest is doing.
	ctx, stop := interruptible(true)
	defer stop()
	asJSON := c.Bool("json")
	out := c.App.Writer
	cfg := app.RunConfig{File: file, Settings: s, SDK: sdkOptions(c), Source: source, Name: name, Args: c.Args().Tail(),
		DryRun: c.Bool("dry-run"), Plan: plan, Record: c.String("record"), Replay: c.String("replay"), Version: toolscriptVersion(),
		OnRecordError: func(err error) { fmt.Fprintf(c.App.ErrWriter, "toolscript: warning: %s\n", termtext.Line(err.Error())) },
		Approve:       approve, Check: c.Bool("check")}
	closeBar := func() {}
	var alone func(func())
	if !asJSON {
		cfg.OnLog = func(line string) { fmt.Fprintln(out, termtext.Text(line)) }
		if bar := app.ProgressBar(termtext.Raw(c.App.ErrWriter)); bar != nil {
			// A print clears the bar first: both may share one terminal.
			cfg.OnProgress = bar.Update
			cfg.OnLog = func(line string) { bar.Print(func() { fmt.Fprintln(out, termtext.Text(line)) }) }
			closeBar = bar.Close
			alone = bar.Print
		}
	}
	var closeAsk func()
	cfg.Ask, closeAsk = app.TerminalAsk(c.App.Reader, termtext.Raw(c.App.ErrWriter), ctx.Done(), alone)
	res, err := app.Run(ctx, cfg)
	closeAsk()
	closeBar() // the line is cleared before the result is written
	if err != nil {
		return exitFor(err)
	}

	if asJSON {
		_ = writeExactJSON(out, append(res.JSON(), '\n'))
	} else {
		if res.Error == nil && string(res.Value) != "null" {
			fmt.Fprintf(out, "%s\n", termtext.JSON(string(res.Value)))
		}
		if cfg.DryRun {
			app.PrintEffects(c.App.ErrWriter, res)
		}
		if cfg.Plan != nil {
			app.PrintApplied(c.App.ErrWriter, res)
		}
		for _, w := range res.Warnings {
			fmt.Fprintf(c.App.ErrWriter, "toolscript: warning: %s\n", termtext.Line(w))
		}
	}
	if res.Error != nil {
		if !asJSON {
			fmt.Fprintln(c.App.ErrWriter, app.DescribeError(res.Error))
		}
		return cli.Exit("", exitScriptError)
	}
	return nil
}

func countTrue(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}
