package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolscript/toolscript/host/sdk/redirect"
)

// healthTimeout bounds the ping that decides whether a server that let a
// call time out is hung (and is then restarted).
const healthTimeout = 5 * time.Second

// stopGrace is how long a stopping server has after its standard input is
// closed, then after SIGTERM, then after SIGKILL.
const stopGrace = time.Second

// discoverTimeout bounds the wait for a stdio server's answer to
// server/discover, its first request (within StartTimeout).
const discoverTimeout = 30 * time.Second

// server is one upstream: its current connection (nil until started, or
// after it died), the attempts to start it, the restart state and the
// current tools (nil until first listed).
type server struct {
	cfg   Config
	set   *Set
	tools atomic.Pointer[toolset]
	// stderr receives the lines of a stdio server's standard error, nil
	// when they are discarded; notes receives toolscript's own lines
	// about the server.
	stderr sink
	notes  sink

	mu   sync.Mutex
	conn *conn
	// up is closed when a connection becomes the current one (and then
	// replaced): what callers waiting for any attempt to work wait on.
	up chan struct{}
	// callerAttempt is the start a caller waits for, bgAttempt the one
	// the backoff timer made; either may be nil, and the first to work
	// wins.
	callerAttempt *attempt
	bgAttempt     *attempt
	retry         *time.Timer // the next background attempt, nil when none is due
	deaths        int         // consecutive deaths and failed starts
	lastWhy       string      // why the last connection ended, or the last start failed
	failed        bool        // the last start failed and no connection worked since
	closed        bool

	relisting atomic.Bool
	// relistAgain: a notification came since the listing began (relist).
	relistAgain atomic.Bool
}

// conn is one live connection: a client and, for stdio, its process.
type conn struct {
	client *client.Client
	proc   *process // nil for HTTP
	// refusals are the errors its guard answers refused messages with
	// (stdio).
	refusals refusals
	// flights are its tools/call requests in flight (gateway.go).
	flights flights
	// unlisten ends the subscriptions/listen stream (protocol 2026-07-28),
	// nil without one.
	unlisten func()
	dead     chan struct{}
	once     sync.Once
}

func (c *conn) isDead() bool {
	select {
	case <-c.dead:
		return true
	default:
		return false
	}
}

// stop ends the connection the way MCP's stdio transport asks: the client
// closes the server's standard input first (which lets the server read
// what was sent last, such as notifications/cancelled, and exit), then
// the process is stopped (process.stop: SIGTERM, SIGKILL to its group)
// and reaped.
func (c *conn) stop() {
	c.once.Do(func() {
		close(c.dead)
		if c.unlisten != nil {
			go c.unlisten()
		}
		closed := make(chan struct{})
		go func() {
			_ = c.client.Close()
			close(closed)
		}()
		if c.proc != nil {
			c.proc.stop()
		}
		<-closed
	})
}

