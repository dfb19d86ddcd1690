package luau

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"unicode/utf8"

	"github.com/tetratelabs/wazero"
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
	// (trailing nils dropped; nil in between is null), except that a
	// string's bytes that are not valid UTF-8 are written as they are, not
	// as U+FFFD: a binary string can reach an upload intact. Call returns when
	// the response is complete, or at once when ctx ends (the execution's
	// deadline or cancellation): an abandoned request must not outlive it.
	// The caller calls the response's Release, when set, once it is done
	// with the response's bytes.
	Call(ctx context.Context, id uint32, args json.RawMessage) *SDKResponse
}

// SDKDataCaller is an SDKCaller that can spare the work of what a script
// that takes only a call's data would drop (`local pet = sdk.get_pet(...)`,
// `sdk.get_pet(...).name`): the runtime calls CallData for such a call.
type SDKDataCaller interface {
	SDKCaller
	// CallData is Call, except that a successful response's Headers may be
	// left nil. A failure's may not: its error table has them.
	CallData(ctx context.Context, id uint32, args json.RawMessage) *SDKResponse
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
	// rules; text that does not parse reaches the script as a string, as
	// Text would; a successful response nested more than MaxNestingDepth
	// levels fails the call as an upstream error, "sdk.<name>: the response
	// is nested more than 128 levels deep", with the status, the headers and
	// the body as text, when the script takes its data), Text (a string,
	// bytes preserved), or neither (nil).
	JSON json.RawMessage
	Text []byte
	// Content is an MCP error's content blocks (the error table's content).
	Content json.RawMessage
	// Release, when not nil, gives back the host memory budget the
	// response's bytes hold. The runtime calls it once, when the guest has
	// its own copy of them or the response is dropped (the execution
	// ended first).
	Release func()
}

// release calls r.Release, once.
func (r *SDKResponse) release() {
	if r.Release != nil {
		f := r.Release
		r.Release = nil
		f()
	}
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
// args, len), id with sdkDataOnly set when the script takes only the data
// (then an SDKDataCaller's CallData makes the call). It hands the
// arguments to the execution's SDKCaller under a context that carries the
// execution's deadline and cancellation, and writes the response envelope
// over the shim's call buffer, which the
// arguments are in: the 32-bit word before them says how many bytes the
// buffer holds (sdk.cpp, callText). It returns the envelope's length with
// envelopeInPlace set; an envelope that does not fit goes into a buffer the
// guest allocates on L's stack (ts_sdk_buffer), and its length is returned
// alone. A call that outlives the execution's deadline stops the
// execution, as tick does.
func sdkCall(ctx context.Context, mod api.Module, L, id, argsPtr, argsLen uint32) uint32 {
	inst := instanceFrom(ctx)
	dataOnly := id&sdkDataOnly != 0
	id &^= sdkDataOnly
	mem := mod.Memory()
	args := bytes.Clone(view(mem, "sdk arguments", argsPtr, argsLen))

	resp := noSDK
	if inst.exec != nil && inst.exec.sdk != nil { // ctx carries the deadline
		if data, ok := inst.exec.sdk.(SDKDataCaller); ok && dataOnly {
			resp = data.CallData(ctx, id, args)
		} else {
			resp = inst.exec.sdk.Call(ctx, id, args)
		}
	}
	defer resp.release() // the bytes are the guest's below, or dropped
	inst.checkStopAfterCall(ctx)

	size := resp.envelopeSize()
	if argsPtr >= 4 && uint64(size) <= uint64(read32(mem, "sdk call buffer size", argsPtr-4)) {
		resp.writeEnvelope(view(mem, "sdk call buffer", argsPtr-4, uint32(size)))
		return uint32(size) | envelopeInPlace
	}
	return inst.writeSDKBuffer(ctx, mod, L, size, resp.writeEnvelope)
}

// exportSDK registers the host function of the sdk's calls.
func exportSDK(b wazero.HostModuleBuilder) {
	exportIIIII(b, "sdk_call", sdkCall)
}

// writeEnvelope lays r's envelope out in buf, which is exactly its size:
// straight into guest memory, without a copy on the host.
func (r *SDKResponse) writeEnvelope(buf []byte) {
	if out := r.appendEnvelope(buf[:0]); len(out) != len(buf) || (len(buf) > 0 && &out[0] != &buf[0]) {
		panic(errors.New("luau: sdk envelope size mismatch"))
	}
}

// envelope lays the response out as the shim reads it (abi.h,
// TS_SDK_ENVELOPE_HEADER): seven little-endian 32-bit words (failure, status, body kind and the
// lengths of the message, headers, body and content), then those four. The
// headers are their count, then each name and value as a 32-bit length and
// its bytes (invalid UTF-8 replaced by U+FFFD).
func (r *SDKResponse) envelope() []byte {
	return r.appendEnvelope(make([]byte, 0, r.envelopeSize()))
}

// envelopeSize is the length of r's envelope.
func (r *SDKResponse) envelopeSize() int {
	size := envelopeHeader + len(r.Message) + len(r.body()) + len(r.Content)
	if len(r.Headers) > 0 {
		size += 4
		for k, v := range r.Headers {
			size += 8 + textLen(k) + textLen(v)
		}
	}
	return size
}

// body is the body and its kind: bodyNone, bodyJSON or bodyText.
func (r *SDKResponse) body() []byte {
	b, _ := r.bodyKind()
	return b
}

func (r *SDKResponse) bodyKind() ([]byte, uint32) {
	switch {
	case r.JSON != nil:
		return r.JSON, bodyJSON
	case r.Text != nil:
		return r.Text, bodyText
	}
	return nil, bodyNone
}

// appendEnvelope appends r's envelope to out.
func (r *SDKResponse) appendEnvelope(out []byte) []byte {
	body, bodyKind := r.bodyKind()
	start := len(out)
	out = append(out, make([]byte, envelopeHeader)...)
	out = append(out, r.Message...)
	if len(r.Headers) > 0 {
		out = binary.LittleEndian.AppendUint32(out, uint32(len(r.Headers)))
		for k, v := range r.Headers {
			out = appendText(out, k)
			out = appendText(out, v)
		}
	}
	headersLen := len(out) - start - envelopeHeader - len(r.Message)
	out = append(out, body...)
	out = append(out, r.Content...)
	for i, w := range [7]uint32{uint32(r.Fail), uint32(r.Status), bodyKind,
		uint32(len(r.Message)), uint32(headersLen), uint32(len(body)), uint32(len(r.Content))} {
		binary.LittleEndian.PutUint32(out[start+4*i:], w)
	}
	return out
}

// textLen is the length of s as appendText writes it.
func textLen(s string) int {
	if utf8.ValidString(s) {
		return len(s)
	}
	n := 0
	for _, r := range s {
		n += utf8.RuneLen(r)
	}
	return n
}

// appendText appends s as a 32-bit length and its bytes, each byte of
// invalid UTF-8 replaced by U+FFFD (as json.Marshal does).
func appendText(out []byte, s string) []byte {
	n := textLen(s)
	out = binary.LittleEndian.AppendUint32(out, uint32(n))
	if n == len(s) { // valid: each invalid byte would have become three
		return append(out, s...)
	}
	for _, r := range s {
		out = utf8.AppendRune(out, r)
	}
	return out
}
