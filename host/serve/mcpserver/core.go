package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolscript/toolscript/host/contract/redact"
	"github.com/toolscript/toolscript/host/serve/accesslog"
	"github.com/toolscript/toolscript/host/serve/auth"
)

// The core: what both transports share. A transport frames messages (lines,
// request bodies) and hands each one to the core, decoded once into an
// envelope, with the scope its request ids live in and the connection its
// answers go to. The core keeps the request table (table.go), answers what
// it must itself (unusable ids, numbers out of range) and hands the rest to
// mcp-go's method dispatcher (server.MCPServer.HandleMessage), writing each
// response to the connection unless the client cancelled its request.

// conn is where the core writes the messages of one request: its
// notifications (progress), then its response. The stdio transport's is
// the standard output, one line per message; the HTTP transport's is the
// POST's response.
type conn interface {
	// write writes one message. Writes to one conn are serialised.
	write(msg any) error
}

// encodeMessage is msg as every conn writes it: JSON, with the
// configuration's secrets redacted by r.
func encodeMessage(msg any, r *redact.Redactor) ([]byte, error) {
	b, err := json.Marshal(msg)
	if err != nil {
		return nil, fmt.Errorf("encoding a message: %w", err)
	}
	return r.Message(b), nil
}

// envelope is a JSON-RPC message decoded once: the members every message
// may have, with params kept as they were sent.
type envelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// isResponse tells whether m is a client's response (to a request the
// server sent): no method, and a result or an error.
func (m *envelope) isResponse() bool {
	return m.Method == "" && (m.Result != nil || m.Error != nil)
}

// call is one request the core is handling. It reaches the handlers
// through the context (callFrom).
type call struct {
	key    tableKey
	method string
	id     json.RawMessage // as the client sent it
	raw    json.RawMessage // the whole message, for mcp-go
	user   auth.User
	conn   conn
	ctx    context.Context
	cancel context.CancelFunc
	// cancelled is set, under the table's lock, by the client's
	// notifications/cancelled: the response is dropped.
	cancelled bool
	// unknownURI is the URI of a resources/read the server has no
	// resource for: its error is worded in the protocol's terms.
	unknownURI string
	// peer is what the client declared at initialize, nil when unknown
	// (gateway.go).
	peer *peer
	// unhold, when set, gives back the bytes its response holds in the
	// host's budgets (holdResponse), once it is written.
	unhold func()
}

type callKey struct{}

// callFrom returns the call a handler's context belongs to, nil for a
// call made in-process.
func callFrom(ctx context.Context) *call {
	c, _ := ctx.Value(callKey{}).(*call)
	return c
}

// notify writes a notification of the call ahead of its response.
func (c *call) notify(method string, params any) error {
	return c.conn.write(notification{JSONRPC: mcp.JSONRPC_VERSION, Method: method, Params: params})
}

// notification is a JSON-RPC notification the server sends.
type notification struct {
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
}

// maxEchoBytes bounds the part of a client's value (a URI, a number) that
// an error message repeats.
const maxEchoBytes = 1024

// incoming is one message a transport read, for receive.
type incoming struct {
	ctx   context.Context // the base of the call's context
	scope string          // the scope of its request ids
	user  auth.User
	msg   *envelope
	raw   json.RawMessage
	conn  conn
	// done stops receive's wait for room in the table (stdio's bound).
	done <-chan struct{}
}

// receive handles a message that decoded as an envelope. It returns the
// call to run (with run) for a request mcp-go is to answer; nil when the
// message needs no answer or the core answered it. A notification is
// handled before it returns.
func (s *Server) receive(in incoming) *call {
	m := in.msg
	switch {
	case m.isResponse():
		s.deliver(in.scope, m) // to a request of the server's (relay.go)
		return nil
	case m.ID == nil:
		s.notification(in)
		return nil
	}
	key, ok := idKey(m.ID)
	if !ok {
		what := jsonType(m.ID)
		if what == "a number" {
			what = "the number " + echo(string(m.ID)) + " (out of range)"
		}
		s.writeError(in.conn, json.RawMessage("null"), mcp.INVALID_REQUEST,
			"Invalid Request: the id must be a string or an integer, not "+what)
		return nil
	}
	if m.Method == "" {
		// Neither a request nor a response: mcp-go answers it.
		s.answer(in.conn, s.mcp.HandleMessage(in.ctx, in.raw))
		return nil
	}
	c := &call{key: tableKey{in.scope, key}, method: m.Method, id: m.ID, raw: in.raw, user: in.user, conn: in.conn,
		peer: peerFrom(in.ctx)}
	if m.Method == string(mcp.MethodInitialize) {
		c.peer.declare(m.Params)
	}
	if m.Method == string(mcp.MethodResourcesRead) {
		var p struct {
			URI string `json:"uri"`
		}
		if json.Unmarshal(m.Params, &p) == nil && !s.isDocURI(p.URI) {
			c.unknownURI = p.URI
		}
	}
	c.ctx, c.cancel = context.WithCancel(context.WithValue(in.ctx, callKey{}, c))
	if !s.table.add(c, in.done) {
		c.cancel()
		return nil // shutting down
	}
	if number, ok := outOfRange(m.Params); ok {
		s.outOfRange(c, m, number)
		return nil
	}
	return c
}

