package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolscript/toolscript/host/contract/sdkcall"
)

// The gateway (Options.Gateway, serve): an upstream's requests to its
// client (sampling/createMessage, elicitation/create, roots/list) are
// relayed to the client of the execute_script call whose script called
// the tool in flight (sdkcall.Client.Request), and its answer back.
//
// Every server is told, when it starts, that toolscript can answer all
// three: a server is shared by every client of serve, and some may. Each
// request is then relayed or refused on its own:
//
//   - The request is attributed to a call. Over streamable HTTP (and in
//     the multi round-trip requests of protocol 2026-07-28) it arrives
//     within its tools/call, whose context carries the execution's client.
//     Over stdio (and on an HTTP server's standalone stream) nothing in a
//     request names the call it serves: MCP gives a server's request no
//     field that names a client request there (related-request-id exists
//     only in the SDKs, to pick an HTTP stream), and a tool may send one
//     after its call has answered. Such a request is attributed only when
//     every call the connection has carried since it started was made for
//     one client (sdkcall.Client.Owner: one hosted user and session, or
//     serve's one stdio client), and the calls in flight all belong to one
//     of its executions; otherwise it is refused, with an error saying
//     why, and no client is asked. So one user's request never reaches
//     another user's client, whoever happens to have the only call in
//     flight.
//   - The client relays it if it declared the capability, and refuses it
//     otherwise with an error saying so ("the client of this call does not
//     support sampling ..."), which the upstream's tool reports to the
//     script. It bounds how many it relays (host/serve/mcpserver).
//
// Without Gateway no capability is declared and every request is refused.

// flight is one tools/call in flight on a connection: its context and the
// client of its execution (nil when there is none).
type flight struct {
	ctx    context.Context
	client *sdkcall.Client
}

// flights are the tools/call requests in flight on one connection, and
// whose clients its calls have served.
type flights struct {
	mu  sync.Mutex
	set map[*flight]struct{}
	// owner is the Owner of the client of every call made on the
	// connection so far, when called is set and shared is not; shared is
	// set once calls of two owners (or one without a client) were made.
	owner          string
	called, shared bool
}

// track records a call in flight and returns the function that forgets it.
func (f *flights) track(ctx context.Context) func() {
	fl := &flight{ctx: ctx, client: sdkcall.ClientFrom(ctx)}
	f.mu.Lock()
	if f.set == nil {
		f.set = map[*flight]struct{}{}
	}
	f.set[fl] = struct{}{}
	switch {
	case fl.client == nil || (f.called && fl.client.Owner != f.owner):
		f.shared = true
	case !f.called:
		f.owner, f.called = fl.client.Owner, true
	}
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		delete(f.set, fl)
		f.mu.Unlock()
	}
}

// attribute returns the flight a request that names no call is for: the
// one execution whose calls are in flight, on a connection whose calls
// have all served one client. Otherwise it returns why there is none.
func (f *flights) attribute() (*flight, unattributed) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.set) == 0 {
		return nil, unattributed{}
	}
	if f.shared {
		return nil, unattributed{inFlight: len(f.set), shared: true}
	}
	var one *flight
	for fl := range f.set {
		switch {
		case one == nil:
			one = fl
		case one.client != fl.client:
			return nil, unattributed{inFlight: len(f.set)}
		}
	}
	return one, unattributed{}
}

// unattributed is why a request was attributed to no call: none in flight
// (inFlight 0), calls of several clients made on the connection (shared),
// or calls of several executions in flight.
type unattributed struct {
	inFlight int
	shared   bool
}

// gatewayCapabilities are what a server is told toolscript can answer.
func gatewayCapabilities() mcp.ClientCapabilities {
	caps := mcp.ClientCapabilities{
		Sampling:    &mcp.SamplingCapability{},
		Elicitation: &mcp.ElicitationCapability{},
	}
	caps.Roots = &struct {
		ListChanged bool `json:"listChanged,omitempty"`
	}{}
	return caps
}

// gatewayOptions are the client options of a connection under Gateway:
// the capabilities, and handlers for the multi round-trip requests of
// protocol 2026-07-28 (the others reach serveRequest).
func (s *server) gatewayOptions(c *conn) []client.ClientOption {
	if !s.set.opts.Gateway {
		return nil
	}
	h := typedRelay{s: s, c: c}
	return []client.ClientOption{
		client.WithClientCapabilities(gatewayCapabilities()),
		client.WithSamplingHandler(h), client.WithElicitationHandler(h), client.WithRootsHandler(h),
	}
}

