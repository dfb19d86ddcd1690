// Package sdk makes the calls of a script's sdk table. A Client holds
// what every execution shares: the catalog (names linked, frozen
// parameters hidden), credentials from the configuration, and one
// net/http client with keep-alive connections. Each execution gets a
// Session, the sdkcall.Caller that checks a call's arguments against the
// spec, encodes and sends the request to the API's own origin, and turns
// the response into a sdkcall.Response, within the execution's deadline and
// budgets (max_calls, max_response_bytes, max_parallel). Credentials never
// reach the guest: they are added to requests here, and removed from
// anything that goes back. The sdk loads nothing and starts nothing:
// host/app loads the specs and starts the upstream MCP servers, and hands
// their catalog and the running servers to New.
package sdk

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/contract/limit"
	"github.com/toolscript/toolscript/host/contract/redact"
	"github.com/toolscript/toolscript/host/contract/sdkcall"
	"github.com/toolscript/toolscript/host/contract/telemetry"
	"github.com/toolscript/toolscript/host/sdk/redirect"
)

// The defaults of the [sdk] section and of [apis.NAME] timeout: the one
// place they are defined.
const (
	DefaultMaxCalls         = 100
	DefaultMaxResponseBytes = 10 << 20
	DefaultMaxParallel      = sdkcall.DefaultMaxParallel
	DefaultTimeout          = 30 * time.Second
	// DefaultMaxHostBytes and DefaultMaxHostBytesTotal are the [limits]
	// max_host_bytes and max_host_bytes_total: the response bytes the host
	// holds at once for one execution's calls, and for all executions'.
	// Either is raised to max_response_bytes when that is larger, so that
	// one response always fits.
	DefaultMaxHostBytes      = 24 << 20
	DefaultMaxHostBytesTotal = 64 << 20
	// MaxHeaderBytes caps a response's headers (when max_response_bytes,
	// which they count toward, is not smaller).
	MaxHeaderBytes = 1 << 20
)

// Config is everything the sdk needs (host/app maps the configuration's
// settings into it).
type Config struct {
	// APIs are the OpenAPI sources, in configuration order.
	APIs []APIConfig
	// Frozen are the global frozen parameters; an API's own win.
	Frozen map[string]any
	// MaxCalls, MaxResponseBytes and MaxParallel are per execution; zero
	// means the default.
	MaxCalls         int
	MaxResponseBytes int64
	MaxParallel      int
	// MaxHostBytes bounds the bytes of responses (headers, bodies, tool
	// results) the host holds at once for one execution: from the moment a
	// call starts reading its response until the script has its own copy.
	// MaxHostBytesTotal bounds them for all the executions of the Client
	// (and of those Refresh makes). A call waits while others hold the
	// budget, and fails with kind limit when its response alone is larger
	// or its wait outlasts it. Zero means the default.
	MaxHostBytes      int64
	MaxHostBytesTotal int64
	// HTTPClient, when not nil, replaces the client the sdk makes (tests).
	// Its CheckRedirect is replaced by the sdk's same-origin rule.
	HTTPClient *http.Client
	// Tools calls the functions of kind mcp (tools of upstream MCP
	// servers, whose APIs the catalog holds beside the OpenAPI ones); nil
	// means Upstreams.
	Tools ToolCaller
	// Upstreams, when not nil, are the running upstream MCP servers whose
	// tools the catalog lists (host/sdk/upstream's Set): Refresh lists their
	// tools again, Ready and WaitUpstream ask them, and Close stops them.
	Upstreams Upstreams
	// StartUpstreamsInBackground says that the upstream servers were
	// started without waiting for them (serve): a server's tools may come
	// and change later, so that ToolSafety naming a tool it does not list
	// (yet) is no error.
	StartUpstreamsInBackground bool
	// ToolSafety are the MCP servers' configured classifications, by
	// server name.
	ToolSafety map[string]Safety
	// Secrets are what the configuration read from the environment and
	// the credentials it was given (host/config collects them, the
	// upstream servers' among them), besides the APIs' Auth, which
	// NewRedactor adds.
	Secrets []redact.Secret
	// Redactor removes the secrets from everything the sdk and its MCP
	// servers give back (responses, messages, errors, the servers' lines
	// on standard error); nil means NewRedactor's.
	Redactor *redact.Redactor
	// Tracer traces each call a script makes (a span under the
	// execution's: trace.go); nil traces nothing.
	Tracer *telemetry.Tracer
}

