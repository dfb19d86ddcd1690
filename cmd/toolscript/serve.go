package main

import (
	"fmt"
	"log/slog"
	"os/signal"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/toolscript/toolscript/host/app"
	"github.com/toolscript/toolscript/host/platform/termtext"
)

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "serve the execute_script tool over MCP on standard input and output, or over HTTP (--http)",
		Description: "Standard output carries protocol messages only; diagnostics go to standard error.\n" +
			"Register the command in an MCP client (command \"toolscript\", args [\"serve\"]).\n" +
			"With --http ADDR it serves the streamable HTTP transport at /mcp for many users instead\n" +
			"(the hosted mode: tokens from --auth-authority, io off unless --io-dir; see docs/hosted.md).",
		Flags: append(sharedFlags(),
			&cli.IntFlag{Name: "max-concurrent", Usage: "scripts run at once; later calls wait", DefaultText: fmt.Sprint(app.DefaultMaxConcurrent)},
			&cli.DurationFlag{Name: "max-timeout", Usage: "the most a call's timeout_ms may ask for", DefaultText: app.DefaultMaxTimeout.String()},
			&cli.Int64Flag{Name: "max-script-bytes", Usage: "the largest script accepted, in bytes", DefaultText: fmt.Sprint(app.DefaultMaxScriptBytes)},
			&cli.DurationFlag{Name: "queue-wait", Usage: "the longest a call waits for a slot before it fails", DefaultText: "as long as it lives; " + app.DefaultQueueWait.String() + " with --http"},
			learnFlag(),
			&cli.StringFlag{Name: "http", Usage: "serve MCP over streamable HTTP at `ADDR`/mcp, e.g. 127.0.0.1:8080 or :8080 (the hosted mode)"},
			&cli.BoolFlag{Name: "stateless", Usage: "--http: issue no sessions, so that any replica serves any request"},
			&cli.StringFlag{Name: "metrics-addr", Usage: "--http: serve /metrics on this address (such as 127.0.0.1:9090) instead of the public one"},
			&cli.IntFlag{Name: "max-concurrent-per-user", Usage: "--http: scripts one user runs at once", DefaultText: "--max-concurrent"},
			&cli.IntFlag{Name: "rate-limit", Usage: "--http: executions a user may start a minute; beyond, HTTP 429", DefaultText: "no limit"},
			&cli.StringSliceFlag{Name: "allowed-origins", Usage: "--http: web origins whose pages may call the server, e.g. https://app.example.com (comma-separated)"},
			&cli.StringFlag{Name: "tls-cert", Usage: "--http: serve HTTPS with this PEM certificate `FILE` (and --tls-key)"},
			&cli.StringFlag{Name: "tls-key", Usage: "--http: the PEM private key `FILE` of --tls-cert"},
			&cli.DurationFlag{Name: "shutdown-grace", Usage: "--http: how long running scripts may finish after SIGTERM or SIGINT", DefaultText: app.DefaultShutdownGrace.String()},
			&cli.StringFlag{Name: "auth-authority", Usage: "--http: the token issuer `URL` (its iss); turns authentication on"},
			&cli.StringFlag{Name: "auth-audience", Usage: "--http: the audience every token must name (its aud)"},
			&cli.StringFlag{Name: "auth-jwks-uri", Usage: "--http: the issuer's key set `URL` (default: from its discovery document)"},
			&cli.StringSliceFlag{Name: "auth-scopes", Usage: "--http: scopes every token must carry (comma-separated)"},
			&cli.StringFlag{Name: "public-url", Usage: "--http: the server's public base `URL`, when a proxy in front changes it"},
			&cli.BoolFlag{Name: "insecure-no-auth", Usage: "--http: serve without authentication on any address (anyone who reaches it runs scripts)"},
		),
		OnUsageError: usageError,
		Action:       serve,
	}
}

func serve(c *cli.Context) error {
	if c.NArg() > 0 {
		return usagef("serve takes no arguments")
	}
	file, err := loadConfig(c)
	if err != nil {
		return err
	}
	limits, err := app.ResolveServer(file, app.ServerFlags{
		MaxConcurrent:  c.Int("max-concurrent"),
		MaxTimeout:     c.Duration("max-timeout"),
		MaxScriptBytes: c.Int64("max-script-bytes"),
		QueueWait:      c.Duration("queue-wait"),
		HTTP:           c.String("http"),
	})
	if err != nil {
		return usagef("%v", err)
	}
	hostedFlags := app.HostedFlags{
		Stateless:            c.Bool("stateless"),
		MetricsAddr:          c.String("metrics-addr"),
		MaxConcurrentPerUser: c.Int("max-concurrent-per-user"),
		RateLimit:            c.Int("rate-limit"),
		AllowedOrigins:       c.StringSlice("allowed-origins"),
		TLSCert:              c.String("tls-cert"),
		TLSKey:               c.String("tls-key"),
		ShutdownGrace:        c.Duration("shutdown-grace"),
		InsecureNoAuth:       c.Bool("insecure-no-auth"),
		Auth: app.AuthFlags{
			Authority: c.String("auth-authority"),
			Audience:  c.String("auth-audience"),
			JWKSURI:   c.String("auth-jwks-uri"),
			Scopes:    c.StringSlice("auth-scopes"),
			PublicURL: c.String("public-url"),
		},
	}
	if given := hostedFlags.Given(); limits.Mode() == app.ModeStdio && len(given) > 0 {
		return usagef("%s: only with --http ADDR (the hosted mode)", strings.Join(given, ", "))
	}
	if len(c.StringSlice("learn")) > 0 && limits.Mode() == app.ModeHosted {
		return usagef("--learn: not with --http: a hosted server learns no result types, so that one user's results never shape what another sees")
	}
	s, err := settings(c, file, limits.Mode())
	if err != nil {
		return err
	}

	// A client that goes away must not kill the server with SIGPIPE while it
	// stops its scripts: writes fail instead.
	signal.Ignore(syscall.SIGPIPE)
	// Hosted, the first signal shuts down gracefully; the next one ends
	// the process at once.
	ctx, stop := interruptible(limits.Mode() == app.ModeHosted)
	defer stop()
	// Standard output carries the protocol: exact data. Standard error is
	// for a person in the stdio mode, JSON lines in the hosted mode.
	stderr, sdkOpts := c.App.ErrWriter, sdkOptions(c)
	if limits.Mode() == app.ModeHosted {
		stderr = termtext.NewJSONWriter(termtext.Raw(stderr))
		sdkOpts.Stderr = stderr
	}
	err = app.Serve(ctx, app.ServeConfig{
		File: file, Server: limits, Settings: s, Hosted: hostedFlags,
		SDK:     sdkOpts,
		Version: toolscriptVersion(),
		Stdin:   c.App.Reader, Stdout: termtext.Raw(c.App.Writer), Stderr: stderr,
	})
	if err != nil && limits.Mode() == app.ModeHosted {
		// Standard error is JSON lines only, the error that ends serve
		// included.
		slog.New(slog.NewJSONHandler(stderr, nil)).Error(err.Error())
		if app.IsUsage(err) {
			return cli.Exit("", exitUsage)
		}
		return cli.Exit("", exitScriptError)
	}
	return exitFor(err)
}