// dial starts the transport and performs the initialize handshake.
func (s *server) dial(ctx context.Context) (*conn, error) {
	name := s.cfg.Name
	max := maxMessageBytes(s.set.opts.MaxResponseBytes)
	// Not a named result: the goroutines below keep c, while a failed
	// dial returns nil.
	c := &conn{dead: make(chan struct{})}
	var tr transport.Interface
	if s.cfg.Command != "" {
		var stderr *lineWriter
		if s.stderr != nil {
			stderr = newLineWriter(s.stderr)
		}
		proc, err := startProcess(s.cfg, s.set.opts.WithheldEnv, stderr)
		if err != nil {
			return nil, fmt.Errorf("mcp server %s: starting %s: %w", name, s.describe(), err)
		}
		c.proc = proc
		// A message past the cap or the bounds of a scan fails the call it
		// answers, and that call alone: the connection stays up.
		c.refusals = newRefusals()
		stdout := newLineGuard(proc.stdout, max, func(id []byte, why overKind) []byte {
			line := c.refusals.line(id, why)
			if line == nil {
				s.note(fmt.Sprintf("dropped a message that answers no call: %v", s.refusedError(why)))
			}
			return line
		})
		requests := &serverRequests{note: func() {
			s.note(fmt.Sprintf("dropping its requests while %d wait for their answers (it reads none of them)", maxServerRequests))
		}}
		stdout.admit = requests.admit
		tr = transport.NewIO(stdout, &closingStdin{WriteCloser: proc.stdin, requests: requests}, nil)
	} else {
		// The transport's own diagnostics: warnings and errors only,
		// marked with the server's name like a stdio server's stderr.
		logger := slog.New(noteHandler{s: s})
		// Headers are held whole before any cap on the body applies: they
		// get one of their own (net/http's default is 10 MiB).
		base := http.DefaultTransport.(*http.Transport).Clone()
		base.MaxResponseHeaderBytes = MaxHeaderBytes
		// A redirect leaves the server's origin never, with no Referer
		// (the headers, the URL's query and the body stay with it).
		hc := &http.Client{Transport: base, CheckRedirect: redirect.Check}
		requests := &serverRequests{note: func() {
			s.note(fmt.Sprintf("ending its streams while %d of its requests wait for their answers", maxServerRequests))
		}}
		hc.Transport = limitedTransport{base: base, max: max, requests: requests}
		// Servers on protocol versions before 2026-07-28 send
		// notifications/tools/list_changed only on the standalone GET
		// stream that continuous listening opens; newer ones on
		// subscriptions/listen (below).
		//lint:ignore SA1019 needed for the servers of earlier protocol versions
		listen := transport.WithContinuousListening()
		var err error
		tr, err = transport.NewStreamableHTTP(s.cfg.URL, transport.WithHTTPBasicClient(hc),
			transport.WithHTTPHeaders(s.cfg.Headers), listen, transport.WithHTTPLogger(logger))
		if err != nil {
			return nil, fmt.Errorf("mcp server %s: %w", name, err)
		}
	}
	var opts []client.ClientOption
	if s.cfg.Command != "" {
		// The first answer of a process just started waits for it to boot
		// (npx fetching a package, Python importing its SDK): past mcp-go's
		// 5 s, a busy machine would take a modern-only server for a legacy
		// one, and its initialize would then be refused. A legacy server
		// answers server/discover with an error at once.
		opts = append(opts, client.WithDiscoverTimeout(discoverTimeout))
	}
	opts = append(opts, s.gatewayOptions(c)...)
	cl := client.NewClient(tr, opts...)
	c.client = cl
	// The transport lives as long as the Set (its context), not as long as
	// this start.
	if err := cl.Start(s.set.ctx); err != nil {
		c.stop()
		return nil, fmt.Errorf("mcp server %s: starting %s: %w", name, s.describe(), err)
	}
	// The server's requests to its client are relayed, or refused, as they
	// were sent (gateway.go); Start gave the transport mcp-go's handler.
	if b, ok := tr.(transport.BidirectionalInterface); ok {
		b.SetRequestHandler(s.serveRequest(c))
	}
	cl.OnNotification(func(n mcp.JSONRPCNotification) {
		switch n.Method {
		case mcp.MethodNotificationToolsListChanged:
			s.relist(c)
		case string(mcp.MethodNotificationProgress):
			s.set.progress.deliver(n)
		}
	})
	cl.OnConnectionLost(func(error) { s.died(c, "the connection was lost") })
	if c.proc != nil {
		go func() {
			select {
			case <-c.proc.exited:
				s.died(c, "the process exited")
			case <-c.dead:
			}
		}()
	}
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "toolscript", Version: "upstream"}
	ictx, mark := markCalls(ctx)
	if _, err := cl.Initialize(ictx, req); err != nil {
		c.stop()
		if r := s.refused(c, mark, err); r != nil {
			err = r
		} else if st := c.proc.state(); st != "" {
			err = fmt.Errorf("%w (the process ended: %s)", err, st)
		}
		return nil, fmt.Errorf("mcp server %s: initializing %s: %w", name, s.describe(), err)
	}
	// Protocol 2026-07-28 sends notifications/tools/list_changed only on a
	// subscriptions/listen stream; earlier versions send it unasked (and
	// ListenAsync refuses).
	if stop, err := cl.ListenAsync(s.set.ctx, mcp.SubscriptionFilter{ToolsListChanged: true}, nil); err == nil {
		c.unlisten = stop
	}
	return c, nil
}

// refused is the error of a request of c that failed with err because
// its answer was refused (by the guard of a stdio connection, or cut off
// in its HTTP response, which mark records), nil when it was not. Either
// way the connection stays: only this call's answer was refused.
func (s *server) refused(c *conn, mark *oversize, err error) error {
	why := c.refusals.why(err)
	if why == notOver && mark != nil {
		why = overKind(mark.why.Load())
	}
	if why == notOver {
		return nil
	}
	return s.refusedError(why)
}

// refusedError says why a message of the server was refused. Too many
// content blocks is a limitError: a budget of the call, kind limit.
func (s *server) refusedError(why overKind) error {
	switch why {
	case overDepth:
		return fmt.Errorf("the MCP server %s sent a message nested more than %d levels deep", s.cfg.Name, maxDepth)
	case overBlocks:
		return &limitError{fmt.Errorf("the MCP server %s sent a result of more than %d content blocks", s.cfg.Name, maxBlocks)}
	case overRequests:
		return fmt.Errorf("the MCP server %s sent a request while %d of its requests wait for their answers", s.cfg.Name, maxServerRequests)
	}
	return fmt.Errorf("the MCP server %s sent a message larger than %d bytes (max_response_bytes is %d)",
		s.cfg.Name, maxMessageBytes(s.set.opts.MaxResponseBytes), s.set.opts.MaxResponseBytes)
}