// Upstreams are running upstream MCP servers (host/sdk/upstream's Set).
type Upstreams interface {
	ToolCaller
	// APIs are the servers' APIs as the catalog holds them, with the
	// tools listed now.
	APIs() []*catalog.API
	// Ready reports whether every server is connected.
	Ready(ctx context.Context) error
	// Wait waits until the server name's tools are listed.
	Wait(ctx context.Context, name string) error
	// Close stops the servers.
	Close()
}

// NewRedactor is the redactor of every secret of c: Secrets and the
// APIs' credentials (with what they send).
func (c *Config) NewRedactor() *redact.Redactor {
	all := append([]redact.Secret(nil), c.Secrets...)
	for _, a := range c.APIs {
		if a.Auth != nil {
			all = append(all, redact.Secrets(a.Auth.secrets()...)...)
		}
	}
	return redact.New(all...)
}

// ToolCaller calls a tool of an upstream MCP server: the functions of
// kind mcp. The session has checked nothing but the budgets (max_calls,
// max_parallel) when it calls CallTool; args is the script's JSON
// argument list. It must return when ctx ends, and name the function in
// its messages (name is "sdk.files.read_file").
type ToolCaller interface {
	CallTool(ctx context.Context, api *catalog.API, fn *catalog.Function, name string, args json.RawMessage) *sdkcall.Response
}

// APIConfig is one [apis.NAME] section (or --api flag).
type APIConfig struct {
	Name string
	// Spec is a path or URL; Dir is what a relative path is relative to
	// (the config file's directory).
	Spec, Dir string
	// BaseURL overrides the spec's servers.
	BaseURL string
	// Timeout is per call (zero: DefaultTimeout), never past the
	// execution's deadline.
	Timeout time.Duration
	// Auth is the configured credential (flag or file), nil for none.
	Auth   *Credential
	Frozen map[string]any
	// Safety classifies operations against their HTTP method.
	Safety Safety
	// PropagateTrace sends each call's W3C trace context (traceparent,
	// tracestate) to the API, unless a header the operator froze or the
	// credential sets it ([apis.NAME] propagate_trace).
	PropagateTrace bool
}

// Safety is a configured classification of an API's functions ([apis.NAME]
// or [mcp_servers.NAME] safe and unsafe): the functions named in Safe are
// safe, those in Unsafe unsafe, whatever their HTTP method or annotations
// say (catalog.API.Override). A name is an operationId or sdk function name
// (an MCP tool's name). An OpenAPI spec's names are checked when the spec
// is loaded; an MCP server's when its tools are listed, unless the servers
// start in the background (serve), whose tools may come and change later.
type Safety struct {
	Safe, Unsafe []string
}

