// Command toolscript runs Luau scripts in a sandboxed WebAssembly instance of
// upstream Luau and reports one structured result.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/toolscript/toolscript/host/app"
	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/platform/termtext"
)

// version may be set at build time: -ldflags "-X main.version=v1.2.3".
// When it is not, the module version from the build info is reported
// (toolscriptVersion).
var version string

// Exit statuses.
const (
	exitOK          = 0
	exitScriptError = 1
	exitUsage       = 2
)

func main() {
	os.Exit(run(os.Args, os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// Everything the command shows a person passes host/platform/termtext's rule
	// (escape sequences and other controls shown, never run); exact data
	// (JSON, SARIF, the MCP protocol, the progress bar's own sequences) is
	// written to the writer beneath, termtext.Raw.
	stdout, stderr = termtext.NewWriter(stdout), termtext.NewWriter(stderr)
	app := &cli.App{
		Name:      "toolscript",
		Usage:     "run Luau scripts in a sandbox and get one structured result",
		Reader:    stdin,
		Writer:    stdout,
		ErrWriter: stderr,
		// --mcp values are command lines: a comma is part of them.
		DisableSliceFlagSeparator: true,
		Commands: []*cli.Command{
			runCommand(),
			versionCommand(),
			serveCommand(),
			lintCommand(),
			sdkCommand(),
		},
		OnUsageError:    usageError,
		HideHelpCommand: true,
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("unknown command %q (commands: run, serve, lint, sdk, version)", c.Args().First())
			}
			_ = cli.ShowAppHelp(c)
			return cli.Exit("", exitUsage)
		},
		ExitErrHandler: func(*cli.Context, error) {}, // exit codes are handled below
	}
	err := app.Run(args)
	if err == nil {
		return exitOK
	}
	var coded cli.ExitCoder
	if errors.As(err, &coded) {
		if msg := err.Error(); msg != "" {
			fmt.Fprintln(stderr, msg)
		}
		return coded.ExitCode()
	}
	fmt.Fprintln(stderr, "toolscript: "+errorText(err))
	return exitUsage
}

// usageError makes every flag or argument error exit with status 2, with
// a hint when one helps (flagHint).
func usageError(c *cli.Context, err error, _ bool) error {
	return cli.Exit("toolscript: "+err.Error()+flagHint(c, err.Error()), exitUsage)
}

// invalidValue is the flag package's message for a value a flag refuses.
var invalidValue = regexp.MustCompile(`^invalid value "(.*)" for flag -([A-Za-z0-9-]+): `)

// flagHint is what a flag error of the flag package (message) is missing:
// the flag nearest in spelling to an unknown one, and the unit of a
// duration given as a bare number.
func flagHint(c *cli.Context, message string) string {
	var flags []cli.Flag
	if c.Command != nil && c.Command.Name != "" {
		flags = c.Command.Flags
	} else {
		flags = c.App.Flags
	}
	if name, ok := strings.CutPrefix(message, "flag provided but not defined: -"); ok {
		var names []string
		for _, f := range flags {
			if v, ok := f.(cli.VisibleFlag); ok && !v.IsVisible() {
				continue
			}
			names = append(names, f.Names()...)
		}
		if near := catalog.Closest(strings.TrimLeft(name, "-"), names); near != "" {
			return fmt.Sprintf(" (did you mean %s?)", dashed(near))
		}
		return ""
	}
	m := invalidValue.FindStringSubmatch(message)
	if m == nil {
		return ""
	}
	value, name := m[1], m[2]
	for _, f := range flags {
		if _, isDuration := f.(*cli.DurationFlag); isDuration && slices.Contains(f.Names(), name) {
			if _, err := strconv.ParseFloat(value, 64); err == nil {
				return fmt.Sprintf(" (a duration wants a unit, such as %s %ss)", dashed(name), value)
			}
		}
	}
	return ""
}

// dashed writes a flag's name as it is given: -h, --json.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// usagef is a usage error; an error among args is shown one line per
// error it joins (errorText).
func usagef(format string, args ...any) error {
	for i, a := range args {
		if err, ok := a.(error); ok {
			args[i] = errorText(err)
		}
	}
	return cli.Exit(fmt.Sprintf("toolscript: "+format, args...), exitUsage)
}

// writeExactJSON writes data, a JSON text that is the command's exact
// output (--json, lint's JSON and SARIF), to the writer beneath w as the
// same JSON value with each character host/platform/termtext escapes
// written as a \uHHHH escape: a terminal or a CI log that shows it runs
// nothing a script, a spec or a file name put in it.
func writeExactJSON(w io.Writer, data []byte) error {
	_, err := io.WriteString(termtext.Raw(w), termtext.JSON(string(data)))
	return err
}

// errorText shows err for a person: each error it joins (errors.Join) on
// a line of its own, escaped as one line (host/platform/termtext), so that a path
// or a spec's text in it cannot start a line of its own.
func errorText(err error) string {
	return strings.Join(errorLines(err), "\ntoolscript: ")
}

// exitFor maps an error of host/app to the exit it means: a usage error
// exits with status 2, any other with status 1; both print
// "toolscript: " and the error.
func exitFor(err error) error {
	if err == nil {
		return nil
	}
	if app.IsUsage(err) {
		return usagef("%v", err)
	}
	return cli.Exit("toolscript: "+errorText(err), exitScriptError)
}

// interruptible is a context the first SIGINT or SIGTERM cancels, and the
// function that stops listening for them. With once, the signals' default
// action comes back as soon as it is cancelled: the next one ends the
// process, whatever is still running.
func interruptible(once bool) (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	if once {
		go func() {
			<-ctx.Done()
			stop()
		}()
	}
	return ctx, stop
}
