package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolscript/toolscript/host/contract/sdkcall"
)

// Requests of the server to the client (sampling, elicitation, roots), made
// on behalf of a call: each goes out on the call's connection, ahead of the
// call's response, and the client's answer (a message with a result or an
// error and no method) comes back through the same transport and scope,
// found here by its id.

// outbound is a request of the server's, as written.
type outbound struct {
	JSONRPC string `json:"jsonrpc"`
	ID      string `json:"id"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
}

// relays are the requests of the server awaiting the client's answer.
type relays struct {
	next    atomic.Int64
	mu      sync.Mutex
	waiting map[tableKey]chan *envelope
}

// request sends a request to the client of c and returns its answer's
// result; an error answer is returned as an error. It gives up when ctx
// ends (the call was cancelled, say).
func (s *Server) request(ctx context.Context, c *call, method string, params any) (json.RawMessage, error) {
	id := "ts-" + strconv.FormatInt(s.relays.next.Add(1), 10)
	key := tableKey{c.key.scope, strconv.Quote(id)}
	answer := make(chan *envelope, 1)
	s.relays.mu.Lock()
	if s.relays.waiting == nil {
		s.relays.waiting = map[tableKey]chan *envelope{}
	}
	s.relays.waiting[key] = answer
	s.relays.mu.Unlock()
	defer func() {
		s.relays.mu.Lock()
		delete(s.relays.waiting, key)
		s.relays.mu.Unlock()
	}()
	if err := c.conn.write(outbound{JSONRPC: mcp.JSONRPC_VERSION, ID: id, Method: method, Params: params}); err != nil {
		return nil, fmt.Errorf("sending %s to the client: %w", method, err)
	}
	select {
	case m := <-answer:
		if m.Error != nil && string(m.Error) != "null" {
			var e mcp.JSONRPCErrorDetails
			_ = json.Unmarshal(m.Error, &e)
			return nil, &sdkcall.RelayError{Code: e.Code, Message: fmt.Sprintf("the client answered %s with error %d: %s", method, e.Code, e.Message)}
		}
		return m.Result, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// deliver hands a client's answer to the request of the server's it
// answers, in the scope it came from; an answer to nothing is ignored.
func (s *Server) deliver(scope string, m *envelope) {
	key, ok := idKey(m.ID)
	if !ok {
		return
	}
	s.relays.mu.Lock()
	answer := s.relays.waiting[tableKey{scope, key}]
	delete(s.relays.waiting, tableKey{scope, key})
	s.relays.mu.Unlock()
	if answer != nil {
		answer <- m
	}
}
