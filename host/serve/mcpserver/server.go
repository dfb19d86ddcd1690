// Package mcpserver serves toolscript over the Model Context Protocol,
// built on github.com/mark3labs/mcp-go: on standard input and output
// (stdio.go) or as the streamable HTTP transport of the hosted mode
// (http.go).
//
// The core (this file, tool.go, execution.go and its layers, progress.go,
// docs.go) does not depend on the transport. The server offers the tool execute_script, which runs a
// Luau script in a fresh sandboxed instance and returns the execution
// result both as structured content (with a declared output schema) and as
// JSON text. Its instructions and resources document the runtime for the
// model: a Luau overview and one page per toolscript built-in, matching
// what is enabled; with an sdk, the discovery tools (sdk.go) and
// check_script (check.go), which checks a script without running it, as
// execute_script's argument check does before a run. Calls run concurrently, up to a limit overall and per
// user; a script's progress() calls become rate-limited progress
// notifications, written on the call's own connection, when the client asked
// for them; a call the client cancels stops its script.
//
// The transports (stdio.go, http.go) only frame messages and say which
// scope their request ids live in; the core (core.go, table.go) decodes
// each message once, keeps the requests in one table (cancellation, the
// responses owed), answers what mcp-go cannot, and has mcp-go's
// MCPServer.HandleMessage dispatch the rest. A request reaches its handler
// with its connection in the context, so that a call's progress
// notifications are written on the connection its response will take.
// execute_script's handler is its script's run inside small layers
// (execution.go), each a server.ToolHandlerMiddleware: the arguments as
// mcp-go decoded them, the server's stop, the user's slot, a retry's
// paused execution (resume.go), the preparation of the script, progress,
// the metrics and the access log. A rule that asks a person asks through
// the client (approval.go): an elicitation during the call, or, under
// 2026-07-28, an input_required result whose retry resumes the execution
// in place or by replay (pause.go, resume.go); an upstream server's own
// requests reach such a client the same way (gateway.go). A result too
// large to answer inline is kept for its user and answered with a
// resource_link that resources/read follows (large.go, kept.go).
package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mark3labs/mcp-go/server"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/contract/effects/trace"
	"github.com/toolscript/toolscript/host/contract/limit"
	"github.com/toolscript/toolscript/host/contract/redact"
	"github.com/toolscript/toolscript/host/contract/telemetry"
	"github.com/toolscript/toolscript/host/platform/positive"
	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/host/sdk/sdkdocs"
	"github.com/toolscript/toolscript/host/serve/auth"
	"github.com/toolscript/toolscript/host/serve/metrics"
	"github.com/toolscript/toolscript/host/serve/requeststate"
)

