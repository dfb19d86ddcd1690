package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// The stdio transport sees every message of the input before mcp-go does
// (it is the requestReader's lineHandler): it records requests and cancellations in
// its requests table, and answers itself what mcp-go would answer wrongly
// or not at all.

// maxPending is how many requests may await their response: reading the
// input waits beyond it. It bounds the requests table and the messages
// mcp-go queues (its own queue takes 10 × maxWorkers tool calls).
const maxPending = 256

// maxEchoBytes bounds the part of a client's value (a URI, a number) that
// an error message repeats.
const maxEchoBytes = 1024

// requestKeyHeader carries a tools/call request's id (idKey) from mcp-go's
// hook to the tool handler, which mcp-go does not give it. Headers of a
// stdio request are the server's own: nothing is read from the wire.
const requestKeyHeader = "X-Toolscript-Request-Key"

// invalidArgumentsKey replaces the arguments of a tools/call that mcp-go
// cannot decode (a number out of range): its value is the message of the
// argument error the handler reports.
const invalidArgumentsKey = "\x00toolscript: invalid arguments"

// inbound is what the server reads of a message.
type inbound struct {
	Method string          `json:"method"`
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Params any             `json:"params"`
}

// admit is requestReader's lineHandler.admit.
func (s *stdio) admit(line []byte) []byte {
	if len(bytes.TrimSpace(line)) == 0 {
		return nil // a blank line: nothing to answer
	}
	var msg inbound
	err := json.Unmarshal(line, &msg)
	tooLarge, isRange := outOfRangeNumber(err)
	if err != nil && !isRange {
		if msg.Method == "" {
			return line // not JSON, or not an object: mcp-go answers it
		}
	}
	if msg.Method == "" {
		return line // a response of the client: mcp-go's
	}
	if msg.ID == nil {
		if msg.Method == string(mcp.MethodNotificationCancelled) {
			if params, ok := msg.Params.(map[string]any); ok {
				s.requests.cancel(keyOf(params["requestId"]))
			}
		}
		return line // a notification: no response
	}
	key := idKey(msg.ID)
	if key == "" {
		// mcp-go takes a null id for a notification's, and answers nothing.
		what := jsonType(msg.ID)
		if what == "a number" {
			what = "the number " + echo(string(msg.ID)) + " (out of range)"
		}
		s.writeError(json.RawMessage("null"), mcp.INVALID_REQUEST,
			"Invalid Request: the id must be a string or an integer, not "+what)
		return nil
	}
	if len(msg.Result) > 0 && string(msg.Result) != "null" {
		return line // mcp-go takes it for a response, and answers nothing
	}
	unknownURI := ""
	if msg.Method == string(mcp.MethodResourcesRead) {
		if params, ok := msg.Params.(map[string]any); ok {
			if uri, ok := params["uri"].(string); ok && !s.isDocURI(uri) {
				unknownURI = uri
			}
		}
	}
	if !s.requests.add(key, unknownURI, s.done) {
		return nil // shutting down
	}
	if tooLarge != nil {
		rewritten, refusal := outOfRange(line, msg.Method, tooLarge)
		if refusal != "" {
			s.writeError(msg.ID, mcp.INVALID_PARAMS, refusal)
			return nil
		}
		return rewritten
	}
	return line
}

// outOfRangeNumber tells whether err, from decoding a request, is a number
// out of float64's range, and returns that error.
func outOfRangeNumber(err error) (*json.UnmarshalTypeError, bool) {
	var tooLarge *json.UnmarshalTypeError
	if errors.As(err, &tooLarge) && strings.HasPrefix(tooLarge.Value, "number ") {
		return tooLarge, true
	}
	return nil, false
}

// outOfRange handles a request holding a number out of range (mcp-go
// decodes numbers into float64 and refuses it with a message about Go
// types), the same on every transport: in a tools/call's arguments it is
// the tool's to refuse, so the request is rewritten for the handler to
// report an argument error (withInvalidArguments); anywhere else the
// request gets refusal, an Invalid params message.
func outOfRange(request []byte, method string, tooLarge *json.UnmarshalTypeError) (rewritten []byte, refusal string) {
	number := echo(strings.TrimPrefix(tooLarge.Value, "number "))
	if method == string(mcp.MethodToolsCall) {
		if rewritten := withInvalidArguments(request, number); rewritten != nil {
			return rewritten, ""
		}
	}
	return nil, fmt.Sprintf("Invalid params: the number %s is out of range (numbers must be within ±1.8e308)", number)
}

