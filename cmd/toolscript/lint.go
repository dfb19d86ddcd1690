package main

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/toolscript/toolscript/host/app"
	"github.com/toolscript/toolscript/host/platform/termtext"
)

// lintCommand returns `toolscript lint`: checks scripts before they are
// deployed, for CI.
func lintCommand() *cli.Command {
	return &cli.Command{
		Name:      "lint",
		Usage:     "check scripts for syntax errors and what would fail in the sandbox (for CI)",
		ArgsUsage: "PATHS...",
		Description: "Parses and compiles each script with the real Luau front end, then checks it against the\n" +
			"toolscript sandbox (unknown globals, writes to read-only library tables, io when it is\n" +
			"disabled) and for unused or shadowed locals, unreachable code and assignment count\n" +
			"mismatches. PATHS are files, directories (searched for *.luau and *.lua) and - for\n" +
			"standard input. `toolscript lint --list-rules` lists the rules. With --effects, lint also\n" +
			"lists per script the unsafe sdk functions it names, its io writes and what it reaches\n" +
			"without naming it, so a reviewer sees which scripts can change the world. With --types, lint\n" +
			"also type-checks each script against the sdk's definitions (what `toolscript sdk types`\n" +
			"writes) with Luau's own type checker: rule type.\n\n" +
			"Exit status: 0 clean, 1 errors found (or warnings, with --strict), 2 usage error.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "config", Usage: "config `FILE` (default: ./toolscript.toml if it exists)"},
			&cli.StringFlag{Name: "format", Value: string(app.LintText),
				Usage: "output `FORMAT`: " + strings.Join(app.LintFormats(), ", ")},
			&cli.BoolFlag{Name: "strict", Usage: "warnings fail the run too"},
			&cli.StringSliceFlag{Name: "disable", Usage: "disable a `RULE` (repeat the flag or separate names with commas)"},
			&cli.BoolFlag{Name: "io", Usage: "lint for an environment with io (io, os.remove, file); --io=false for one without", DefaultText: "[lint] io, else [io] enabled, else true"},
			&cli.BoolFlag{Name: "no-io", Usage: "same as --io=false"},
			&cli.StringFlag{Name: "stdin-filename", Value: app.LintStdinName, Usage: "the `NAME` of standard input (-) in diagnostics"},
			&cli.BoolFlag{Name: "list-rules", Usage: "print the rules and exit"},
			&cli.BoolFlag{Name: "types", Usage: "also type-check each script with Luau's type checker against the sdk's definitions (rule type)", DefaultText: "[lint] types, else false"},
			learnFlag(),
			&cli.BoolFlag{Name: "effects", Usage: "also list, per script, what it can change: the unsafe sdk functions it names, its io writes, and what it reaches without naming it (text and json formats)"},
		}, sdkFlags()...),
		OnUsageError: usageError,
		Action:       runLint,
	}
}

func runLint(c *cli.Context) error {
	if c.Bool("list-rules") {
		return app.ListLintRules(c.App.Writer)
	}
	if c.NArg() == 0 {
		return usagef("lint needs paths: files, directories, or - for standard input")
	}
	format, err := app.ParseLintFormat(c.String("format"))
	if err != nil {
		return usagef("%v", err)
	}
	file, err := loadConfig(c)
	if err != nil {
		return err
	}
	flags := app.LintFlags{Strict: c.Bool("strict"), Types: c.Bool("types")}
	for _, v := range c.StringSlice("disable") {
		for name := range strings.SplitSeq(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				flags.Disable = append(flags.Disable, name)
			}
		}
	}
	switch {
	case c.Bool("no-io"):
		off := false
		flags.IO = &off
	case c.IsSet("io"):
		on := c.Bool("io")
		flags.IO = &on
	}
	s := app.ResolveLint(file, flags)
	options, err := app.LintOptions(s)
	if err != nil {
		return usagef("%v", err)
	}
	if c.Bool("effects") {
		if format != app.LintText && format != app.LintJSON {
			return usagef("lint: --effects writes the text or json format, not %s", format)
		}
		options.Effects = true
	}

	sources, err := app.CollectLintSources(c.Args().Slice(), c.App.Reader, c.String("stdin-filename"))
	if err != nil {
		return usagef("lint: %s", strings.Join(errorLines(err), "\ntoolscript: lint: "))
	}

	ctx, stop := interruptible(false)
	defer stop()
	report, err := app.Lint(ctx, app.LintConfig{File: file, SDK: sdkOptions(c), Sources: sources, Options: options, Types: s.Types})
	if err != nil {
		return exitFor(err)
	}

	// Text goes through the termtext net; GitHub's commands past it (they
	// escape their own fields); JSON and SARIF are exact data
	// (writeExactJSON).
	out, exact := c.App.Writer, new(bytes.Buffer)
	switch format {
	case app.LintJSON, app.LintSARIF:
		out = exact
	case app.LintText:
	default:
		out = termtext.Raw(out)
	}
	if err := app.WriteLint(out, format, report, toolscriptVersion()); err != nil {
		return usagef("%v", err)
	}
	if exact.Len() > 0 {
		if err := writeExactJSON(c.App.Writer, exact.Bytes()); err != nil {
			return usagef("writing the report: %v", err)
		}
	}
	if format == app.LintText {
		fmt.Fprintln(c.App.ErrWriter, app.LintSummary(report))
	}
	if report.Failed(s.Strict) {
		return cli.Exit("", exitScriptError)
	}
	return nil
}

// errorLines are the errors err joins (errors.Join), each escaped as one
// line: a path in one cannot start a line of its own.
func errorLines(err error) []string {
	errs := []error{err}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		errs = joined.Unwrap()
	}
	lines := make([]string, len(errs))
	for i, e := range errs {
		lines[i] = termtext.Line(e.Error())
	}
	return lines
}
