package sdk

import (
	"context"
	"encoding/json"

	"github.com/toolscript/toolscript/host/contract/effects/trace"
	"github.com/toolscript/toolscript/host/contract/sdkcall"
)

// The sdk's side of record and replay (host/contract/effects): every call, safe or
// unsafe, passes the effects layer when the session records or replays,
// in the order Begin sees calls (the script's order, a parallel batch's
// included). Its request is described as a dry run's effect (no
// credential, frozen values by name). Recording, the call is sent as
// usual and the response the script gets (redacted) is recorded in the
// call's place (in a dry run or a plan run, the response that stands for
// a call held or stopped); replaying, the recorded response is the call's
// and nothing is sent.

// traced begins a call of f when the session records or replays.
func (s *Session) traced(f *function, k functionKind, args json.RawMessage, send sdkcall.Send) (*sdkcall.Response, sdkcall.Send) {
	recorded, slot, diverged := s.fx.Call(k.effect(s, f, args, nil))
	switch {
	case diverged != nil:
		return &sdkcall.Response{Fail: sdkcall.Upstream, Message: f.name + ": replay: " + diverged.Error()}, nil
	case recorded != nil:
		out := replayed(f, recorded)
		// A trace is untrusted: a response no real call could have had
		// under this configuration (its headers counted as a real
		// response's are) is the same limit error.
		if n := replayedBytes(out); n > s.c.cfg.MaxResponseBytes {
			return s.tooLarge(f), nil
		}
		return out, nil
	}
	// A dry run or a plan run that records decides the call as one that
	// does not: what it held or stopped is recorded as the script got it.
	if out := s.held(f, k, args); out != nil {
		s.fx.Answer(slot, recording(out))
		return out, nil
	}
	return nil, func(ctx context.Context) *sdkcall.Response {
		out := send(ctx)
		s.fx.Answer(slot, recording(out))
		return out
	}
}

// replayedBytes is what a replayed response counts against
// max_response_bytes: its headers as they would have been sent
// (headerBytes), its body and its message.
func replayedBytes(out *sdkcall.Response) int64 {
	n := int64(len(out.JSON) + len(out.Text) + len(out.Content) + len(out.Message))
	for k, v := range out.Headers {
		n += int64(len(k) + len(v) + 4)
	}
	return n
}

// recording is what a trace keeps of a response.
func recording(out *sdkcall.Response) *trace.Response {
	return &trace.Response{Fail: int(out.Fail), Message: out.Message, Status: out.Status, Headers: out.Headers,
		JSON: trace.Bytes(out.JSON), Text: trace.Bytes(out.Text), Content: trace.Bytes(out.Content), DryRun: out.DryRun}
}

// replayed is the response a trace recorded for a call of f.
func replayed(f *function, r *trace.Response) *sdkcall.Response {
	if r.Unanswered {
		return &sdkcall.Response{Fail: sdkcall.Upstream, Message: f.name + ": cancelled (the recorded execution ended before the response)"}
	}
	out := &sdkcall.Response{Fail: sdkcall.Failure(r.Fail), Message: r.Message, Status: r.Status, Headers: r.Headers, DryRun: r.DryRun}
	if len(r.JSON) > 0 {
		out.JSON = json.RawMessage(r.JSON)
	}
	if len(r.Text) > 0 {
		out.Text = []byte(r.Text)
	}
	if len(r.Content) > 0 {
		out.Content = json.RawMessage(r.Content)
	}
	return out
}
