package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolscript/toolscript/host/contract/sdkcall"
)

// The gateway: what the upstream MCP servers a script calls reach of the
// client whose execute_script call runs it. host/sdk/upstream finds it in the
// context of the script's sdk calls (sdkcall.ClientFrom):
//
//   - progress: an upstream tool's progress becomes progress of the call,
//     through the call's reporter (progress.go);
//   - requests: an upstream's sampling/createMessage, elicitation/create
//     and roots/list go to the client on the call's connection (relay.go),
//     when the client declared the capability at initialize; otherwise
//     they are refused with an error saying so. At most maxRelayedAtOnce
//     of one call's are relayed at once and maxRelayed in all, each with
//     params of at most maxRelayBytes: an upstream asking for thousands
//     of samplings gets errors, the client is not flooded.
//
// A client of protocol 2026-07-28 is asked through the call's result: that
// revision has no requests from server to client, so an upstream's request
// becomes an input_required result, and the client's retry brings its
// answer back to the execution waiting in this process (relayInput).

// The bounds of what one execute_script call relays.
const (
	maxRelayed       = 64
	maxRelayedAtOnce = 4
	maxRelayBytes    = 4 << 20
)

// peer is what a client declared when it initialized: which requests of
// the server it can answer. Its methods accept a nil peer (unknown: a
// stateless HTTP request), which declares nothing.
//
// A peer lives as long as its session (up to MaxSessionsPerUser of one
// user's, each for SessionIdleTimeout unused), so it keeps only what the
// server uses of an initialize request: the three capabilities it relays
// requests for, and the client's name and version within
// maxClientNameBytes. Experimental capabilities, extensions, icons and
// the rest are read past, never kept: decoded, a request's worth of them
// is tens of times its size.
type peer struct {
	params atomic.Pointer[initParams]
}

// initParams are what the server keeps of an initialize request's params.
type initParams struct {
	Capabilities mcp.ClientCapabilities
	ClientInfo   mcp.Implementation
}

// maxClientNameBytes bounds the client's name and its version as the
// server keeps them (for policies and a paused execution's binding); a
// longer one is not kept, as if the client had given none.
const maxClientNameBytes = 256

// sentInitParams are the members of an initialize request's params the
// server reads; json.Unmarshal skips every other without keeping it.
type sentInitParams struct {
	Capabilities struct {
		Roots *struct {
			ListChanged bool `json:"listChanged,omitempty"`
		} `json:"roots"`
		Sampling    *mcp.SamplingCapability    `json:"sampling"`
		Elicitation *mcp.ElicitationCapability `json:"elicitation"`
	} `json:"capabilities"`
	ClientInfo mcp.Implementation `json:"clientInfo"`
}

type peerKey struct{}

func withPeer(ctx context.Context, p *peer) context.Context {
	if p == nil {
		return ctx
	}
	return context.WithValue(ctx, peerKey{}, p)
}

func peerFrom(ctx context.Context) *peer {
	p, _ := ctx.Value(peerKey{}).(*peer)
	return p
}

// declare records what an initialize request's params declare.
func (p *peer) declare(params json.RawMessage) {
	if p == nil {
		return
	}
	var sent sentInitParams
	if json.Unmarshal(params, &sent) != nil {
		return
	}
	init := &initParams{ClientInfo: clientName(sent.ClientInfo)}
	init.Capabilities.Roots = sent.Capabilities.Roots
	init.Capabilities.Sampling = sent.Capabilities.Sampling
	init.Capabilities.Elicitation = sent.Capabilities.Elicitation
	p.params.Store(init)
}

// clientName returns the name and version of a client's declaration,
// each dropped when longer than maxClientNameBytes: what every use of a
// client's name (policies, a paused execution's binding) sees, whichever
// protocol revision declared it.
func clientName(info mcp.Implementation) mcp.Implementation {
	var kept mcp.Implementation
	if len(info.Name) <= maxClientNameBytes {
		kept.Name = info.Name
	}
	if len(info.Version) <= maxClientNameBytes {
		kept.Version = info.Version
	}
	return kept
}

// declared returns what the client declared at initialize, the zero
// value when unknown.
func (p *peer) declared() initParams {
	if p == nil {
		return initParams{}
	}
	if init := p.params.Load(); init != nil {
		return *init
	}
	return initParams{}
}

// capabilities returns the capabilities the client declared, the zero
// value when unknown.
func (p *peer) capabilities() mcp.ClientCapabilities { return p.declared().Capabilities }

// client returns the name and version the client gave at initialize, the
// zero value when unknown.
func (p *peer) client() mcp.Implementation { return p.declared().ClientInfo }

// clientOf returns the name and version of the client of the call whose
// context is ctx: as its request's _meta says (2026-07-28), else as it
// said at initialize; the zero value when it said nothing.
func clientOf(ctx context.Context) mcp.Implementation {
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.ClientInfo != nil {
		return clientName(*info.ClientInfo)
	}
	if c := callFrom(ctx); c != nil {
		return c.peer.client()
	}
	return mcp.Implementation{}
}