func (c *Config) withDefaults() {
	if c.Redactor == nil {
		c.Redactor = c.NewRedactor()
	}
	if c.MaxCalls <= 0 {
		c.MaxCalls = DefaultMaxCalls
	}
	if c.MaxResponseBytes <= 0 {
		c.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if c.MaxParallel <= 0 {
		c.MaxParallel = DefaultMaxParallel
	}
	if c.MaxHostBytes <= 0 {
		c.MaxHostBytes = max(DefaultMaxHostBytes, c.MaxResponseBytes)
	}
	if c.MaxHostBytesTotal <= 0 {
		c.MaxHostBytesTotal = max(DefaultMaxHostBytesTotal, c.MaxHostBytes)
	}
}

// The names of the host memory budgets, as the configuration calls them.
const (
	execBudgetName  = "max_host_bytes"
	totalBudgetName = "max_host_bytes_total"
)

// Client is the sdk of one process: shared by its executions, safe for
// concurrent use.
type Client struct {
	cfg     Config
	catalog *catalog.Catalog
	http    *http.Client
	// funcs is indexed by function id (the manifest's ids); a function an
	// upstream server no longer has leaves a nil (Refresh keeps ids).
	funcs []*function
	// ordered are the functions in catalog order, for the manifest.
	ordered []*function
	apis    map[string]*apiState
	// upstreams are the MCP servers (nil without any); shared by the
	// clients Refresh makes.
	upstreams Upstreams
	// budget is max_host_bytes_total, shared by the clients Refresh makes.
	budget *limit.Bytes
}

// apiState is what calls of one API share.
type apiState struct {
	api     *catalog.API
	cfg     APIConfig
	baseURL string
	// base is baseURL parsed, when requests can be addressed without
	// parsing their URL (a plain scheme://host/path base); nil otherwise.
	base   *url.URL
	frozen map[string]any
}

// function is one callable with what its calls need ready, made on its
// first call (prepare).
type function struct {
	api   *apiState
	fn    *catalog.Function
	id    uint32
	name  string // "sdk.petstore.list_pets", for messages
	ready sync.Once
	// params and body check arguments with the JSON Schema validator.
	params *checker
	body   *checker
	// quick are the parameters' quick checks, by name: a call whose
	// values they all accept skips the validator.
	quick map[string]*quickCheck
	// schemes are where a credential goes (auth plans).
	schemes schemes
	// placeholders are the path template's "{name}" by parameter name.
	placeholders map[string]string
	// asText is, by parameter (fn.Params), whether a number passes as its
	// text (asText).
	asText []bool
	// safety is whether the function's calls are safe (host/contract/effects).
	safety effects.Safety
	dryFields
}

// prepare makes what the calls of f need, once.
func (f *function) prepare() {
	f.ready.Do(func() {
		api, fn := f.api.api, f.fn
		f.params = newChecker(api, paramsSchema(fn))
		f.body = newChecker(api, bodySchema(fn))
		f.quick = quickParams(api, fn)
		f.schemes = schemesOf(api, fn)
		f.asText = make([]bool, len(fn.Params))
		for i, p := range fn.Params {
			f.asText[i] = p.Schema != nil && asText(api, p.Schema)
		}
		f.placeholders = map[string]string{}
		for _, list := range [2][]*catalog.Param{fn.Params, fn.Frozen} {
			for _, p := range list {
				if p.In == "path" {
					f.placeholders[p.Name] = "{" + p.Name + "}"
				}
			}
		}
	})
}

// Refresh returns a Client like c whose catalog has the upstream servers'
// current tools (after OnToolsChanged): the runtime's manifest and the
// docs are to be rebuilt from it. c stays valid for the executions that
// use it; both share the upstream servers and connections, so close only
// the last one.
func (c *Client) Refresh() (*Client, error) {
	if c.upstreams == nil {
		return c, nil
	}
	cat := &catalog.Catalog{}
	for _, api := range c.catalog.APIs {
		if api.Kind != catalog.MCP {
			cat.APIs = append(cat.APIs, api.Clone())
		}
	}
	cat.APIs = append(cat.APIs, c.upstreams.APIs()...)
	n, err := New(cat, c.cfg)
	if err != nil {
		return nil, err
	}
	n.http = c.http
	n.upstreams = c.upstreams
	n.budget = c.budget
	// A function keeps its id, so that a script whose sdk table was made
	// before the refresh calls what it named, or learns it is gone; a new
	// one gets an id never used before.
	ids := make(map[string]uint32, len(c.funcs))
	for _, f := range c.funcs {
		if f != nil {
			ids[f.name] = f.id
		}
	}
	next := uint32(len(c.funcs))
	n.funcs = make([]*function, next)
	for _, f := range n.ordered {
		id, ok := ids[f.name]
		if !ok {
			id = next
			next++
			n.funcs = append(n.funcs, nil)
		}
		f.id = id
		n.funcs[id] = f
	}
	return n, nil
}

// New makes a Client for a loaded catalog. It hides the frozen parameters
// of cfg in cat and links its names (catalog.Link), so that docs rendered
// from cat afterwards show exactly what scripts can call.
func New(cat *catalog.Catalog, cfg Config) (*Client, error) {
	cfg.withDefaults()
	if cfg.Tools == nil && cfg.Upstreams != nil {
		cfg.Tools = cfg.Upstreams
	}
	c := &Client{cfg: cfg, catalog: cat, apis: map[string]*apiState{}, upstreams: cfg.Upstreams}
	byName := map[string]APIConfig{}
	for _, a := range cfg.APIs {
		byName[a.Name] = a
	}
	for _, api := range cat.APIs {
		ac := byName[api.Name]
		frozen := map[string]any{}
		for k, v := range cfg.Frozen {
			frozen[k] = v
		}
		for k, v := range ac.Frozen {
			frozen[k] = v
		}
		names := map[string]bool{}
		for k := range frozen {
			names[k] = true
		}
		api.Freeze(names)
		st := &apiState{api: api, cfg: ac, baseURL: api.BaseURL, frozen: frozen}
		if ac.BaseURL != "" {
			st.baseURL = strings.TrimRight(ac.BaseURL, "/")
			api.BaseURL = cfg.Redactor.String(st.baseURL) // what the docs show, everywhere
		}
		if ac.Timeout <= 0 {
			st.cfg.Timeout = DefaultTimeout
		}
		st.base = plainBase(st.baseURL)
		if ac.Auth != nil {
			if err := ac.Auth.check(); err != nil {
				return nil, fmt.Errorf("api %s: auth: %w", api.Name, err)
			}
		}
		if err := cfg.override(api, ac.Safety); err != nil {
			return nil, err
		}
		c.apis[api.Name] = st
	}
	if err := cat.Link(); err != nil {
		return nil, err
	}
	for _, api := range cat.APIs {
		st := c.apis[api.Name]
		for _, f := range api.Functions {
			// Messages name the function in its API's table, the one name
			// that says which API failed; a flat function is the same
			// function under a shorter name.
			name := "sdk." + api.Name + "." + f.Name
			fn := &function{api: st, fn: f, id: uint32(len(c.funcs)), name: name, safety: classify(f)}
			c.funcs = append(c.funcs, fn)
			c.ordered = append(c.ordered, fn)
		}
	}
	var err error
	if c.budget, err = limit.NewBytes(totalBudgetName, cfg.MaxHostBytesTotal); err != nil {
		return nil, err
	}
	c.http = cfg.HTTPClient
	if c.http == nil {
		c.http = &http.Client{Transport: newTransport(min(cfg.MaxResponseBytes, MaxHeaderBytes))}
	} else {
		copied := *c.http
		c.http = &copied
	}
	c.http.CheckRedirect = sameOrigin
	return c, nil
}

// newTransport is the shared transport: keep-alive connections, enough
// idle ones per host for max_parallel calls of several executions, and
// responses whose headers are more than maxHeader bytes refused.
func newTransport(maxHeader int64) *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		// The headers are read before the budgets can be asked.
		MaxResponseHeaderBytes: maxHeader,
	}
}

