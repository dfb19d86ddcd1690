package luau

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"unicode/utf8"

	"github.com/tetratelabs/wazero/api"
)

// The sdk seen from the runtime. The guest knows nothing of APIs but the
// names in an SDKManifest: the shim builds the read-only sdk table from it
// once, in the instance every later one is restored from, and each function
// of that table hands its arguments to the host as one JSON text and gets
// one SDKResponse back. What an id means, how its arguments are checked and
// how the call is made belong to the SDKCaller (host/sdk).

// SDKManifest lists the functions of a script's sdk table.
type SDKManifest struct {
	APIs []SDKAPI `json:"apis"`
}

// SDKAPI is one source of functions: an OpenAPI spec or an MCP server. Its
// functions are sdk.<Name>.<function>.
type SDKAPI struct {
	Name      string        `json:"name"`
	Functions []SDKFunction `json:"functions"`
}

// SDKFunction is one function of an SDKAPI.
type SDKFunction struct {
	// Name is the Luau identifier under sdk.<api>.
	Name string `json:"name"`
	// ID is what the SDKCaller receives for a call of this function; unique
	// within a manifest.
	ID uint32 `json:"id"`
	// Flat makes it sdk.<Name> too (no other API has a function of that name).
	Flat bool `json:"flat,omitempty"`
	// Params and Required name the function's visible parameters (frozen
	// ones excluded) and those a call must give: lint checks literal
	// argument tables against them.
	Params   []string `json:"params,omitempty"`
	Required []string `json:"required,omitempty"`
	// Kind is "openapi" or "mcp": how lint reads the arguments (OpenAPI:
	// params, body; MCP: one table of arguments).
	Kind string `json:"kind,omitempty"`
}

// SDKCaller makes the sdk calls of one execution. Calls of one execution
// may be made concurrently (parallel).
type SDKCaller interface {
	// Call performs one call of function id. args is the JSON array of the
	// arguments the script passed, converted by the json.encode rules
	// (trailing nils dropped; nil in between is null). Call returns when
	// the response is complete, or at once when ctx ends (the execution's
	// deadline or cancellation): an abandoned request must not outlive it.
	Call(ctx context.Context, id uint32, args json.RawMessage) *SDKResponse
}

// SDKResponse is the outcome of one call as the script sees it.
type SDKResponse struct {
	// Fail says how the call failed; SDKOK for a response the script gets
	// as data, response.
	Fail SDKFailure
	// Message is the error message (Fail != SDKOK). For SDKUpstream it
	// starts with the function's name: "sdk.get_pet: HTTP 404 Not Found: ...".
	// It never holds a credential.
	Message string
	// Status is the HTTP status; 0 for a transport failure or an MCP tool.
	Status int
	// Headers are the response's headers, names in lower case (several
	// values of one header joined with ", ").
	Headers map[string]string
	// The body, in at most one of three forms: JSON (decoded by json.decode
	// rules), Text (a string, bytes preserved), or neither (nil).
	JSON json.RawMessage
	Text []byte
	// Content is an MCP error's content blocks (the error table's content).
	Content json.RawMessage
}

// SDKFailure classifies an sdk call's outcome.
type SDKFailure int

const (
	// SDKOK: the call succeeded; the script gets data, response.
	SDKOK SDKFailure = iota
	// SDKArgument: the arguments do not fit the function (unknown or
	// missing parameter, wrong type...); raised as a plain Lua error before
	// any request was made.
	SDKArgument
	// SDKUpstream: an HTTP error status, a transport failure or an MCP tool
	// error; raised as the error table {status, message, body, headers} (or
	// {message, content}), kind upstream when it escapes the script.
	SDKUpstream
	// SDKLimit: a budget of the execution (max_calls); kind limit.
	SDKLimit
)

// sdkCall is the host side of an sdk function: ts_host_sdk_call(L, id,
// args, len). It hands the arguments to the execution's SDKCaller under a
// context that carries the execution's deadline and cancellation, writes
// the response envelope into a buffer the guest allocates on L's stack
// (ts_sdk_buffer), and returns its length. A call that outlives the
// execution's deadline stops the execution, as tick does.
func sdkCall(ctx context.Context, mod api.Module, stack []uint64) {
	inst := instanceFrom(ctx)
	L, id := stack[0], uint32(stack[1])
	args := bytes.Clone(guestBytes(mod, stack[2], uint64(uint32(stack[3]))))

	resp := noSDK
	if inst.exec != nil && inst.exec.sdk != nil {
		resp = inst.exec.sdk.Call(ctx, id, args) // ctx carries the deadline
	}
	inst.checkStop()

	stack[0] = uint64(inst.writeSDKBuffer(ctx, mod, L, resp.envelope()))
}

// envelope lays the response out as the shim reads it (sdk.cpp, Envelope):
// seven little-endian 32-bit words (failure, status, body kind and the
// lengths of the message, headers, body and content), then those four. The
// headers are their count, then each name and value as a 32-bit length and
// its bytes (invalid UTF-8 replaced by U+FFFD).
func (r *SDKResponse) envelope() []byte {
	bodyKind, body := uint32(0), []byte(nil)
	switch {
	case r.JSON != nil:
		bodyKind, body = 1, r.JSON
	case r.Text != nil:
		bodyKind, body = 2, r.Text
	}
	headersSize := 0
	if len(r.Headers) > 0 {
		headersSize = 4
		for k, v := range r.Headers {
			headersSize += 8 + len(k) + len(v)
		}
	}
	const head = 7 * 4
	out := make([]byte, head, head+len(r.Message)+headersSize+len(body)+len(r.Content))
	out = append(out, r.Message...)
	if len(r.Headers) > 0 {
		out = binary.LittleEndian.AppendUint32(out, uint32(len(r.Headers)))
		for k, v := range r.Headers {
			out = appendText(out, k)
			out = appendText(out, v)
		}
	}
	headersLen := len(out) - head - len(r.Message)
	out = append(out, body...)
	out = append(out, r.Content...)
	for i, w := range [7]uint32{uint32(r.Fail), uint32(r.Status), bodyKind,
		uint32(len(r.Message)), uint32(headersLen), uint32(len(body)), uint32(len(r.Content))} {
		binary.LittleEndian.PutUint32(out[4*i:], w)
	}
	return out
}

// appendText appends s as a 32-bit length and its bytes, each byte of
// invalid UTF-8 replaced by U+FFFD (as json.Marshal does).
func appendText(out []byte, s string) []byte {
	if !utf8.ValidString(s) {
		valid := make([]byte, 0, len(s)+8)
		for _, r := range s {
			valid = utf8.AppendRune(valid, r)
		}
		s = string(valid)
	}
	out = binary.LittleEndian.AppendUint32(out, uint32(len(s)))
	return append(out, s...)
}
