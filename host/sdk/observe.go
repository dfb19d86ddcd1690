package sdk

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/contract/sdkcall"
)

// Observed returns caller (a Session of c) reporting each call that
// reached an upstream to observe, with its source (the API's or MCP
// server's name) and its status: the HTTP status code of an API's
// response, "ok" or "tool_error" (isError) for an MCP tool's result, and
// "error" when no response came (a transport failure, a timeout, a
// cancellation). Calls refused before anything was sent (bad arguments,
// max_calls) and calls a dry run held are not reported. This is what the hosted mode's metrics
// count.
func (c *Client) Observed(caller sdkcall.Caller, observe func(source, status string)) sdkcall.Caller {
	return &observed{c: c, caller: caller, observe: observe}
}

var _ sdkcall.Holder = (*observed)(nil)

type observed struct {
	c       *Client
	caller  sdkcall.Caller
	observe func(source, status string)
}

func (o *observed) Call(ctx context.Context, id uint32, args json.RawMessage) *sdkcall.Response {
	return o.report(id, o.caller.Call(ctx, id, args))
}

// CallData is the caller's CallData when it has one (sdkcall.DataCaller).
func (o *observed) CallData(ctx context.Context, id uint32, args json.RawMessage) *sdkcall.Response {
	if data, ok := o.caller.(sdkcall.DataCaller); ok {
		return o.report(id, data.CallData(ctx, id, args))
	}
	return o.report(id, o.caller.Call(ctx, id, args))
}

// HostBytesHeld is the caller's when it says (sdkcall.Holder), else 0.
func (o *observed) HostBytesHeld() int64 {
	if h, ok := o.caller.(sdkcall.Holder); ok {
		return h.HostBytesHeld()
	}
	return 0
}

// Begin is the caller's Begin when it has one (sdkcall.Beginner), the
// sending reported as Call's is; else the call is only sent, later.
func (o *observed) Begin(id uint32, args json.RawMessage, dataOnly bool) (*sdkcall.Response, sdkcall.Send) {
	b, ok := o.caller.(sdkcall.Beginner)
	if !ok {
		return nil, func(ctx context.Context) *sdkcall.Response {
			if dataOnly {
				return o.CallData(ctx, id, args)
			}
			return o.Call(ctx, id, args)
		}
	}
	out, send := b.Begin(id, args, dataOnly)
	if out != nil {
		return o.report(id, out), nil
	}
	return nil, func(ctx context.Context) *sdkcall.Response { return o.report(id, send(ctx)) }
}

func (o *observed) report(id uint32, resp *sdkcall.Response) *sdkcall.Response {
	if int(id) >= len(o.c.funcs) || o.c.funcs[id] == nil {
		return resp
	}
	f := o.c.funcs[id]
	if status, ok := callStatus(f.fn.Kind, resp); ok {
		o.observe(f.api.api.Name, status)
	}
	return resp
}

// callStatus is the status Observed reports for resp, and whether the
// call reached the upstream at all.
func callStatus(kind catalog.Kind, resp *sdkcall.Response) (string, bool) {
	switch {
	case resp.Fail != sdkcall.OK && resp.Fail != sdkcall.Upstream, resp.DryRun:
		return "", false
	case resp.Status > 0:
		return strconv.Itoa(resp.Status), true
	case kind == catalog.MCP && resp.Fail == sdkcall.OK:
		return "ok", true
	case kind == catalog.MCP && resp.Content != nil:
		return "tool_error", true
	}
	return "error", true
}
