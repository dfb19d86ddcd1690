package sdk

import (
	"testing"

	"github.com/toolscript/toolscript/host/contract/effects/trace"
	"github.com/toolscript/toolscript/host/contract/sdkcall"
)

// TestTraceKnowsTheFailures: a trace accepts exactly the failure kinds of
// a call's response.
func TestTraceKnowsTheFailures(t *testing.T) {
	if trace.MaxFail != int(sdkcall.Limit) {
		t.Errorf("trace.MaxFail is %d, the last failure kind is %d", trace.MaxFail, sdkcall.Limit)
	}
}

// TestRecordingRoundTrip: what a recording keeps of a response is what
// its replay gives back.
func TestRecordingRoundTrip(t *testing.T) {
	f := &function{name: "sdk.t.f"}
	for _, in := range []*sdkcall.Response{
		{Status: 200, Headers: map[string]string{"content-type": "application/json"}, JSON: []byte(`{"a":1}`)},
		{Status: 200, Text: []byte{0xff, 0}},
		{Fail: sdkcall.Upstream, Status: 404, Message: "sdk.t.f: HTTP 404 Not Found", JSON: []byte(`{"error":"x"}`)},
		{Fail: sdkcall.Upstream, Message: "sdk.t.f: tool failed", Content: []byte(`[{"type":"text","text":"no"}]`)},
		{Status: 201, JSON: []byte(`{"dry_run":true}`), DryRun: true},
	} {
		out := replayed(f, recording(in))
		if out.Fail != in.Fail || out.Status != in.Status || out.Message != in.Message || out.DryRun != in.DryRun ||
			string(out.JSON) != string(in.JSON) || string(out.Text) != string(in.Text) || string(out.Content) != string(in.Content) ||
			len(out.Headers) != len(in.Headers) {
			t.Errorf("%+v came back as %+v", in, out)
		}
	}
	if out := replayed(f, &trace.Response{Unanswered: true}); out.Fail != sdkcall.Upstream {
		t.Errorf("an unanswered call: %+v", out)
	}
}