// Config configures a Server.
type Config struct {
	// Runtime runs the scripts. It must be safe for concurrent use (a
	// luau.Runtime is); the caller closes it after the server is done.
	Runtime *luau.Runtime
	// Limits bound each execution; zero fields take luau's defaults. Its
	// Timeout is the default of calls that give no timeout_ms.
	Limits luau.Limits
	// IO enables the io library for every execution; nil leaves it out.
	IO *luau.IO
	// PerUserIO gives each user a directory of their own under IO.Dir:
	// <IO.Dir>/<user.DirName()> (the hosted mode). The user is the one
	// auth.UserFrom finds in the call's context.
	PerUserIO bool
	// MaxConcurrent is how many scripts run at once; later calls wait for
	// a slot (and can be cancelled while they wait). Default 4. Under
	// stdio, at most 256 requests are read ahead of their responses.
	MaxConcurrent int
	// MaxConcurrentPerUser is how many scripts one user runs at once.
	// Default (0): MaxConcurrent.
	MaxConcurrentPerUser int
	// QueueWait bounds how long a call waits for a slot; past it the call
	// fails with a JSON-RPC error. Default (0): as long as the call lives.
	QueueWait time.Duration
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
	// Redactor redacts the configuration's secrets from every message the
	// server writes (results, errors, docs, resources, notifications) and
	// from ErrorLog. Nil redacts nothing.
	Redactor *redact.Redactor
	// Metrics count the executions and the refusals by the slots, when set.
	Metrics *metrics.Metrics
	// Tracer traces each execute_script call (a span, the client's child:
	// tracing.go); nil traces nothing. The Runtime and the sdk have their
	// own for the spans under it.
	Tracer *telemetry.Tracer
	// Prepare, when set, sees every call after its arguments are checked
	// and before its script runs, with what belongs to that call alone
	// (its user, its _meta.auth); it may complete the script (with an sdk
	// session holding the call's credentials, say). An error fails the
	// call with a tool error whose message is the error's.
	Prepare func(ctx context.Context, call *Call) error
	// SDKDocs, when set, documents the sdk the scripts get: the discovery
	// tools and sdk:// resources are added, and execute_script's
	// description lists the signatures of up to InlineSignatures functions
	// (default DefaultInlineSignatures).
	SDKDocs          *sdkdocs.Docs
	InlineSignatures int
	// AwaitSDK, when set, is called before a discovery tool or an sdk://
	// resource answers: it returns once no upstream MCP server of the sdk
	// is starting any more (its docs are set by then, SetSDKDocs), or when
	// ctx ends or its own bound passes. The answer then says which servers
	// are still starting or down.
	AwaitSDK func(ctx context.Context)
	// ResponseBudget, when set, is the process's budget of bytes held on
	// the host ([limits] max_host_bytes_total, which the sdk's responses
	// share): an execution's response counts against it, and against its
	// user's MaxUnwrittenBytesPerUser, from its script's end until the
	// transport has written it (or failed to: the client went away, or
	// did not read it in time). The execution waits for room in it
	// holding its slot, so that results waiting for room are bounded by
	// the slots; one whose user's unwritten responses leave no room gets
	// a limit error in place of its result (see holdResponse).
	ResponseBudget *limit.Bytes
	// MaxUnwrittenBytesPerUser bounds the bytes of one user's responses
	// not yet written ([server] max_unwritten_bytes_per_user). Default:
	// half of ResponseBudget.
	MaxUnwrittenBytesPerUser int64
	// States seals the requestState of executions paused for a person's
	// answer and opens their retries' (pause.go, resume.go): its key is
	// the one every replica shares ([effects] state_key). Nil: a sealer
	// with a random key of this process's own, so that only this process
	// resumes its states.
	States *requeststate.Sealer
	// LargeResults says which results are too large to answer inline,
	// and bounds those kept as resources instead (large.go, kept.go).
	LargeResults LargeResults
	// ApprovalTimeout bounds the wait for a person's answer to a rule's
	// question ([effects] approval_timeout). Default 10 minutes.
	ApprovalTimeout time.Duration
	// Checker checks scripts before they run: the tool check_script
	// (offered beside the discovery tools, with SDKDocs) and
	// execute_script's argument check. It is the process's one
	// (made lazily, its definitions loaded once per text); the caller
	// closes it. Nil: no checks.
	Checker ScriptChecker
}

// DefaultApprovalTimeout is Config.ApprovalTimeout's default.
const DefaultApprovalTimeout = 10 * time.Minute

func (c *Config) approvalTimeout() time.Duration {
	if c.ApprovalTimeout > 0 {
		return c.ApprovalTimeout
	}
	return DefaultApprovalTimeout
}

