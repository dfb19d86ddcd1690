package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/toolscript/toolscript/host/app"
	"github.com/toolscript/toolscript/host/platform/termtext"
)

// sdkFlags are the flags that configure the sdk, shared by run, serve,
// lint and sdk: the one place they are defined.
func sdkFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "api", Usage: "add an API: `NAME=SPEC` (a path or http(s) URL of an OpenAPI or Swagger document; repeatable)"},
		&cli.StringSliceFlag{Name: "auth", Usage: "`NAME:ENV_VAR`: API NAME's credential is read from ENV_VAR (repeatable)"},
		&cli.StringSliceFlag{Name: "mcp", Usage: "add an upstream MCP server: `NAME=COMMAND ARGS...` (stdio, split like a shell) or NAME=URL (streamable HTTP); its tools are sdk.NAME.<tool> (repeatable)"},
		&cli.IntFlag{Name: "max-calls", Usage: "sdk calls one script may make", DefaultText: fmt.Sprint(app.DefaultMaxCalls)},
	}
}

// sdkOptions are the sdk's flags given to c and to the commands above it
// (`toolscript sdk --api X list` and `toolscript sdk list --api X` alike).
func sdkOptions(c *cli.Context) app.SDKOptions {
	var flags app.SDKFlags
	var learn []string
	for _, ctx := range c.Lineage() {
		if ctx.Command == nil && ctx.App != nil && ctx != c {
			continue // the app itself has no sdk flags
		}
		flags.APIs = append(flags.APIs, ctx.StringSlice("api")...)
		flags.Auth = append(flags.Auth, ctx.StringSlice("auth")...)
		flags.MCP = append(flags.MCP, ctx.StringSlice("mcp")...)
		learn = append(learn, ctx.StringSlice("learn")...)
		if flags.MaxCalls == 0 {
			flags.MaxCalls = ctx.Int("max-calls")
		}
	}
	return app.SDKOptions{Flags: flags, Getenv: os.Getenv, Stderr: c.App.ErrWriter, CacheVersion: version, Learn: learn}
}

// learnFlag is --learn, of the commands that show or check against the
// sdk's types (sdk, lint, run --check, and serve on standard input and
// output).
func learnFlag() cli.Flag {
	return &cli.StringSliceFlag{Name: "learn", Usage: "learn the result types of functions that declare none from the recorded traces at `PATH` " +
		"(a trace file, or a directory's .jsonl and .trace files), besides [effects] record_dir (repeatable)"}
}

func sdkCommand() *cli.Command {
	flags := append([]cli.Flag{
		&cli.StringFlag{Name: "config", Usage: "config `FILE` (default: ./toolscript.toml if it exists)"},
		learnFlag(),
	}, sdkFlags()...)
	return &cli.Command{
		Name:  "sdk",
		Usage: "show the functions scripts can call: list, docs NAME, search QUERY, types",
		Description: "The APIs come from [apis.NAME] in the config file and from --api NAME=SPEC.\n" +
			"Exit status: 0 success, 1 nothing found, 2 usage or configuration error (a spec that cannot be loaded).",
		Flags:           flags,
		OnUsageError:    usageError,
		HideHelpCommand: true,
		Subcommands: []*cli.Command{
			sdkSubcommand("list", "list the APIs, or the functions of one API", "[API]", sdkList, flags,
				&cli.StringFlag{Name: "tag", Usage: "only functions with this `TAG`"},
				&cli.BoolFlag{Name: "json", Usage: "print JSON"}),
			sdkSubcommand("docs", "the Luau signature and docs of a function, an API's overview, or an sdk:// resource", "NAME|API|sdk://...", sdkDocs, flags),
			sdkSubcommand("search", "find functions by what they do", "QUERY...", sdkSearch, flags,
				&cli.IntFlag{Name: "limit", Value: app.SDKSearchResults, Usage: "at most `N` results"},
				&cli.BoolFlag{Name: "json", Usage: "print JSON"}),
			sdkSubcommand("types", "write a Luau definitions file (the sandbox's globals and the sdk) for luau-lsp", "", sdkTypes, flags,
				&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write to `FILE` instead of standard output"}),
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("unknown sdk command %q (commands: list, docs, search, types)", c.Args().First())
			}
			_ = cli.ShowSubcommandHelp(c)
			return cli.Exit("", exitUsage)
		},
	}
}

// sdkSubcommand is `toolscript sdk NAME`: its own flags, then the sdk
// command's (shared).
func sdkSubcommand(name, usage, argsUsage string, action cli.ActionFunc, shared []cli.Flag, own ...cli.Flag) *cli.Command {
	return &cli.Command{
		Name:         name,
		Usage:        usage,
		ArgsUsage:    argsUsage,
		Flags:        append(own, shared...),
		OnUsageError: usageError,
		Action:       action,
	}
}

