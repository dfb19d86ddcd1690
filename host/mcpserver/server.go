// Package mcpserver serves toolscript over the Model Context Protocol on
// standard input and output, built on github.com/mark3labs/mcp-go.
//
// The server offers one tool, execute_script, which runs a Luau script in a
// fresh sandboxed instance and returns the execution result both as
// structured content (with a declared output schema) and as JSON text. Its
// instructions and resources document the runtime for the model: a Luau
// overview and one page per toolscript built-in, matching what is enabled.
//
// Several calls run concurrently, up to a limit; a call cancelled by the
// client (notifications/cancelled) stops its script, whenever the
// cancellation arrives; at the end of the input the calls already read run
// to their end and are answered; a script's progress() calls become
// rate-limited progress notifications when the client asked for them. The
// server reads every message before mcp-go does (messages.go), to track
// requests (requests.go) and to answer what mcp-go would not. Standard output carries protocol messages only: a script's prints go
// to its result's logs, and diagnostics to the error log.
package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"net/http"
	"os"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolscript/toolscript/host/luau"
)

// Config configures a Server.
type Config struct {
	// Runtime runs the scripts. It must be safe for concurrent use (a
	// luau.Runtime is); the caller closes it after Serve returns.
	Runtime *luau.Runtime
	// Limits bound each execution; zero fields take luau's defaults. Its
	// Timeout is the default of calls that give no timeout_ms.
	Limits luau.Limits
	// IO enables the io library for every execution; nil leaves it out.
	IO *luau.IO
	// MaxConcurrent is how many scripts run at once; later calls wait for
	// a slot (and can be cancelled while they wait). Default 4; at most
	// 100 calls are handled at once whatever it says (mcp-go's workers).
	MaxConcurrent int
	// MaxTimeout caps timeout_ms and the default timeout. Default 5 minutes.
	MaxTimeout time.Duration
	// MaxScriptBytes caps the size of a script. Default 1 MiB.
	MaxScriptBytes int64
	// ProgressInterval is the least time between two progress
	// notifications of one call (the last is always sent). Default 100ms.
	ProgressInterval time.Duration
	// Version is the server version reported to clients.
	Version string
	// ErrorLog receives diagnostics. Default os.Stderr.
	ErrorLog io.Writer
}

// The defaults of Config.
const (
	DefaultMaxConcurrent    = 4
	DefaultMaxTimeout       = 5 * time.Minute
	DefaultMaxScriptBytes   = 1 << 20
	DefaultProgressInterval = 100 * time.Millisecond
)

// ToolName is the name of the one tool.
const ToolName = "execute_script"

// maxWorkers is the number of mcp-go stdio workers: tools/call requests
// beyond it wait in mcp-go's queue, where a cancellation cannot reach them
// yet. Executions are limited by Config.MaxConcurrent, not by this.
const maxWorkers = 100

// Server is an MCP server for toolscript. A Server serves one connection:
// call Serve once.
type Server struct {
	cfg   Config
	mcp   *server.MCPServer
	slots chan struct{}
	log   *log.Logger
	// docURIs are the URIs of the documentation resources.
	docURIs map[string]bool
	// requests are the requests read and not yet answered (requests.go).
	requests *requests
	// out is the protocol output, shared with mcp-go so that the messages
	// the server writes itself (progress, errors) never interleave with
	// mcp-go's.
	out *lineWriter
	// done is closed when Serve's context is: a signal, or the client gone.
	done <-chan struct{}
}

// New returns a Server for cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Runtime == nil {
		return nil, errors.New("mcpserver: Config.Runtime is nil")
	}
	cfg = cfg.withDefaults()
	s := &Server{
		cfg:      cfg,
		slots:    make(chan struct{}, cfg.MaxConcurrent),
		log:      log.New(cfg.ErrorLog, "toolscript serve: ", 0),
		docURIs:  map[string]bool{},
		requests: newRequests(maxPending),
	}
	// The tool handler learns its request's id from a header the hook sets:
	// it needs it to find its cancellation (requests.start).
	hooks := &server.Hooks{}
	hooks.AddBeforeCallTool(func(_ context.Context, id any, req *mcp.CallToolRequest) {
		if req.Header == nil {
			req.Header = http.Header{}
		}
		req.Header.Set(requestKeyHeader, keyOf(id))
	})
	s.mcp = server.NewMCPServer("toolscript", cfg.Version,
		server.WithHooks(hooks),
		server.WithTitle("toolscript"),
		server.WithDescription("Runs Luau scripts in a sandbox and returns one structured result"),
		server.WithInstructions(s.instructions()),
		server.WithToolCapabilities(false),
		server.WithResourceCapabilities(false, false),
		server.WithRecovery(),
		server.WithResourceRecovery(),
	)
	s.mcp.AddTool(s.tool(), s.executeScript)
	for _, doc := range s.docs() {
		s.mcp.AddResource(doc.resource(), doc.read)
		s.docURIs[doc.uri] = true
	}
	return s, nil
}

// withDefaults returns cfg with every zero field set to its default.
func (cfg Config) withDefaults() Config {
	cfg.Limits = cfg.Limits.WithDefaults()
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = DefaultMaxConcurrent
	}
	if cfg.MaxTimeout <= 0 {
		cfg.MaxTimeout = DefaultMaxTimeout
	}
	if cfg.MaxScriptBytes <= 0 {
		cfg.MaxScriptBytes = DefaultMaxScriptBytes
	}
	if cfg.ProgressInterval <= 0 {
		cfg.ProgressInterval = DefaultProgressInterval
	}
	if cfg.ErrorLog == nil {
		cfg.ErrorLog = os.Stderr
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if cfg.IO != nil && cfg.IO.MaxBytes <= 0 {
		io := *cfg.IO
		io.MaxBytes = luau.DefaultIOMaxBytes
		cfg.IO = &io
	}
	if cfg.Limits.Timeout > cfg.MaxTimeout {
		cfg.Limits.Timeout = cfg.MaxTimeout
	}
	return cfg
}

// Serve speaks MCP over in and out until in ends, ctx is cancelled (on
// SIGINT or SIGTERM, say) or out fails (the client is gone). At the end of
// in, the requests already read run to their end and are answered first;
// otherwise the running scripts are cancelled. Serve returns once they have
// stopped; each way is a clean shutdown and returns nil. mcp-go keeps its
// stdio session in a package variable, so a process serves one connection
// at a time.
func (s *Server) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	s.done = ctx.Done()
	s.out = &lineWriter{w: out, requests: s.requests, failed: func(err error) {
		s.log.Printf("writing to the client failed (%v): stopping", err)
		stop()
	}}
	stdio := server.NewStdioServer(s.mcp)
	stdio.SetErrorLogger(s.log)
	server.WithWorkerPoolSize(maxWorkers)(stdio)
	server.WithQueueSize(10 * maxWorkers)(stdio)

	err := stdio.Listen(ctx, newRequestReader(in, s.maxRequestBytes(), s), s.out)
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("mcpserver: %w", err)
	}
	return nil
}

// maxRequestBytes bounds one protocol message: room for the largest
// script the server accepts even if JSON escaped every byte (\u0000 is six
// bytes), plus the rest of the request.
func (s *Server) maxRequestBytes() int {
	n := s.cfg.MaxScriptBytes*6 + 1<<20
	if n > math.MaxInt32 {
		n = math.MaxInt32
	}
	return int(n)
}
