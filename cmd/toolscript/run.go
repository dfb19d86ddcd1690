package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"

	"github.com/toolscript/toolscript/host/app"
	"github.com/toolscript/toolscript/host/app/terminal"
	"github.com/toolscript/toolscript/host/config"
	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/lint"
	"github.com/toolscript/toolscript/host/platform/progressbar"
	"github.com/toolscript/toolscript/host/platform/termtext"
	"github.com/toolscript/toolscript/host/runtime/result"
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
func loadConfig(c *cli.Context) (*config.File, error) {
	file, err := app.LoadConfig(c.String("config"))
	if err != nil {
		return nil, usagef("%v", err)
	}
	return file, nil
}

// settings resolves the config file, flags and environment for mode, and
// prints deprecation warnings.
func settings(c *cli.Context, file *config.File, mode config.Mode) (config.Settings, error) {
	s, err := config.Resolve(file, config.Flags{
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
	if mode == config.Hosted { // standard error is JSON lines only
		logger := slog.New(slog.NewJSONHandler(termtext.Raw(c.App.ErrWriter), nil))
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
			&cli.StringFlag{Name: "record", Usage: "record the run's trace to `FILE` (JSON Lines: every sdk call with its response, io, clock readings, the random seed)"},
			&cli.StringFlag{Name: "replay", Usage: "replay the trace in `FILE`: responses, reads, clock and seed come from it, nothing is sent or written, no credential is needed"},
		),
		OnUsageError: usageError,
		Action:       runScript,
	}
}

func runScript(c *cli.Context) error {
	if c.NArg() == 0 {
		return usagef("run needs a script path, or - for standard input")
	}
	path := c.Args().First()
	name := path // how syntax errors name the script, as lint does
	var source []byte
	var err error
	if path == lint.StdinPath {
		name = lint.DefaultStdinName
		source, err = io.ReadAll(c.App.Reader)
	} else {
		source, err = os.ReadFile(path)
	}
	if err != nil {
		return usagef("reading the script: %v", err)
	}
	if c.String("plan") != "" && c.Bool("dry-run") {
		return usagef("--plan and --dry-run cannot be given together: a dry run makes a plan, --plan applies one")
	}
	if n := countTrue(c.Bool("dry-run"), c.String("plan") != "", c.String("record") != "", c.String("replay") != ""); n > 1 {
		return usagef("give one of --dry-run, --plan, --record and --replay")
	}
	var plan, approve *effects.Approved
	if name := c.String("plan"); name != "" {
		if plan, err = effects.ReadPlanFile(name); err != nil {
			return usagef("reading the plan %s: %v", name, err)
		}
	}
	if name := c.String("approve"); name != "" {
		if approve, err = effects.ReadPlanFile(name); err != nil {
			return usagef("reading the plan --approve names, %s: %v", name, err)
		}
	}
	file, err := loadConfig(c)
	if err != nil {
		return err
	}
	s, err := settings(c, file, config.Run)
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The first signal asks the script to stop; the next one gets the
	// default action and ends the process, whatever the guest is doing.
	go func() {
		<-ctx.Done()
		stop()
	}()
	defer stop()
	asJSON := c.Bool("json")
	out := c.App.Writer
	cfg := app.RunConfig{File: file, Settings: s, SDK: sdkOptions(c), Source: source, Name: name, Args: c.Args().Tail(),
		DryRun: c.Bool("dry-run"), Plan: plan, Record: c.String("record"), Replay: c.String("replay"), Version: toolscriptVersion(),
		OnRecordError: func(err error) { fmt.Fprintf(c.App.ErrWriter, "toolscript: warning: %s\n", termtext.Line(err.Error())) },
		Approve:       approve}
	closeBar := func() {}
	var alone func(func())
	if !asJSON {
		cfg.OnLog = func(line string) { fmt.Fprintln(out, termtext.Text(line)) }
		if bar := progressBar(termtext.Raw(c.App.ErrWriter)); bar != nil {
			// A print clears the bar first: both may share one terminal.
			cfg.OnProgress = bar.Update
			cfg.OnLog = func(line string) { bar.Print(func() { fmt.Fprintln(out, termtext.Text(line)) }) }
			closeBar = bar.Close
			alone = bar.Print
		}
	}
	person := &personAtTerminal{}
	cfg.Ask = func(how app.Asking) effects.Asker {
		person.open = func() *terminal.Prompt {
			return openPrompt(c, terminal.Config{Redactor: how.Redactor, Timeout: how.Timeout, Cancel: ctx.Done(), Alone: alone})
		}
		return person
	}
	res, err := app.Run(ctx, cfg)
	person.close()
	closeBar() // the line is cleared before the result is written
	if err != nil {
		return exitFor(err)
	}

	if asJSON {
		fmt.Fprintf(termtext.Raw(out), "%s\n", res.JSON())
	} else {
		if res.Error == nil && string(res.Value) != "null" {
			fmt.Fprintf(out, "%s\n", termtext.JSON(string(res.Value)))
		}
		if cfg.DryRun {
			printEffects(c.App.ErrWriter, res)
		}
		if cfg.Plan != nil {
			printApplied(c.App.ErrWriter, res)
		}
	}
	if res.Error != nil {
		if !asJSON {
			fmt.Fprintln(c.App.ErrWriter, describe(res.Error))
		}
		return cli.Exit("", exitScriptError)
	}
	return nil
}

// personAtTerminal asks the person at the terminal: the prompt is opened
// when the first question comes (a run nothing asks about never touches
// the terminal); without a terminal every question is declined.
type personAtTerminal struct {
	once   sync.Once
	open   func() *terminal.Prompt
	prompt *terminal.Prompt
}

func (p *personAtTerminal) Ask(q effects.Question) (effects.Answer, error) {
	p.once.Do(func() { p.prompt = p.open() })
	if p.prompt == nil {
		return effects.Refuse.Ask(q) // no terminal: ask is deny
	}
	return p.prompt.Ask(q)
}

// close closes the prompt if it was opened.
func (p *personAtTerminal) close() {
	p.once.Do(func() {}) // no question comes after this
	if p.prompt != nil {
		p.prompt.Close()
	}
}

// openPrompt opens the approval prompt on the person's terminal, nil
// when there is none. The command run in a process (its reader standard
// input) has one when it has a controlling terminal; run in a test, with
// another reader, it has none.
func openPrompt(c *cli.Context, cfg terminal.Config) *terminal.Prompt {
	stdin, ok := c.App.Reader.(*os.File)
	if !ok {
		return nil
	}
	stderr, _ := termtext.Raw(c.App.ErrWriter).(*os.File)
	return terminal.Open(stdin, stderr, cfg)
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

// describe renders an execution error for a person, each line of it
// escaped as one line (a script or an upstream wrote it): runtime errors
// as "error: script:3: boom", other kinds named ("timeout error: ...");
// syntax errors one a line ("syntax error: hello.luau:4:1: ...").
func describe(e *result.Error) string {
	if e.Kind == result.Runtime {
		return "error: " + termtext.Line(e.Message)
	}
	if e.Kind == result.Syntax {
		lines := strings.Split(e.Message, "\n")
		for i, line := range lines {
			lines[i] = "syntax error: " + termtext.Line(line)
		}
		return strings.Join(lines, "\n")
	}
	return fmt.Sprintf("%s error: %s", e.Kind, termtext.Line(e.Message))
}

// progressBar returns a bar drawing the script's progress() calls on w when
// w is a terminal, else nil: standard error redirected to a file or a pipe
// gets nothing.
func progressBar(w io.Writer) *progressbar.Bar {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	fd := int(f.Fd())
	cols := func() int {
		if w, _, err := term.GetSize(fd); err == nil && w > 0 {
			return w
		}
		return 80
	}
	return progressbar.New(f, cols, progressbar.DefaultInterval)
}