// limitError is an error of kind limit for the script.
type limitError struct{ error }

func (e *limitError) Unwrap() error { return e.error }

// describe names what the server is for messages: its command line or
// URL, redacted (never its headers or environment, which may hold
// credentials).
func (s *server) describe() string {
	if s.cfg.Command != "" {
		return s.set.opts.Redactor.String(strings.Join(append([]string{s.cfg.Command}, s.cfg.Args...), " "))
	}
	return s.set.opts.Redactor.String(s.cfg.URL)
}

// list fetches the tools of c into the server's toolset. It reports
// whether they changed.
func (s *server) list(ctx context.Context, c *conn) error {
	ctx, mark := markCalls(ctx)
	tools, err := s.listPages(ctx, c)
	if err != nil {
		if r := s.refused(c, mark, err); r != nil {
			err = r
		}
		return fmt.Errorf("mcp server %s: listing tools: %w", s.cfg.Name, err)
	}
	ts := newToolset(s.cfg.Name, tools)
	old := s.tools.Swap(ts)
	// A Set that Launch made has changed when the first tools arrive.
	first := old == nil && s.set.opts.background
	if (first || (old != nil && old.key != ts.key)) && s.set.opts.OnToolsChanged != nil {
		go s.set.opts.OnToolsChanged(s.cfg.Name)
	}
	return nil
}

// listPages fetches the pages of c's tool list, the next while the last
// names a cursor, within the bounds of one listing: MaxTools tools and
// pages, and maxMessageBytes bytes of tools (as JSON) in all pages. A
// server that pages without end (a fresh cursor every time) is asked for
// no page past the first that passes a bound; a cursor it gave before
// ends the listing with an error too.
func (s *server) listPages(ctx context.Context, c *conn) ([]mcp.Tool, error) {
	maxBytes := maxMessageBytes(s.set.opts.MaxResponseBytes)
	var tools []mcp.Tool
	var size int64
	seen := map[mcp.Cursor]bool{}
	req := mcp.ListToolsRequest{}
	for pages := 1; ; pages++ {
		res, err := c.client.ListToolsByPage(ctx, req)
		if err != nil {
			return nil, err
		}
		tools = append(tools, res.Tools...)
		if len(tools) > MaxTools {
			return nil, fmt.Errorf("more than the %d tools a server may offer", MaxTools)
		}
		if data, err := json.Marshal(res.Tools); err == nil {
			size += int64(len(data))
		}
		if maxBytes > 0 && size > maxBytes {
			return nil, fmt.Errorf("its tools take more than %d bytes (max_response_bytes is %d)", maxBytes, s.set.opts.MaxResponseBytes)
		}
		next := res.NextCursor
		switch {
		case next == "":
			return tools, nil
		case pages >= MaxTools:
			return nil, fmt.Errorf("more than %d pages of tools", MaxTools)
		case seen[next]:
			return nil, fmt.Errorf("the server named the cursor %q twice", capText(string(next), maxErrorText))
		}
		seen[next] = true
		req.Params.Cursor = next
	}
}

// relist re-lists the tools after notifications/tools/list_changed, one
// listing at a time: a notification that arrives during a listing (which
// may have read the tools before the change it announces) makes the
// listing run once more when it ends, however many arrived.
func (s *server) relist(c *conn) {
	s.relistAgain.Store(true)
	if !s.relisting.CompareAndSwap(false, true) {
		return
	}
	go func() {
		for {
			s.relistAgain.Store(false)
			ctx, cancel := context.WithTimeout(s.set.ctx, StartTimeout)
			if err := s.list(ctx, c); err != nil && !c.isDead() && s.set.ctx.Err() == nil {
				s.note(fmt.Sprintf("warning: %v", err))
			}
			cancel()
			s.relisting.Store(false)
			if !s.relistAgain.Load() || !s.relisting.CompareAndSwap(false, true) {
				return
			}
		}
	}()
}

// checkHung asks c for its tools after a call timed out; a server that
// does not answer is hung, and is stopped so that the next call restarts
// it. (Not ping: protocol 2026-07-28 removed it, and mcp-go's Ping then
// succeeds without asking the server anything.)
func (s *server) checkHung(c *conn) {
	ctx, cancel := context.WithTimeout(s.set.ctx, healthTimeout)
	defer cancel()
	// One page tells whether it answers.
	if _, err := c.client.ListToolsByPage(ctx, mcp.ListToolsRequest{}); err != nil && s.set.ctx.Err() == nil {
		s.died(c, "it stopped answering")
	}
}
