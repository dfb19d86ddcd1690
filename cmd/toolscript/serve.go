package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/toolscript/toolscript/host/config"
	"github.com/toolscript/toolscript/host/luau"
	"github.com/toolscript/toolscript/host/mcpserver"
)

// servePoolSize is how many ready instances the server keeps.
const servePoolSize = 4

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "serve the execute_script tool over MCP on standard input and output",
		Description: "Standard output carries protocol messages only; diagnostics go to standard error.\n" +
			"Register the command in an MCP client (command \"toolscript\", args [\"serve\"]).",
		Flags: append(sharedFlags(),
			&cli.IntFlag{Name: "max-concurrent", Usage: fmt.Sprintf("scripts run at once; later calls wait (default %d)", config.DefaultMaxConcurrent)},
			&cli.DurationFlag{Name: "max-timeout", Usage: fmt.Sprintf("the most a call's timeout_ms may ask for (default %s)", config.DefaultMaxTimeout)},
			&cli.Int64Flag{Name: "max-script-bytes", Usage: fmt.Sprintf("the largest script accepted, in bytes (default %d)", config.DefaultMaxScriptBytes)},
		),
		OnUsageError: usageError,
		Action:       serve,
	}
}

func serve(c *cli.Context) error {
	if c.NArg() > 0 {
		return usagef("serve takes no arguments")
	}
	s, err := settings(c, config.Stdio)
	if err != nil {
		return err
	}
	file, err := config.LoadDefault(c.String("config")) // read by settings already: no error now
	if err != nil {
		return usagef("%v", err)
	}
	limits, err := config.ResolveServer(file, config.ServerFlags{
		MaxConcurrent:  c.Int("max-concurrent"),
		MaxTimeout:     c.Duration("max-timeout"),
		MaxScriptBytes: c.Int64("max-script-bytes"),
	})
	if err != nil {
		return usagef("%v", err)
	}

	// A client that goes away must not kill the server with SIGPIPE while it
	// stops its scripts: writes fail instead.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	client, err := openSDK(ctx, c, file)
	if err != nil {
		return err
	}
	if client != nil {
		defer client.Close()
		// TODO(lead): hand client.Manifest() to the runtime, a
		// client.Session(sdk.ParseMetaAuth(_meta.auth)) to each execution and
		// sdkdocs.New(client.Catalog()) to the server's docs tools.
	}

	rt, err := luau.New(ctx, luau.Config{MaxMemoryBytes: luau.MaxMemoryFor(s.Limits.HeapBytes), PoolSize: servePoolSize})
	if err != nil {
		return cli.Exit(fmt.Sprintf("toolscript: %v", err), exitScriptError)
	}
	defer rt.Close(context.Background())

	srv, err := mcpserver.New(mcpserver.Config{
		Runtime:        rt,
		Limits:         s.Limits,
		IO:             s.IO,
		MaxConcurrent:  limits.MaxConcurrent,
		MaxTimeout:     limits.MaxTimeout,
		MaxScriptBytes: limits.MaxScriptBytes,
		Version:        toolscriptVersion(),
		ErrorLog:       c.App.ErrWriter,
	})
	if err != nil {
		return cli.Exit(fmt.Sprintf("toolscript: %v", err), exitScriptError)
	}

	io := "off"
	if s.IO != nil {
		io = s.IO.Dir
		if abs, err := filepath.Abs(s.IO.Dir); err == nil {
			io = abs
		}
	}
	fmt.Fprintf(c.App.ErrWriter, "toolscript serve: ready (io directory: %s; %s at once)\n", io, count(limits.MaxConcurrent, "script"))
	if err := srv.Serve(ctx, c.App.Reader, c.App.Writer); err != nil {
		return cli.Exit(fmt.Sprintf("toolscript: %v", err), exitScriptError)
	}
	return nil
}