// Call is one execute_script call, as the core hands it to Config.Prepare.
// Nothing in it outlives the call or is shared with another.
type Call struct {
	// User is who made the call: the user auth.UserFrom finds in its
	// context, the zero User when there is none (stdio).
	User auth.User
	// MetaAuth is the call's params._meta.auth as the client sent it: an
	// object keyed by API name holding that user's upstream credentials
	// (docs/sdk.md, "Credentials"), or nil. It is read from this request only.
	MetaAuth json.RawMessage
	// Client is the name and version the client gave (its request's _meta
	// under 2026-07-28, else its initialize), empty when it gave none:
	// what the rules see as client.name and client.version.
	Client mcp.Implementation
	// Claims are the claims of the hosted mode's verified token (nil
	// without one): what the rules see as user.claims.
	Claims auth.Claims
	// Script is what will run. Its Effects are the call's (dry_run,
	// plan): the sdk session Prepare makes passes its calls through them.
	Script *luau.Script
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

// Server is an MCP server for toolscript. Serve it on one transport, once:
// Serve (stdio) or HTTPHandler.
type Server struct {
	cfg   Config
	mcp   *server.MCPServer
	slots *limit.Slots[auth.User]
	// unwritten are the users' budgets of responses not yet written, nil
	// without Config.ResponseBudget.
	unwritten *limit.KeyedBytes[auth.User]
	log       *log.Logger
	// docURIs are the URIs of the documentation resources.
	docMu   sync.RWMutex
	docURIs map[string]bool
	// sdkDocs are the sdk's current docs (Config.SDKDocs, SetSDKDocs);
	// sdkMu serialises SetSDKDocs.
	sdkDocs atomic.Pointer[sdkdocs.Docs]
	sdkMu   sync.Mutex
	// table holds the requests received and not yet answered; it is made
	// when the server is served (setTransport), and nil before.
	table *table
	// relays are the server's requests to clients awaiting their answer.
	relays relays
	// pausedRuns are the executions waiting in place for a person's
	// answer (pause.go).
	pausedRuns pausedTable
	states     *requeststate.Sealer
	// recordings bounds the traces executions that may pause record to
	// memory (pause.go).
	recordings *trace.Quota
	// stopped ends with Stop: every running script is stopped.
	stopped context.Context
	stop    context.CancelFunc
	// kept are the results too large to answer inline (kept.go).
	kept *keptResults
	// executeScript is execute_script's handler, in its layers
	// (execution.go).
	executeScript server.ToolHandlerFunc
	// builtinsOnly are the docs checks use without SDKDocs: the
	// built-ins'.
	builtinsOnly *sdkdocs.Docs
}

// New returns a Server for cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Runtime == nil {
		return nil, errors.New("mcpserver: Config.Runtime is nil")
	}
	if cfg.MaxConcurrent < 0 || cfg.MaxConcurrentPerUser < 0 || cfg.QueueWait < 0 {
		return nil, fmt.Errorf("mcpserver: MaxConcurrent %d, MaxConcurrentPerUser %d, QueueWait %s: none may be negative",
			cfg.MaxConcurrent, cfg.MaxConcurrentPerUser, cfg.QueueWait)
	}
	if cfg.MaxUnwrittenBytesPerUser < 0 {
		return nil, fmt.Errorf("mcpserver: MaxUnwrittenBytesPerUser %d: it must not be negative", cfg.MaxUnwrittenBytesPerUser)
	}
	if cfg.PerUserIO && cfg.IO == nil {
		return nil, errors.New("mcpserver: PerUserIO without IO")
	}
	cfg = cfg.withDefaults()
	slots, err := limit.NewSlots[auth.User](cfg.MaxConcurrent, cfg.MaxConcurrentPerUser, cfg.QueueWait)
	if err != nil {
		return nil, fmt.Errorf("mcpserver: %w", err)
	}
	s := &Server{
		cfg:     cfg,
		slots:   slots,
		log:     log.New(cfg.ErrorLog, "toolscript serve: ", 0),
		docURIs: map[string]bool{},
		// The memory recordings' bounds: maxRecordedBytes (pause.go).
		recordings: trace.NewQuota(maxRecordedBytes, maxRecordedBytesPerUser),
	}
	if cfg.ResponseBudget != nil {
		if s.unwritten, err = limit.NewKeyedBytes[auth.User](UnwrittenBudgetName, cfg.MaxUnwrittenBytesPerUser); err != nil {
			return nil, fmt.Errorf("mcpserver: %w", err)
		}
	}
	if s.states = cfg.States; s.states == nil {
		if s.states, err = ownSealer(); err != nil {
			return nil, fmt.Errorf("mcpserver: %w", err)
		}
	}
	s.pausedRuns.fit(cfg.Limits.HeapBytes)
	s.kept = newKeptResults(cfg.LargeResults, cfg.ResponseBudget)
	s.stopped, s.stop = context.WithCancel(context.Background())
	s.executeScript = s.executeScriptHandler()
	s.mcp = server.NewMCPServer("toolscript", cfg.Version,
		server.WithTitle("toolscript"),
		server.WithDescription("Runs Luau scripts in a sandbox and returns one structured result"),
		server.WithInstructions(s.instructions()),
		// The sdk can change while serving (SetSDKDocs), and clients are
		// then told.
		server.WithToolCapabilities(cfg.SDKDocs != nil),
		server.WithResourceCapabilities(false, cfg.SDKDocs != nil),
		server.WithRecovery(),
		server.WithResourceRecovery(),
	)
	if cfg.SDKDocs != nil {
		s.sdkDocs.Store(cfg.SDKDocs) // for execute_script's description
	}
	s.mcp.AddTool(s.tool(), s.executeScript)
	if cfg.SDKDocs != nil {
		s.addSDKDocs(cfg.SDKDocs)
		if cfg.Checker != nil {
			s.addCheckScript()
		}
	} else {
		s.builtinsOnly = s.forSandbox(sdkdocs.New(&catalog.Catalog{}))
	}
	s.mcp.AddResourceTemplate(mcp.NewResourceTemplate(keptURIPrefix+"{id}", "result",
		mcp.WithTemplateDescription("An execute_script result too large to answer inline, kept for the user whose call made it"),
		mcp.WithTemplateMIMEType("application/json")), s.readKeptResult)
	for _, doc := range s.docs() {
		s.mcp.AddResource(doc.resource(), doc.read)
		s.addDocURI(doc.uri)
	}
	return s, nil
}

