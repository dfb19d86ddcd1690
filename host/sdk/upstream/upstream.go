// Package upstream owns the connections to upstream MCP servers whose
// tools scripts call as sdk.<server>.<tool>: one mcp-go client per server
// and per process (stdio subprocess or streamable HTTP), shared by every
// execution without a lock around calls. It lists each server's tools into
// catalog APIs of kind mcp, re-lists them on notifications/tools/list_changed,
// checks a call's arguments against the tool's inputSchema, turns results
// into sdkcall.Response values, reads no message from a server past a cap derived
// from max_response_bytes (nor past a nesting depth or a number of content
// blocks: a stdio server's message past one fails the call it answers,
// and that call alone), restarts a server that exited or hung (at once
// for a call that needs it, with backoff in the background), bounds what
// a server's standard error costs (stderr.go) and stops the processes it
// started, their whole process group. Start waits for every server;
// Launch starts them in the background.
package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/contract/redact"
	"github.com/toolscript/toolscript/host/platform/positive"
)

// The defaults of an [mcp_servers.NAME] section.
const (
	// DefaultTimeout bounds one tool call (never past the execution's own
	// deadline).
	DefaultTimeout = 30 * time.Second
	// StartTimeout bounds starting a server: spawning or connecting, the
	// initialize handshake and listing its tools.
	StartTimeout = 60 * time.Second
	// DefaultBackoffUnit is the first wait before a background attempt to
	// restart a server that keeps failing; each failure doubles it.
	DefaultBackoffUnit = time.Second
	// MaxBackoff is the longest wait before a background attempt to
	// restart a server that keeps failing.
	MaxBackoff = 30 * time.Second
	// MaxTools caps the tools one server may offer.
	MaxTools = 4096
	// MaxHeaderBytes caps the headers of one HTTP response from a
	// streamable HTTP server; a response with more fails its request.
	MaxHeaderBytes = 1 << 20
)

// Config is one upstream server: exactly one of Command or URL.
type Config struct {
	// Name is the Luau identifier scripts use: sdk.<Name>.<tool>.
	Name string
	// Command, Args, Env and Dir start a stdio server. Env adds to (and
	// overrides) toolscript's own environment.
	Command string
	Args    []string
	Env     map[string]string
	Dir     string
	// URL and Headers reach a streamable HTTP server.
	URL     string
	Headers map[string]string
	// Timeout is per call; zero means DefaultTimeout.
	Timeout time.Duration
	// Stderr is where a stdio server's standard error goes: StderrInherit
	// (also when empty), StderrDiscard or the path of a file.
	Stderr string
	// Secrets are what the configuration read from the process's
	// environment into any field (command, args, cwd, url, headers, env),
	// the headers' values and a URL's password: credentials, redacted from
	// everything that leaves the host (Options.Redactor).
	Secrets []redact.Secret
}

// Options are what every server of a Set shares.
type Options struct {
	// Stderr receives the servers' standard error, each line prefixed with
	// "[name] ", and toolscript's own lines about them; nil means
	// os.Stderr. Never standard output.
	Stderr io.Writer
	// Logger, when set, replaces Stderr: each line is a record (level
	// INFO, its text the message) with the attributes upstream (the
	// server's name) and stream ("stderr"); toolscript's own lines are
	// WARN records with upstream.
	Logger *slog.Logger
	// OnToolsChanged, when not nil, is called (on its own goroutine) after
	// a server's tools were re-listed and differ: the catalog APIs from
	// APIs() have changed.
	OnToolsChanged func(server string)
	// MaxResponseBytes caps a result's size (the sdk's max_response_bytes),
	// and through it one message from a server (maxMessageBytes), which is
	// never read past that; zero means no cap.
	MaxResponseBytes int64
	// WithheldEnv names variables of toolscript's environment that hold
	// credentials: stdio servers are started without them, unless their
	// own Env sets them.
	WithheldEnv []string
	// Gateway relays the servers' requests to a client (sampling,
	// elicitation, roots) to the client of the execution whose call they
	// serve (gateway.go): serve sets it. The servers are told toolscript
	// can answer them.
	Gateway bool
	// Redactor redacts the configuration's secrets from what the Set
	// says: its errors (a command line or URL that holds a token), and
	// the servers' standard error and toolscript's lines about them. Nil
	// redacts nothing.
	Redactor *redact.Redactor
	// BackoffUnit is the first wait between background attempts to start
	// a server that keeps failing (doubled after each failure, up to
	// MaxBackoff); zero means DefaultBackoffUnit.
	BackoffUnit time.Duration

	// background is set by Launch: the servers start while the Set is in
	// use, and a server's first tools (or its failure) are a change.
	background bool
}