// gateway returns what upstreams reach of the client of the call whose
// context is ctx: progress goes to progress (nil when the client asked
// for none), requests to the client.
func (s *Server) gateway(ctx context.Context, progress *progressReporter) *sdkcall.Client {
	g := &sdkcall.Client{}
	if progress != nil {
		g.Progress = progress.upstream
	}
	c := callFrom(ctx)
	if c == nil {
		return g
	}
	caps := c.peer.capabilities()
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern && info.ClientCapabilities != nil {
		caps = *info.ClientCapabilities // declared by the request itself
	}
	g.Sampling, g.Elicitation, g.Roots = caps.Sampling != nil, caps.Elicitation != nil, caps.Roots != nil
	g.Owner = c.key.scope
	modern := server.IsModernRequest(ctx) // as mcp-go read the request's _meta
	var mu sync.Mutex
	var relayed, running int
	g.Request = func(rctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		if err := relayable(g, modern, method, len(params)); err != nil {
			return nil, err
		}
		mu.Lock()
		switch {
		case relayed >= maxRelayed:
			mu.Unlock()
			return nil, refuse(fmt.Sprintf("toolscript relays at most %d requests of upstream servers to the client of one execute_script call", maxRelayed))
		case running >= maxRelayedAtOnce:
			mu.Unlock()
			return nil, refuse(fmt.Sprintf("toolscript relays at most %d requests of upstream servers to the client of one execute_script call at once", maxRelayedAtOnce))
		}
		relayed++
		running++
		mu.Unlock()
		defer func() {
			mu.Lock()
			running--
			mu.Unlock()
		}()
		return s.request(rctx, c, method, params)
	}
	return g
}

// relayable says why a request cannot be relayed to the client g stands
// for, nil when it can.
func relayable(g *sdkcall.Client, modern bool, method string, size int) error {
	var what string
	var declared bool
	switch method {
	case string(mcp.MethodSamplingCreateMessage):
		what, declared = "sampling", g.Sampling
	case string(mcp.MethodElicitationCreate):
		what, declared = "elicitation", g.Elicitation
	case string(mcp.MethodListRoots):
		what, declared = "roots", g.Roots
	default:
		return &sdkcall.RelayError{Code: mcp.METHOD_NOT_FOUND, Message: fmt.Sprintf(
			"toolscript relays sampling/createMessage, elicitation/create and roots/list to its client, not %s", echo(method))}
	}
	switch {
	case modern && declared:
		return &sdkcall.RelayError{Code: mcp.METHOD_NOT_FOUND, Message: fmt.Sprintf(
			"the client of this call is not asked for %s here: under MCP %s an upstream's request reaches it as the call's input_required result, which only a real run (not a dry run or a plan run) pauses for",
			what, mcp.ProtocolVersion20260728)}
	case !declared:
		return &sdkcall.RelayError{Code: mcp.METHOD_NOT_FOUND, Message: fmt.Sprintf(
			"the client of this call does not support %s (it did not declare the %s capability)", what, what)}
	case size > maxRelayBytes:
		return refuse(fmt.Sprintf("the %s request is %d bytes, more than the %d toolscript relays", method, size, maxRelayBytes))
	}
	return nil
}

func refuse(message string) error {
	return &sdkcall.RelayError{Code: mcp.INVALID_REQUEST, Message: message}
}

// relayInput is the Request of the gateway g of an execution r that may
// pause, for the call whose context is ctx. A client on 2026-07-28 gets an
// upstream server's sampling, elicitation or roots request as the
// input_required result of the call that holds r (pausedForInput), and its
// retry brings the answer back (runScript); what it did not declare in its
// request's _meta is refused, as are more than maxRelayed requests of one
// call or params over maxRelayBytes. Any other client keeps g's Request:
// the request goes to it on the call's connection.
func (s *Server) relayInput(ctx, rctx context.Context, r *running, g *sdkcall.Client) func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	if !server.IsModernRequest(ctx) {
		return g.Request
	}
	var caps mcp.ClientCapabilities
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.ClientCapabilities != nil {
		caps = *info.ClientCapabilities
	}
	declared := &sdkcall.Client{Sampling: caps.Sampling != nil, Elicitation: caps.Elicitation != nil, Roots: caps.Roots != nil}
	var relayed atomic.Int64
	return func(qctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		if err := relayable(declared, false, method, len(params)); err != nil {
			return nil, err
		}
		n := relayed.Add(1)
		if n > maxRelayed {
			return nil, refuse(fmt.Sprintf("toolscript relays at most %d requests of upstream servers to the client of one execute_script call", maxRelayed))
		}
		var req mcp.InputRequest
		envelope, _ := json.Marshal(map[string]any{"method": method, "params": params})
		if err := req.UnmarshalJSON(envelope); err != nil {
			return nil, refuse(fmt.Sprintf("the %s request cannot be read: %v", method, err))
		}
		in := &upstreamInput{id: fmt.Sprintf("upstream-%d", n), request: req, answer: make(chan json.RawMessage, 1)}
		select {
		case r.events <- event{input: in}:
		case <-qctx.Done():
			return nil, qctx.Err()
		case <-rctx.Done():
			return nil, rctx.Err()
		}
		t := time.NewTimer(s.cfg.approvalTimeout())
		defer t.Stop()
		select {
		case answer := <-in.answer:
			return answer, nil
		case <-t.C:
			return nil, refuse(fmt.Sprintf("the client did not answer the %s request within %s", method, s.cfg.approvalTimeout()))
		case <-qctx.Done():
			return nil, qctx.Err()
		case <-rctx.Done():
			return nil, rctx.Err()
		}
	}
}
