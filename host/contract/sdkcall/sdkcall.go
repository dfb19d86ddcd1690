// Package sdkcall is the boundary between the script runtime (host/runtime/luau)
// and what makes the sdk calls (host/sdk, host/sdk/upstream): the names a
// script's sdk table holds (Manifest), the interface a call goes through
// (Caller, DataCaller) and the outcome it brings back (Response, Failure).
// It holds types and limits only; the runtime lays a Response out in guest
// memory, the sdk builds and sends the requests.
package sdkcall

import (
	"context"
	"encoding/json"
)

// MaxNestingDepth is how deep a value a script takes may nest (the guest's
// json.decode limit): a result, a json value or an sdk response.
const MaxNestingDepth = 128

// DefaultMaxParallel is how many sdk calls one execution may have in flight
// at once by default ([sdk] max_parallel), and parallel's default limit.
const DefaultMaxParallel = 8

// Manifest lists the functions of a script's sdk table. The guest knows
// nothing of APIs but these names: each function hands its arguments to
// the host as one JSON text and gets one Response back. What an id means,
// how its arguments are checked and how the call is made belong to the
// Caller.
type Manifest struct {
	APIs []API `json:"apis"`
}

// API is one source of functions: an OpenAPI spec or an MCP server. Its
// functions are sdk.<Name>.<function>.
type API struct {
	Name      string     `json:"name"`
	Functions []Function `json:"functions"`
}

// Function is one function of an API.
type Function struct {
	// Name is the Luau identifier under sdk.<api>.
	Name string `json:"name"`
	// ID is what the Caller receives for a call of this function; unique
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

// Caller makes the sdk calls of one execution. Calls of one execution may
// be made concurrently (parallel).
type Caller interface {
	// Call performs one call of function id. args is the JSON array of the
	// arguments the script passed, converted by the json.encode rules
	// (trailing nils dropped; nil in between is null), except that a
	// string's bytes that are not valid UTF-8 are written as they are, not
	// as U+FFFD: a binary string can reach an upload intact. Call returns when
	// the response is complete, or at once when ctx ends (the execution's
	// deadline or cancellation): an abandoned request must not outlive it.
	// The caller calls the response's Release, when set, once it is done
	// with the response's bytes.
	Call(ctx context.Context, id uint32, args json.RawMessage) *Response
}

// Holder is a Caller that says how many bytes of the host memory budgets
// its calls hold now: responses read that the script has not taken yet
// (a parallel batch's, while a later call of the batch waits).
type Holder interface {
	Caller
	HostBytesHeld() int64
}

// DataCaller is a Caller that can spare the work of what a script that
// takes only a call's data would drop (`local pet = sdk.get_pet(...)`,
// `sdk.get_pet(...).name`): the runtime calls CallData for such a call.
type DataCaller interface {
	Caller
	// CallData is Call, except that a successful response's Headers may be
	// left nil. A failure's may not: its error table has them.
	CallData(ctx context.Context, id uint32, args json.RawMessage) *Response
}

// Send sends a call Begin decided on. It returns when the response is
// complete, or at once when ctx ends.
type Send func(ctx context.Context) *Response

// Beginner is a Caller whose calls are decided when the script makes them
// and sent later. The runtime begins every call in the script's order,
// including each call of a parallel batch, in the batch's order, before
// any of them is sent; only the sending is concurrent. So whatever a
// call's decision depends on (the count of calls, a dry run holding it, a
// plan or a trace it must match) sees the calls in an order the script
// alone determines.
type Beginner interface {
	Caller
	// Begin checks, counts and decides one call of function id (dataOnly:
	// as CallData). It returns the call's response when there is nothing
	// to send (an argument error, a call held or substituted), else the
	// function that sends it, which the runtime calls at most once (not at
	// all when the execution ends first).
	Begin(id uint32, args json.RawMessage, dataOnly bool) (*Response, Send)
}

// Response is the outcome of one call as the script sees it.
type Response struct {
	// Fail says how the call failed; OK for a response the script gets as
	// data, response.
	Fail Failure
	// Message is the error message (Fail != OK). For Upstream it starts
	// with the function's name in its API's table: "sdk.pets.get_pet: HTTP 404 Not
	// Found: ...".
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
	// levels fails the call as an upstream error, "sdk.<api>.<name>: the response
	// is nested more than 128 levels deep", with the status, the headers and
	// the body as text, when the script takes its data), Text (a string,
	// bytes preserved), or neither (nil).
	JSON json.RawMessage
	Text []byte
	// Content is an MCP error's content blocks (the error table's content).
	Content json.RawMessage
	// DryRun marks a response a dry run made up instead of sending the
	// request: the script's response table has dry_run = true.
	DryRun bool
	// Release, when not nil, gives back the host memory budget the
	// response's bytes hold. The runtime calls it once (ReleaseOnce), when
	// the guest has its own copy of them or the response is dropped (the
	// execution ended first).
	Release func()
}

// ReleaseOnce calls r.Release, once: later calls do nothing.
func (r *Response) ReleaseOnce() {
	if r.Release != nil {
		f := r.Release
		r.Release = nil
		f()
	}
}

// Failure classifies an sdk call's outcome.
type Failure int

const (
	// OK: the call succeeded; the script gets data, response.
	OK Failure = iota
	// Argument: the arguments do not fit the function (unknown or missing
	// parameter, wrong type...); raised as a plain Lua error before any
	// request was made.
	Argument
	// Upstream: an HTTP error status, a transport failure or an MCP tool
	// error; raised as the error table {status, message, body, headers} (or
	// {message, content}), kind upstream when it escapes the script.
	Upstream
	// Limit: a budget of the execution (max_calls); kind limit.
	Limit
)
