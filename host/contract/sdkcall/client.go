package sdkcall

import (
	"context"
	"encoding/json"
)

// Client is the MCP client an execution runs for, when it runs under
// serve: what the upstream MCP servers a script calls may reach through
// toolscript. The context of an execution's sdk calls carries it
// (WithClient); host/sdk/upstream reads it (ClientFrom) to forward an upstream
// tool's progress and to relay an upstream's requests. Each field may be
// nil: that part is not relayed.
type Client struct {
	// Progress reports the progress of an upstream tool call as progress
	// of the client's call. name is the function the script called
	// ("sdk.ev.long_op"); progress, total and message are the upstream's.
	// Nil when the client asked for no progress.
	Progress func(name string, progress float64, total *float64, message string)
	// Request sends a request of an upstream's (sampling/createMessage,
	// elicitation/create, roots/list) to the client, with the upstream's
	// params, and returns the client's result; an error answer is an
	// error. It returns when ctx ends.
	Request func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)
	// Sampling, Elicitation and Roots say which of those requests the
	// client declared it can answer.
	Sampling, Elicitation, Roots bool
	// Owner names who the client is: the hosted user and MCP session the
	// execution runs for ("" over stdio, where there is one client).
	// Executions of one Owner are the same person's; a request of an
	// upstream that nothing ties to one call may reach an execution only
	// on a connection every call of which was made for one Owner.
	Owner string
}

type clientKey struct{}

// WithClient returns ctx carrying c.
func WithClient(ctx context.Context, c *Client) context.Context {
	return context.WithValue(ctx, clientKey{}, c)
}

// ClientFrom returns the client ctx carries, nil when none does (a script
// run by `toolscript run`, a call made in-process).
func ClientFrom(ctx context.Context) *Client {
	c, _ := ctx.Value(clientKey{}).(*Client)
	return c
}

// RelayError is a JSON-RPC error to answer an upstream's request with: the
// client's own error answer, or toolscript's refusal to relay it.
type RelayError struct {
	Code    int
	Message string
}

func (e *RelayError) Error() string { return e.Message }
