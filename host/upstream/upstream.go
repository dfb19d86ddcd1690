// Package upstream owns the connections to upstream MCP servers whose
// tools scripts call as sdk.<server>.<tool>: one mcp-go client per server
// and per process (stdio subprocess or streamable HTTP), shared by every
// execution without a lock around calls. It lists each server's tools into
// catalog APIs of kind mcp, re-lists them on notifications/tools/list_changed,
// checks a call's arguments against the tool's inputSchema, turns results
// into sdkcall.Response values, reads no message from a server past a cap derived
// from max_response_bytes (nor past a nesting depth or a number of content
// blocks: a stdio server's message past one fails the call it answers,
// and that call alone), restarts a server that exited or hung (with
// backoff) and stops the processes it started, their whole process group.
package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolscript/toolscript/host/catalog"
)

// The defaults of an [mcp_servers.NAME] section.
const (
	// DefaultTimeout bounds one tool call (never past the execution's own
	// deadline).
	DefaultTimeout = 30 * time.Second
	// StartTimeout bounds starting a server: spawning or connecting, the
	// initialize handshake and listing its tools.
	StartTimeout = 60 * time.Second
	// MaxBackoff is the longest wait before restarting a server that keeps
	// failing.
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
	// Secrets are what the configuration put into the server's URL,
	// headers and environment from the process's environment, and the
	// headers' values: credentials, which the sdk redacts from everything
	// scripts get.
	Secrets []string
}

// Options are what every server of a Set shares.
type Options struct {
	// Stderr receives the servers' standard error, each line prefixed with
	// "[name] "; nil means os.Stderr. Never standard output.
	Stderr io.Writer
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
}

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
}

// Start connects to every server of cfgs (in parallel) and lists their
// tools. A server that cannot be started, or whose tools cannot be listed,
// is an error naming it; the servers already started are stopped.
func Start(ctx context.Context, cfgs []Config, opts Options) (*Set, error) {
	if opts.Stderr == nil {
		opts.Stderr = os.Stderr
	}
	bg, cancel := context.WithCancel(context.Background())
	s := &Set{opts: opts, byName: map[string]*server{}, stderr: &lockedWriter{w: opts.Stderr}, ctx: bg, cancel: cancel}
	for _, c := range cfgs {
		if err := c.check(); err != nil {
			cancel()
			return nil, err
		}
		if s.byName[c.Name] != nil {
			cancel()
			return nil, fmt.Errorf("mcp server %s: given twice", c.Name)
		}
		if c.Timeout <= 0 {
			c.Timeout = DefaultTimeout
		}
		srv := &server{cfg: c, set: s}
		s.servers = append(s.servers, srv)
		s.byName[c.Name] = srv
	}
	err := s.each(func(srv *server) error {
		_, err := srv.connect(ctx)
		return err
	})
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
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
	}
	return nil
}

// APIs are the catalog APIs of the servers' current tools, in
// configuration order: fresh values the caller may keep and change.
func (s *Set) APIs() []*catalog.API {
	out := make([]*catalog.API, len(s.servers))
	for i, srv := range s.servers {
		out[i] = srv.tools.Load().api.Clone()
	}
	return out
}

// Ready reports whether every server is connected and answering, for a
// readiness probe: each is asked for its tools (a request every protocol
// version has); one that does not answer is stopped and, like one that is
// down, started again now (after the backoff it earned, unless ctx ends
// sooner). The error names each server that cannot be reached, and why.
func (s *Set) Ready(ctx context.Context) error {
	return s.each(func(srv *server) error {
		if err := srv.ready(ctx); err != nil {
			return fmt.Errorf("mcp server %s: %w", srv.cfg.Name, err)
		}
		return nil
	})
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
	})
}