// notification handles a notification: a cancellation reaches the table,
// anything else mcp-go (notifications/initialized, say).
func (s *Server) notification(in incoming) {
	if in.msg.Method == string(mcp.MethodNotificationCancelled) {
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		if json.Unmarshal(in.msg.Params, &p) == nil {
			if key, ok := idKey(p.RequestID); ok {
				s.table.cancel(tableKey{in.scope, key})
			}
		}
		return
	}
	s.answer(in.conn, s.mcp.HandleMessage(in.ctx, in.raw))
}

// run has mcp-go answer a call received, and writes the response unless
// the client cancelled the call.
func (s *Server) run(c *call) {
	defer c.cancel()
	var resp mcp.JSONRPCMessage
	if c.ctx.Err() == nil { // not cancelled before it started
		resp = s.mcp.HandleMessage(c.ctx, c.raw)
	}
	if e, ok := resp.(mcp.JSONRPCError); ok && c.unknownURI != "" {
		resp = resourceNotFound(e, c.unknownURI)
	}
	s.respond(c, resp)
}

// respond writes the response of c, unless its request was cancelled, and
// forgets it.
func (s *Server) respond(c *call, resp any) {
	if c.unhold != nil {
		defer c.unhold()
	}
	if !s.table.answer(c) && resp != nil {
		if err := c.conn.write(resp); err != nil {
			s.log.Printf("writing a response: %v", err)
		}
	}
	s.table.release()
}

// answer writes what mcp-go answered to a message that is not a call.
func (s *Server) answer(w conn, resp mcp.JSONRPCMessage) {
	if resp == nil {
		return
	}
	if err := w.write(resp); err != nil {
		s.log.Printf("writing a response: %v", err)
	}
}

// writeError writes a JSON-RPC error response the core makes itself.
func (s *Server) writeError(w conn, id json.RawMessage, code int, message string) {
	s.answer(w, rpcError(id, code, message, nil))
}

func rpcError(id json.RawMessage, code int, message string, data any) mcp.JSONRPCError {
	return mcp.JSONRPCError{
		JSONRPC: mcp.JSONRPC_VERSION,
		ID:      mcp.NewRequestId(id),
		Error:   mcp.JSONRPCErrorDetails{Code: code, Message: message, Data: data},
	}
}

// resourceNotFound words the error of a resources/read of a URI the
// server does not have in the protocol's terms: "Resource not found", the
// URI in data. mcp-go's own error ("handler not found for resource URI")
// says nothing more and gets a pointer to resources/list; a resource
// handler's error (ErrResourceNotFound: an sdk:// URI naming no function,
// a bad cursor) keeps what it says after the URI. mcp-go chose the code for
// the request's protocol revision, and it is kept.
func resourceNotFound(e mcp.JSONRPCError, uri string) mcp.JSONRPCError {
	detail := "resources/list gives the resources of this server"
	if rest, ok := strings.CutPrefix(e.Error.Message, server.ErrResourceNotFound.Error()+": "); ok && rest != "" {
		detail = echo(rest)
	}
	e.Error.Message = "Resource not found: " + echo(uri) + " (" + detail + ")"
	e.Error.Data = nil
	if len(uri) <= maxEchoBytes {
		e.Error.Data = map[string]string{"uri": uri}
	}
	return e
}