// withInvalidArguments returns the tools/call request line with its
// arguments replaced by an invalidArgumentsKey object naming the arguments
// that hold a number out of range, or nil if none does (the number is
// elsewhere in the request).
func withInvalidArguments(line []byte, number string) []byte {
	var msg map[string]json.RawMessage
	var params map[string]json.RawMessage
	var args map[string]json.RawMessage
	if json.Unmarshal(line, &msg) != nil || json.Unmarshal(msg["params"], &params) != nil ||
		json.Unmarshal(params["arguments"], &args) != nil {
		return nil
	}
	var bad []string
	for name, value := range args {
		var v any
		if json.Unmarshal(value, &v) != nil {
			bad = append(bad, fmt.Sprintf("%q", echo(name)))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	what := "argument " + bad[0] + " is"
	if len(bad) > 1 {
		what = "arguments " + strings.Join(bad, ", ") + " are"
	}
	reason := fmt.Sprintf("%s out of range: %s is not a number this server can read (numbers must be within ±1.8e308)", what, number)
	params["arguments"], _ = json.Marshal(map[string]string{invalidArgumentsKey: reason})
	msg["params"], _ = json.Marshal(params)
	out, err := json.Marshal(msg)
	var v any
	if err != nil || json.Unmarshal(out, &v) != nil {
		return nil // another number out of range, outside the arguments
	}
	return append(out, '\n')
}

// echo cuts a client's value to at most maxEchoBytes for a message.
func echo(s string) string {
	if len(s) <= maxEchoBytes {
		return s
	}
	return s[:maxEchoBytes] + "…"
}

// refuse is requestReader's lineHandler.refuse: a request too large to read
// gets an Invalid Request error with its id (null when none could be read),
// a notification nothing.
func (s *stdio) refuse(id json.RawMessage, isRequest bool) {
	limit := s.MaxRequestBytes()
	s.log.Printf("refused a message of more than %d bytes", limit)
	if !isRequest {
		return
	}
	if id == nil {
		id = json.RawMessage("null")
	} else if !s.requests.add(idKey(id), "", s.done) {
		return
	}
	s.writeError(id, mcp.INVALID_REQUEST, fmt.Sprintf("request too large: more than %d bytes (a script may be at most %d bytes)",
		limit, s.cfg.MaxScriptBytes))
}

// drain is requestReader's lineHandler.drain: at the end of the input, the
// requests already read run to their end (each within its own timeout) and
// are answered before mcp-go sees the end and stops. A signal (Serve's
// context) stops waiting.
func (s *stdio) drain() {
	if n := s.requests.len(); n > 0 {
		s.log.Printf("end of input: finishing %s", count(n, "request"))
	}
	s.requests.wait(s.done)
}

// writeError writes a JSON-RPC error response.
func (s *stdio) writeError(id json.RawMessage, code int, message string) {
	resp := rpcError{JSONRPC: mcp.JSONRPC_VERSION, ID: id}
	resp.Error.Code = code
	resp.Error.Message = message
	if err := s.out.writeJSON(resp); err != nil {
		s.log.Printf("writing a response: %v", err)
	}
}

// rpcError is a JSON-RPC error response with the request's id as it was sent.
type rpcError struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    any    `json:"data,omitempty"`
	} `json:"error"`
}

// resourceNotFound rewords mcp-go's error response to a resources/read of
// a URI the server does not have ("handler not found for resource URI")
// in the protocol's terms: "Resource not found", the URI in data. mcp-go
// chose the code for the request's protocol revision, and it is kept. A
// response that is not an error is returned as it is.
func resourceNotFound(response []byte, uri string) []byte {
	var in struct {
		ID    json.RawMessage `json:"id"`
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(response, &in) != nil || in.Error == nil {
		return response
	}
	out := rpcError{JSONRPC: mcp.JSONRPC_VERSION, ID: in.ID}
	out.Error.Code = in.Error.Code
	out.Error.Message = "Resource not found: " + echo(uri) + " (resources/list gives the resources of this server)"
	if len(uri) <= maxEchoBytes {
		out.Error.Data = map[string]string{"uri": uri}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return response
	}
	return append(b, '\n')
}

// count writes n and a noun, plural unless n is 1.
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