// sameOrigin follows a redirect as redirect.Check allows (to the origin
// of the first request, a few times, without a Referer); otherwise the
// redirect response is returned as it is (a non-2xx status the script
// sees).
func sameOrigin(req *http.Request, via []*http.Request) error {
	if redirect.Check(req, via) != nil {
		return http.ErrUseLastResponse
	}
	return nil
}

// Catalog is the client's catalog: frozen parameters hidden, names linked.
func (c *Client) Catalog() *catalog.Catalog { return c.catalog }

// HostBudget is the budget of host bytes all the client's executions
// share ([limits] max_host_bytes_total), which the clients Refresh makes
// share too: what else holds bytes for scripts (the hosted mode's
// unwritten responses) holds them in it as well.
func (c *Client) HostBudget() *limit.Bytes { return c.budget }

// NewHostBudget returns a budget of host bytes as cfg sets it (its
// MaxHostBytesTotal, the default filled in), for a process without a
// Client.
func NewHostBudget(cfg Config) (*limit.Bytes, error) {
	cfg.withDefaults()
	return limit.NewBytes(totalBudgetName, cfg.MaxHostBytesTotal)
}

// Manifest lists the functions for the runtime, which builds the sdk
// table from it; ids are what Session.Call receives.
func (c *Client) Manifest() sdkcall.Manifest {
	var m sdkcall.Manifest
	ordered := c.ordered
	for _, api := range c.catalog.APIs {
		out := sdkcall.API{Name: api.Name}
		for _, f := range api.Functions {
			lf := sdkcall.Function{Name: f.Name, ID: ordered[0].id, Flat: f.Flat, Kind: string(f.Kind)}
			ordered = ordered[1:]
			for _, p := range f.Params {
				lf.Params = append(lf.Params, p.Name)
				if p.Required {
					lf.Required = append(lf.Required, p.Name)
				}
			}
			if in := api.Resolve(f.InputSchema); f.Kind == catalog.MCP && in != nil {
				for _, p := range in.Properties { // an MCP tool's one table of arguments
					lf.Params = append(lf.Params, p.Name)
				}
				lf.Required = append(lf.Required, in.Required...)
			}
			out.Functions = append(out.Functions, lf)
		}
		m.APIs = append(m.APIs, out)
	}
	return m
}

// Ready reports whether the upstream MCP servers are connected (see
// upstream.Set.Ready); the APIs' specs are loaded before New.
func (c *Client) Ready(ctx context.Context) error {
	if c.upstreams == nil {
		return nil
	}
	return c.upstreams.Ready(ctx)
}

// WaitUpstream waits until the tools of the upstream MCP server name are
// listed (at once when they are), trying to start it now when it is down
// (upstream.Set.Wait). The catalog of a Client made by Refresh afterwards
// has them.
func (c *Client) WaitUpstream(ctx context.Context, name string) error {
	if c.upstreams == nil {
		return fmt.Errorf("no upstream MCP server is named %s", name)
	}
	return c.upstreams.Wait(ctx, name)
}

// MaxParallel is how many calls one execution may have in flight at once:
// what the runtime's parallel is bounded by.
func (c *Client) MaxParallel() int { return c.cfg.MaxParallel }

// Close releases idle connections and stops the upstream MCP servers
// (their process groups).
func (c *Client) Close() {
	c.http.CloseIdleConnections()
	if c.upstreams != nil {
		c.upstreams.Close()
	}
}