func (s *Server) addDocURI(uri string) {
	s.docMu.Lock()
	defer s.docMu.Unlock()
	s.docURIs[uri] = true
}

func (s *Server) removeDocURIs(uris []string) {
	s.docMu.Lock()
	defer s.docMu.Unlock()
	for _, uri := range uris {
		delete(s.docURIs, uri)
	}
}

// isDocURI reports whether uri is a documentation resource's.
func (s *Server) isDocURI(uri string) bool {
	s.docMu.RLock()
	defer s.docMu.RUnlock()
	return s.docURIs[uri]
}

// withDefaults returns cfg with every zero field set to its default.
func (cfg Config) withDefaults() Config {
	cfg.Limits = cfg.Limits.WithDefaults()
	cfg.MaxConcurrent = positive.Or(cfg.MaxConcurrent, DefaultMaxConcurrent)
	if cfg.MaxConcurrentPerUser <= 0 || cfg.MaxConcurrentPerUser > cfg.MaxConcurrent {
		cfg.MaxConcurrentPerUser = cfg.MaxConcurrent
	}
	cfg.MaxTimeout = positive.Or(cfg.MaxTimeout, DefaultMaxTimeout)
	if cfg.ResponseBudget != nil && cfg.MaxUnwrittenBytesPerUser == 0 {
		cfg.MaxUnwrittenBytesPerUser = max(cfg.ResponseBudget.Size()/2, 1)
	}
	cfg.MaxScriptBytes = positive.Or(cfg.MaxScriptBytes, DefaultMaxScriptBytes)
	cfg.InlineSignatures = positive.Or(cfg.InlineSignatures, DefaultInlineSignatures)
	cfg.ProgressInterval = positive.Or(cfg.ProgressInterval, DefaultProgressInterval)
	cfg.LargeResults = cfg.LargeResults.withDefaults()
	if cfg.ErrorLog == nil {
		cfg.ErrorLog = os.Stderr
	}
	cfg.ErrorLog = cfg.Redactor.Writer(cfg.ErrorLog)
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

// Stop stops every script running and every one that starts later: their
// calls are answered with the error of a cancelled execution. The hosted
// mode calls it when the grace period of its shutdown is over.
func (s *Server) Stop() { s.stop() }

// setTransport makes the request table of the transport the server is
// served on, whose bound is max (0 for none); a Server is served once.
func (s *Server) setTransport(max int) error {
	if s.table != nil {
		return errors.New("mcpserver: the server is served already: a Server serves one transport, once")
	}
	s.table = newTable(max)
	return nil
}

// MaxRequestBytes bounds one protocol message: room for the largest
// script the server accepts even if JSON escaped every byte (\u0000 is six
// bytes), plus the rest of the request. It is the body cap of the HTTP
// transport, and the longest line stdio reads.
func (s *Server) MaxRequestBytes() int64 {
	return min(s.cfg.MaxScriptBytes*6+1<<20, math.MaxInt32)
}
