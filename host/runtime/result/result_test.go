package result

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/contract/effects"
)

// TestFileTouchedBytes checks that bytes is present, 0 included, for every
// op but remove, and absent for remove (docs/result.md and the outputSchema).
func TestFileTouchedBytes(t *testing.T) {
	cases := []struct {
		file FileTouched
		want string
	}{
		{FileTouched{Name: "e.txt", Op: OpWrite}, `{"name":"e.txt","op":"write","bytes":0}`},
		{FileTouched{Name: "log.txt", Op: OpAppend}, `{"name":"log.txt","op":"append","bytes":0}`},
		{FileTouched{Name: "a.csv", Op: OpWrite, Bytes: 96}, `{"name":"a.csv","op":"write","bytes":96}`},
		{FileTouched{Name: "gone.txt", Op: OpRemove}, `{"name":"gone.txt","op":"remove"}`},
		{FileTouched{Name: "<&>.txt", Op: OpWrite, Bytes: 1}, `{"name":"<&>.txt","op":"write","bytes":1}`},
	}
	for _, c := range cases {
		res := Result{Value: json.RawMessage("null"), FilesTouched: []FileTouched{c.file}}
		want := `{"result":null,"logs":[],"files_touched":[` + c.want + `]}`
		if got := string(res.JSON()); got != want {
			t.Errorf("%+v:\n got %s\nwant %s", c.file, got, want)
		}
		// Through encoding/json too, as other callers may marshal it.
		b, err := json.Marshal(c.file)
		if err != nil {
			t.Fatal(err)
		}
		var back FileTouched
		if err := json.Unmarshal(b, &back); err != nil || back != c.file {
			t.Errorf("%s does not round-trip: %+v %v", b, back, err)
		}
	}
}

// TestJSONLeavesHTMLCharacters checks that <, > and & stay as they are in
// the result, the logs and the error message (JSON's doc comment).
func TestJSONLeavesHTMLCharacters(t *testing.T) {
	res := Result{Value: json.RawMessage(`"<x>"`), Logs: []string{"a & b"}}
	if got, want := string(res.JSON()), `{"result":"<x>","logs":["a & b"],"files_touched":[]}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	res = Result{Logs: []string{}, Error: &Error{Kind: Runtime, Message: "x < y"}}
	if got, want := string(res.JSON()), `{"result":null,"logs":[],"files_touched":[],"error":{"kind":"runtime","message":"x < y"}}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// TestBoundPlanUnused: past the size bound, a plan's unused entries are
// left out from the end and counted, before any effect applied is.
func TestBoundPlanUnused(t *testing.T) {
	r := &Result{Value: json.RawMessage("1"), Effects: []effects.Effect{{Op: effects.OpMkdir, Path: "applied"}}}
	for i := range 100 {
		r.PlanUnused = append(r.PlanUnused, effects.Effect{Op: effects.OpRemove, Path: fmt.Sprintf("unused/%03d", i)})
	}
	r.Bound(len(r.JSON()) - 500)
	if len(r.Effects) != 1 || r.PlanUnusedOmitted == 0 || len(r.PlanUnused)+r.PlanUnusedOmitted != 100 ||
		r.PlanUnused[0].Path != "unused/000" {
		t.Errorf("bound to %d effects, %d unused (+%d omitted)", len(r.Effects), len(r.PlanUnused), r.PlanUnusedOmitted)
	}
	if !strings.Contains(string(r.JSON()), `"plan_unused_omitted":`) {
		t.Errorf("the result does not say how many were left out: %s", r.JSON())
	}
}

// TestJSONIsWhatAnEncoderGives checks that JSON gives, byte for byte, what
// an encoder that leaves <, > and & alone gives for the result.
func TestJSONIsWhatAnEncoderGives(t *testing.T) {
	cases := []*Result{
		{Value: json.RawMessage("1")},
		{Value: json.RawMessage(`{ "a" : [1, 2,
			"<&>"] }`), Logs: []string{"x", "y & z"}},
		{Value: json.RawMessage("1"), Error: &Error{Kind: Runtime, Message: "boom <here>", Line: 3}},
		{FilesTouched: []FileTouched{{Name: "a.txt", Op: OpWrite, Bytes: 3}}, FilesOmitted: 2,
			Effects: []effects.Effect{{Op: effects.OpMkdir, Path: "d"}}, EffectsOmitted: 1},
		{Value: json.RawMessage("{")}, // not JSON: the internal error
	}
	for _, r := range cases {
		want, err := marshal(r)
		if err != nil {
			want = []byte(`{"result":null,"logs":[],"files_touched":[],"error":{"kind":"internal","message":"result is not valid JSON"}}`)
		}
		if got := r.JSON(); string(got) != string(want) {
			t.Errorf("%+v:\n got %s\nwant %s", r, got, want)
		}
	}
}

func BenchmarkJSON(b *testing.B) {
	r := &Result{Value: json.RawMessage("1")}
	b.ReportAllocs()
	for b.Loop() {
		r.JSON()
	}
}