// outOfRange answers a request holding a number out of float64's range,
// which mcp-go cannot decode (it would refuse it with a message about Go
// types): in execute_script's arguments it is the tool's to refuse, with
// an argument error the model can act on; anywhere else the request gets
// Invalid params.
func (s *Server) outOfRange(c *call, m *envelope, number string) {
	number = echo(number)
	if m.Method == string(mcp.MethodToolsCall) {
		if reason := outOfRangeArguments(m.Params, number); reason != "" {
			accesslog.FromContext(c.ctx).SetOutcome(outcomeInvalid, "")
			s.respond(c, mcp.NewJSONRPCResultResponse(mcp.NewRequestId(m.ID), &mcp.CallToolResult{
				Content: []mcp.Content{mcp.NewTextContent("Invalid arguments: " + reason)},
				IsError: true,
			}))
			return
		}
	}
	s.respond(c, rpcError(m.ID, mcp.INVALID_PARAMS,
		fmt.Sprintf("Invalid params: the number %s is out of range (numbers must be within ±1.8e308)", number), nil))
}

// outOfRangeArguments returns the argument error of an execute_script call
// whose numbers out of range are all in its arguments, "" otherwise.
func outOfRangeArguments(params json.RawMessage, number string) string {
	var p map[string]json.RawMessage
	var args map[string]json.RawMessage
	if json.Unmarshal(params, &p) != nil || json.Unmarshal(p["arguments"], &args) != nil {
		return ""
	}
	var name string
	if json.Unmarshal(p["name"], &name) != nil || name != ToolName {
		return ""
	}
	for member, value := range p {
		if _, bad := outOfRange(value); bad && member != "arguments" {
			return ""
		}
	}
	var bad []string
	for name, value := range args {
		if _, ok := outOfRange(value); ok {
			bad = append(bad, fmt.Sprintf("%q", echo(name)))
		}
	}
	if len(bad) == 0 {
		return ""
	}
	sort.Strings(bad)
	what := "argument " + bad[0] + " is"
	if len(bad) > 1 {
		what = "arguments " + strings.Join(bad, ", ") + " are"
	}
	return fmt.Sprintf("%s out of range: %s is not a number this server can read (numbers must be within ±1.8e308)", what, number)
}

// outOfRange returns the first number in the JSON text v that float64
// cannot hold. Only numbers with an exponent or many digits can overflow,
// and only those are parsed. A scan, because no JSON library says where
// such a number is without decoding the whole message into values first,
// and mcp-go, which does decode it, either refuses the message in words
// about Go types or ignores the number (FuzzOutOfRange checks the scan
// against encoding/json).
func outOfRange(v []byte) (string, bool) {
	var str jsonStrings
	for i := 0; i < len(v); i++ {
		c := v[i]
		if str.step(c) {
			continue
		}
		if c != '-' && (c < '0' || c > '9') {
			continue
		}
		j, exp := i, false
		for j < len(v) && strings.IndexByte("+-.0123456789eE", v[j]) >= 0 {
			exp = exp || v[j] == 'e' || v[j] == 'E'
			j++
		}
		if exp || j-i > 300 {
			if _, err := strconv.ParseFloat(string(v[i:j]), 64); errors.Is(err, strconv.ErrRange) {
				return string(v[i:j]), true
			}
		}
		i = j - 1
	}
	return "", false
}

// jsonStrings follows a scan of JSON text byte by byte: whether each
// byte belongs to a string, its quotes included.
type jsonStrings struct{ in, escaped bool }

// step takes the next byte and reports whether it belongs to a string.
func (s *jsonStrings) step(c byte) bool {
	switch {
	case s.in && s.escaped:
		s.escaped = false
	case s.in && c == '\\':
		s.escaped = true
	case s.in && c == '"':
		s.in = false
	case s.in:
	case c == '"':
		s.in = true
	default:
		return false
	}
	return true
}

// idKey writes a JSON-RPC id the way mcp-go writes it back (numbers go
// through float64), for the request table; false if it is not a string or
// a number float64 holds.
func idKey(id json.RawMessage) (string, bool) {
	var v any
	if json.Unmarshal(id, &v) != nil {
		return "", false
	}
	switch v.(type) {
	case string, float64:
		b, _ := json.Marshal(v)
		return string(b), true
	}
	return "", false
}

// echo cuts a client's value to at most maxEchoBytes for a message.
func echo(s string) string {
	if len(s) <= maxEchoBytes {
		return s
	}
	return s[:maxEchoBytes] + "…"
}
