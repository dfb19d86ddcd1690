package effects

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/contract/effects/trace"
)

// bodyPairs are request bodies a plan or a trace holds (first) and one a
// script sends later (second): the same bytes, or not.
var bodyPairs = [][2]string{
	{`{"cmd":"ls"}`, `{"cmd":"ls"}`},
	{`{"cmd":"ls"}`, `{"cmd":"rm -rf /","cmd":"ls"}`},
	{`{"cmd":"rm -rf /","cmd":"ls"}`, `{"cmd":"ls"}`},
	{`{"cmd":"ls"}`, `{"cmd": "ls"}`},
	{`{"b":1,"a":2}`, `{"a":2,"b":1}`},
	{`{"y":"\u003c"}`, `{"y":"<"}`},
	{`{"y":"\u0041"}`, `{"y":"A"}`},
	{`{"n":1.0}`, `{"n":1}`},
	{`"quoted"`, `quoted`},
	{`[1,2]`, `[1,2]`},
	{`null`, `null`},
	{`plain text`, `plain text`},
	{"\xff\x00binary", "\xff\x00binary"},
	{"\xff\x00binary", "\xfe\x00binary"},
	{strings.Repeat("a", MaxBodyBytes+1), strings.Repeat("a", MaxBodyBytes+1)},
	{strings.Repeat("a", MaxBodyBytes+1), strings.Repeat("a", MaxBodyBytes) + "b"},
	{``, ``},
	{``, `{}`},
}

// checkBodyBinding says whether a plan made from a dry run that sent
// want (its result's JSON, indented when indent, as a person may have
// reformatted it) and a replay of a trace that recorded want hold a call
// that sends got. Both must hold it exactly when the bytes are the same.
func checkBodyBinding(t *testing.T, want, got []byte, indent bool) {
	t.Helper()
	call := func(body []byte) Effect {
		e := Effect{Op: OpCall, Function: "sdk.t.run", Method: "POST", URL: "http://h/run", Headers: map[string]string{"Content-Type": "text/plain"}}
		e.SetBody(body)
		return e
	}
	same := bytes.Equal(want, got)

	text, err := json.Marshal(map[string]any{"effects": []Effect{call(want)}})
	if err != nil {
		t.Fatal(err)
	}
	if indent {
		var buf bytes.Buffer
		if err := json.Indent(&buf, text, "", "\t"); err != nil {
			t.Fatal(err)
		}
		text = buf.Bytes()
	}
	p, err := ParsePlan(text)
	if err != nil {
		t.Fatalf("the dry run's own plan: %v", err)
	}
	run := NewPlan(p)
	if d := run.Decide(func() Effect { return call(got) }); (d == Proceed) != same {
		t.Errorf("a plan of body %q and a call with body %q: %v (%v)", want, got, d, run.Err())
	}

	var tr bytes.Buffer
	w, err := trace.NewWriter(&tr, trace.Header{Toolscript: "test"})
	if err != nil {
		t.Fatal(err)
	}
	rec := NewRecording(w)
	_, slot, _ := rec.Call(call(want))
	rec.Answer(slot, &trace.Response{Status: 200})
	if _, _, err := rec.End(nil, 0); err != nil {
		t.Fatal(err)
	}
	r, _, err := trace.NewReader(&tr, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _, diverged := NewReplay(r).Call(call(got))
	if (diverged == nil) != same {
		t.Errorf("a trace of body %q and a call with body %q: divergence %v", want, got, diverged)
	}
}

// A plan and a replay hold a call's body exactly: the same bytes, never
// other bytes that decode to the same JSON value.
func TestBodyBinding(t *testing.T) {
	for _, pair := range bodyPairs {
		for _, indent := range []bool{false, true} {
			checkBodyBinding(t, []byte(pair[0]), []byte(pair[1]), indent)
		}
	}
}

// An MCP tool gets its arguments' value: a plan holds a call whose
// arguments decode to the same value, in any key order.
func TestArgumentsBinding(t *testing.T) {
	for _, tt := range []struct {
		want, got string
		same      bool
	}{
		{`{"b":1,"a":[2,3]}`, `{"a":[2,3],"b":1}`, true},
		{`{"a":"<"}`, `{"a":"\u003c"}`, true},
		{`{"a":1}`, `{"a":2}`, false},
		{`{"a":1}`, `{"a":1.0}`, false},
		{`{"a":1}`, `{"a":1,"b":null}`, false},
	} {
		want, got := Effect{Op: OpCall, Function: "sdk.fs.write"}, Effect{Op: OpCall, Function: "sdk.fs.write"}
		want.SetArguments([]byte(tt.want))
		got.SetArguments([]byte(tt.got))
		if same := differs(want, got) == ""; same != tt.same {
			t.Errorf("arguments %s and %s: the same %v, want %v", tt.want, tt.got, same, tt.same)
		}
	}
}

// Two bodies a script sends are held the same by a plan and by a replay
// exactly when they are the same bytes.
func FuzzBodyBinding(f *testing.F) {
	for _, pair := range bodyPairs {
		if len(pair[0]) <= 64 { // large ones make minimizing slow; TestBodyBinding has them
			f.Add([]byte(pair[0]), []byte(pair[1]), false)
		}
	}
	f.Fuzz(func(t *testing.T, want, got []byte, indent bool) {
		checkBodyBinding(t, want, got, indent)
		checkBodyBinding(t, want, want, indent)
	})
}