// serveRequest answers a request of the server's to its client.
func (s *server) serveRequest(c *conn) transport.RequestHandler {
	return func(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
		if req.Method == string(mcp.MethodPing) {
			return transport.NewJSONRPCResultResponse(req.ID, json.RawMessage("{}")), nil
		}
		params, err := json.Marshal(req.Params)
		if err != nil || req.Params == nil {
			params = json.RawMessage("{}")
		}
		result, err := s.relay(ctx, c, req.Method, params)
		if err != nil {
			var re *sdkcall.RelayError
			if errors.As(err, &re) {
				return transport.NewJSONRPCErrorResponse(req.ID, re.Code, re.Message, nil), nil
			}
			return transport.NewJSONRPCErrorResponse(req.ID, mcp.INTERNAL_ERROR, err.Error(), nil), nil
		}
		return transport.NewJSONRPCResultResponse(req.ID, result), nil
	}
}

// relay hands a request of the server's to the client it is for.
func (s *server) relay(ctx context.Context, c *conn, method string, params json.RawMessage) (json.RawMessage, error) {
	refuse := func(format string, args ...any) error {
		return &sdkcall.RelayError{Code: mcp.INVALID_REQUEST, Message: fmt.Sprintf(format, args...)}
	}
	if !s.set.opts.Gateway {
		return nil, &sdkcall.RelayError{Code: mcp.METHOD_NOT_FOUND, Message: fmt.Sprintf(
			"toolscript answers no %s here: it relays requests of MCP servers to a client only under serve", method)}
	}
	cl, cctx := sdkcall.ClientFrom(ctx), ctx
	if cl == nil {
		fl, why := c.flights.attribute()
		link := "stdio connection"
		if c.proc == nil {
			link = "connection, outside any call's stream"
		}
		switch {
		case fl != nil:
		case why.inFlight == 0:
			return nil, refuse("toolscript relays %s only on behalf of a script's call of a tool of the MCP server %s, and none is in flight", method, s.cfg.Name)
		case why.shared:
			return nil, refuse("the MCP server %s sent %s on its %s, which has carried calls of more than one client: nothing in the request says which call it is for, so toolscript cannot tell whose it is, and relays it to no client", s.cfg.Name, method, link)
		default:
			return nil, refuse("the MCP server %s sent %s while %d calls of different scripts are in flight on its %s: toolscript cannot tell which call it is for, and relays it to no client", s.cfg.Name, method, why.inFlight, link)
		}
		cl, cctx = fl.client, fl.ctx
	}
	if cl.Request == nil {
		return nil, &sdkcall.RelayError{Code: mcp.METHOD_NOT_FOUND, Message: fmt.Sprintf(
			"the script that called the MCP server %s runs for no MCP client: toolscript relays %s only under serve", s.cfg.Name, method)}
	}
	result, err := cl.Request(cctx, method, params)
	if err != nil && cctx.Err() != nil {
		return nil, fmt.Errorf("the script's call of the MCP server %s ended before the client answered %s", s.cfg.Name, method)
	}
	return result, err
}

// typedRelay answers the multi round-trip requests of protocol
// 2026-07-28, which mcp-go hands to typed handlers with the context of
// the tools/call they belong to.
type typedRelay struct {
	s *server
	c *conn
}

func (h typedRelay) do(ctx context.Context, method string, params, out any) error {
	b, err := json.Marshal(params)
	if err != nil {
		return err
	}
	result, err := h.s.relay(ctx, h.c, method, b)
	if err != nil {
		return err
	}
	return json.Unmarshal(result, out)
}

func (h typedRelay) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	var out mcp.CreateMessageResult
	return &out, h.do(ctx, string(mcp.MethodSamplingCreateMessage), req.CreateMessageParams, &out)
}

func (h typedRelay) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	var out mcp.ElicitationResult
	return &out, h.do(ctx, string(mcp.MethodElicitationCreate), req.Params, &out)
}

func (h typedRelay) ListRoots(ctx context.Context, _ mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	var out mcp.ListRootsResult
	return &out, h.do(ctx, string(mcp.MethodListRoots), struct{}{}, &out)
}

// closingStdin is a stdio server's standard input as mcp-go's transport
// writes it: once the connection is closing, a write is dropped. A server
// may send a request just as its connection stops (server-everything asks
// for roots 350 ms after it starts); mcp-go answers it with an error, and
// would log the failed write as a plain line on toolscript's standard
// error.
//
// It also counts the answers written to the server's requests, once
// written (requests, when not nil).
type closingStdin struct {
	io.WriteCloser
	closed   atomic.Bool
	requests *serverRequests
}

func (w *closingStdin) Write(p []byte) (int, error) {
	if w.requests != nil {
		defer w.requests.wrote(p)
	}
	if w.closed.Load() {
		return len(p), nil
	}
	return w.WriteCloser.Write(p)
}

func (w *closingStdin) Close() error {
	w.closed.Store(true)
	return w.WriteCloser.Close()
}