// sdkDocsFor loads the sdk and its docs, printing the specs' warnings.
func sdkDocsFor(c *cli.Context) (*app.SDKDocs, error) {
	configPath := ""
	for _, ctx := range c.Lineage() {
		if configPath = ctx.String("config"); configPath != "" {
			break
		}
	}
	file, err := app.LoadConfig(configPath)
	if err != nil {
		return nil, usagef("%v", err)
	}
	ctx, stop := interruptible(false)
	defer stop()
	d, err := app.Docs(ctx, file, sdkOptions(c), c.App.ErrWriter)
	return d, exitFor(err)
}

func notFound(err error) error {
	return cli.Exit("toolscript: "+err.Error(), exitScriptError)
}

func sdkList(c *cli.Context) error {
	if c.NArg() > 1 {
		return usagef("sdk list takes at most one API name")
	}
	d, err := sdkDocsFor(c)
	if err != nil {
		return err
	}
	out := c.App.Writer
	if c.NArg() == 0 && c.String("tag") == "" {
		apis := d.ListAPIs()
		if c.Bool("json") {
			return printJSON(c, apis)
		}
		tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "API\tFUNCTIONS\tTITLE")
		for _, a := range apis {
			fmt.Fprintf(tw, "%s\t%d\t%s\n", termtext.Line(a.Name), a.Functions, termtext.Line(a.Title))
		}
		tw.Flush()
		fmt.Fprintln(out, "\n`toolscript sdk list API` lists an API's functions; `toolscript sdk docs NAME` shows one.")
		return nil
	}
	fns, err := d.ListFunctions(c.Args().First(), c.String("tag"))
	if err != nil {
		return notFound(err)
	}
	if c.Bool("json") {
		return printJSON(c, fns)
	}
	tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	for _, f := range fns {
		if f.Summary == "" {
			fmt.Fprintf(tw, "%s\n", termtext.Line(f.Name))
		} else {
			fmt.Fprintf(tw, "%s\t%s\n", termtext.Line(f.Name), termtext.Line(f.Summary))
		}
	}
	return tw.Flush()
}

func sdkDocs(c *cli.Context) error {
	if c.NArg() != 1 {
		return usagef("sdk docs needs one name: a function (list_pets, sdk.petstore.list_pets), an API, or an sdk:// URI")
	}
	d, err := sdkDocsFor(c)
	if err != nil {
		return err
	}
	name := c.Args().First()
	var text string
	switch {
	case strings.HasPrefix(name, app.SDKURIPrefix):
		text, err = d.Resource(name)
	case isAPI(d, name):
		text, err = d.Overview(name)
	default:
		text, err = d.FunctionDocs(name)
	}
	if err != nil {
		return notFound(err)
	}
	fmt.Fprint(c.App.Writer, text)
	return nil
}

func isAPI(d *app.SDKDocs, name string) bool {
	for _, a := range d.ListAPIs() {
		if a.Name == name {
			return true
		}
	}
	return false
}

func sdkSearch(c *cli.Context) error {
	if c.NArg() == 0 {
		return usagef("sdk search needs a query")
	}
	d, err := sdkDocsFor(c)
	if err != nil {
		return err
	}
	query := strings.Join(c.Args().Slice(), " ")
	if err := app.CheckSearchQuery(query); err != nil {
		return usagef("sdk search: %v", err)
	}
	hits := d.Search(query, c.Int("limit"))
	if c.Bool("json") {
		return printJSON(c, hits)
	}
	if len(hits) == 0 {
		return notFound(fmt.Errorf("nothing matches %q", strings.Join(c.Args().Slice(), " ")))
	}
	tw := tabwriter.NewWriter(c.App.Writer, 0, 8, 2, ' ', 0)
	for _, h := range hits {
		fmt.Fprintf(tw, "%s\t%s\n", termtext.Line(h.Name), termtext.Line(h.Summary))
	}
	return tw.Flush()
}

func sdkTypes(c *cli.Context) error {
	if c.NArg() > 0 {
		return usagef("sdk types takes no arguments")
	}
	d, err := sdkDocsFor(c)
	if err != nil {
		return err
	}
	defs := d.Definitions()
	if path := c.String("output"); path != "" {
		if err := os.WriteFile(path, []byte(defs), 0o644); err != nil {
			return usagef("writing %s: %v", path, err)
		}
		return nil
	}
	fmt.Fprint(c.App.Writer, defs)
	return nil
}

func printJSON(c *cli.Context, v any) error {
	var data bytes.Buffer
	enc := json.NewEncoder(&data)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	return writeExactJSON(c.App.Writer, data.Bytes())
}