func (o Options) backoffUnit() time.Duration {
	if o.BackoffUnit > 0 {
		return o.BackoffUnit
	}
	return DefaultBackoffUnit
}

// The states of a server whose tools are not known yet (catalog.API.State).
const (
	// StateStarting is a server whose first start is in progress.
	StateStarting = "starting"
	// StateDown is a server that could not be started yet; the next call
	// that needs it tries again at once, and the background does after a
	// backoff.
	StateDown = "down"
)

// Set is the upstream servers of one process. Its methods are safe for
// concurrent use.
type Set struct {
	opts    Options
	servers []*server
	byName  map[string]*server
	stderr  *lockedWriter
	// ctx ends when the Set is closed; background work (re-listing,
	// restarts) runs under it.
	ctx    context.Context
	cancel context.CancelFunc
	once   sync.Once
	// files are the stderr files to close with the Set.
	files []*fileSink
	// progress routes the servers' progress notifications to the calls
	// in flight (progress.go).
	progress progressRoutes
}

// Start connects to every server of cfgs (in parallel) and lists their
// tools. A server that cannot be started, or whose tools cannot be listed,
// is an error naming it; the servers already started are stopped.
func Start(ctx context.Context, cfgs []Config, opts Options) (*Set, error) {
	s, err := newSet(cfgs, opts)
	if err != nil {
		return nil, err
	}
	err = s.each(func(srv *server) error {
		_, err := srv.connection(ctx)
		if err != nil && ctx.Err() != nil {
			err = fmt.Errorf("mcp server %s: starting %s: %w", srv.cfg.Name, srv.describe(), err)
		}
		return s.opts.Redactor.Error(err)
	})
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Launch starts every server of cfgs in the background and returns at
// once: until a server's tools are listed its API has no functions and
// the State StateStarting (or StateDown once its start failed), and
// OnToolsChanged is called when its tools arrive. Wait waits for one
// server. Only a configuration that is wrong is an error.
func Launch(cfgs []Config, opts Options) (*Set, error) {
	opts.background = true
	s, err := newSet(cfgs, opts)
	if err != nil {
		return nil, err
	}
	for _, srv := range s.servers {
		srv.mu.Lock()
		srv.begin(true)
		srv.mu.Unlock()
	}
	return s, nil
}

func newSet(cfgs []Config, opts Options) (*Set, error) {
	if opts.Stderr == nil {
		opts.Stderr = os.Stderr
	}
	bg, cancel := context.WithCancel(context.Background())
	s := &Set{opts: opts, byName: map[string]*server{}, stderr: &lockedWriter{w: opts.Stderr}, ctx: bg, cancel: cancel}
	for _, c := range cfgs {
		if err := c.check(); err != nil {
			s.closeFiles()
			cancel()
			return nil, err
		}
		if s.byName[c.Name] != nil {
			s.closeFiles()
			cancel()
			return nil, fmt.Errorf("mcp server %s: given twice", c.Name)
		}
		c.Timeout = positive.Or(c.Timeout, DefaultTimeout)
		srv := &server{cfg: c, set: s, up: make(chan struct{})}
		if err := s.sinks(srv); err != nil {
			s.closeFiles()
			cancel()
			return nil, err
		}
		s.servers = append(s.servers, srv)
		s.byName[c.Name] = srv
	}
	return s, nil
}

// Wait waits until the tools of the server named name are known (at once
// when they are), starting it now when it is down; it fails when ctx ends
// first, or with the error of the start it waited for.
func (s *Set) Wait(ctx context.Context, name string) error {
	srv := s.byName[name]
	if srv == nil {
		return fmt.Errorf("no upstream MCP server is named %s", name)
	}
	if srv.tools.Load() != nil {
		return nil
	}
	_, err := srv.connection(ctx)
	return s.opts.Redactor.Error(err)
}

// sinks sets where the standard error of srv goes.
func (s *Set) sinks(srv *server) error {
	var base sink = textSink{prefix: "[" + srv.cfg.Name + "] ", out: s.stderr}
	if s.opts.Logger != nil {
		base = logSink{log: s.opts.Logger, name: srv.cfg.Name}
	}
	base = redactedSink{r: s.opts.Redactor, sink: base}
	srv.stderr, srv.notes = base, base
	switch srv.cfg.Stderr {
	case "", StderrInherit:
	case StderrDiscard:
		srv.stderr = nil
	default:
		f, err := openFileSink(srv.cfg.Stderr, base)
		if err != nil {
			return fmt.Errorf("mcp server %s: stderr: %w", srv.cfg.Name, err)
		}
		s.files = append(s.files, f)
		srv.stderr, srv.notes = f, f
	}
	return nil
}

func (s *Set) closeFiles() {
	for _, f := range s.files {
		f.close()
	}
}

func (c Config) check() error {
	if !catalog.IsIdentifier(c.Name) {
		return fmt.Errorf("mcp server %q: the name is not a Luau identifier (letters, digits and _, not starting with a digit)", c.Name)
	}
	switch {
	case c.Command == "" && c.URL == "":
		return fmt.Errorf("mcp server %s: give command (a stdio server) or url (a streamable HTTP server)", c.Name)
	case c.Command != "" && c.URL != "":
		return fmt.Errorf("mcp server %s: give command or url, not both", c.Name)
	case c.URL != "" && !strings.HasPrefix(c.URL, "http://") && !strings.HasPrefix(c.URL, "https://"):
		return fmt.Errorf("mcp server %s: url %q is not an http(s) URL", c.Name, c.URL)
	case c.URL != "" && (len(c.Args) > 0 || len(c.Env) > 0 || c.Dir != ""):
		return fmt.Errorf("mcp server %s: args, env and cwd go with command, not url", c.Name)
	case c.Command != "" && len(c.Headers) > 0:
		return fmt.Errorf("mcp server %s: headers go with url, not command", c.Name)
	case c.URL != "" && c.Stderr != "":
		return fmt.Errorf("mcp server %s: stderr goes with command, not url", c.Name)
	}
	return nil
}

// APIs are the catalog APIs of the servers' current tools, in
// configuration order: fresh values the caller may keep and change.
func (s *Set) APIs() []*catalog.API {
	out := make([]*catalog.API, len(s.servers))
	for i, srv := range s.servers {
		if ts := srv.tools.Load(); ts != nil {
			out[i] = ts.api.Clone()
			continue
		}
		state, why := srv.state()
		api := &catalog.API{Name: srv.cfg.Name, Kind: catalog.MCP, Title: srv.cfg.Name, State: state}
		switch state {
		case StateStarting:
			api.Description = fmt.Sprintf("The MCP server %s is starting: its tools are listed here once it answers "+
				"(clients are sent notifications/tools/list_changed). A script that names sdk.%s waits for it, within its timeout.",
				srv.cfg.Name, srv.cfg.Name)
		default:
			api.Description = fmt.Sprintf("The MCP server %s could not be started (%s). A script that names sdk.%s tries it again at once.",
				srv.cfg.Name, capText(why, maxErrorText), srv.cfg.Name)
		}
		out[i] = api
	}
	return out
}

// Ready reports whether every server is connected and answering, for a
// readiness probe: each is asked for its tools (a request every protocol
// version has); one that does not answer is stopped and, like one that is
// down, started again now (after the backoff it earned, unless ctx ends
// sooner). The error names each server that cannot be reached, and why.
func (s *Set) Ready(ctx context.Context) error {
	return s.opts.Redactor.Error(s.each(func(srv *server) error {
		if err := srv.ready(ctx); err != nil {
			return fmt.Errorf("mcp server %s: %w", srv.cfg.Name, err)
		}
		return nil
	}))
}

// each runs f on every server at once and joins their errors.
func (s *Set) each(f func(*server) error) error {
	errs := make([]error, len(s.servers))
	var wg sync.WaitGroup
	for i, srv := range s.servers {
		wg.Go(func() { errs[i] = f(srv) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (s *server) ready(ctx context.Context) error {
	c, err := s.connection(ctx)
	if err != nil {
		return err
	}
	if _, err := c.client.ListTools(ctx, mcp.ListToolsRequest{}); err == nil {
		return nil
	} else if ctx.Err() == nil {
		s.died(c, "it did not answer a readiness check")
	}
	c, err = s.connection(ctx)
	if err != nil {
		return err
	}
	_, err = c.client.ListTools(ctx, mcp.ListToolsRequest{})
	return err
}

// Close stops every server: processes started for stdio servers get
// SIGTERM, then SIGKILL, as a process group. Calls in flight fail. Close
// is idempotent.
func (s *Set) Close() {
	s.once.Do(func() {
		s.cancel()
		s.each(func(srv *server) error {
			srv.close()
			return nil
		})
		s.closeFiles()
	})
}
