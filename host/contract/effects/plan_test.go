package effects

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"
)

const (
	shaA = "5b765170a497a8046b229320367e2491f815b78f283f256960ccb63451311f49"
	shaB = "0000000000000000000000000000000000000000000000000000000000000000"
)

func TestParsePlan(t *testing.T) {
	effectsJSON := `[{"op":"mkdir","path":"reports"},
		{"op":"write","path":"reports/w.csv","bytes":25,"sha256":"` + shaA + `","diff":"--- /dev/null\n"},
		{"op":"remove","path":"tmp/old.csv"},
		{"op":"call","function":"sdk.gh.issues_create","method":"POST","url":"https://x/i","headers":{"Content-Type":"application/json"},"body":{"title":"T"}}]`
	for _, text := range []string{
		effectsJSON,
		`{"result":null,"logs":[],"files_touched":[],"effects":` + effectsJSON + `}`,
		"\n  " + effectsJSON + "\n",
	} {
		p, err := ParsePlan([]byte(text))
		if err != nil {
			t.Fatalf("ParsePlan: %v", err)
		}
		if p.Len() != 4 || p.Entries()[3].Function != "sdk.gh.issues_create" || p.Entries()[3].Headers["Content-Type"] != "application/json" {
			t.Errorf("parsed %+v", p.Entries())
		}
	}
	if p, err := ParsePlan([]byte(`[]`)); err != nil || p.Len() != 0 {
		t.Errorf("an empty plan: %v, %v", p, err)
	}

	tooMany := "[" + strings.Repeat(`{"op":"mkdir","path":"d"},`, MaxEffects) + `{"op":"mkdir","path":"d"}]`
	for _, tt := range []struct{ text, want string }{
		{``, "the plan is empty"},
		{`nul`, "must be a dry run's JSON result"},
		{`{"result":1}`, `without "effects"`},
		{`{"effects":{}}`, `"effects" array`},
		{`{"effects":[],"effects_omitted":3}`, "the dry run's result left 3 effects out (past its bounds)"},
		{`{"effects":[`, "not valid JSON"},
		{`[{"op":"write","path":"a"}]`, `entry 1: a write effect needs "sha256"`},
		{`[{"op":"write","path":"a","sha256":"xyz"}]`, "64 hex digits"},
		{`[{"op":"mkdir","path":"a"},{"op":"chmod","path":"a"}]`, `entry 2: unknown op "chmod"`},
		{`[{"path":"a"}]`, `needs "op"`},
		{`[{"op":"remove"}]`, `a remove effect needs "path"`},
		{`[{"op":"rename","path":"a"}]`, `needs "to"`},
		{`[{"op":"call"}]`, `needs "function"`},
		{`[{"op":"call","function":"f","body_sha256":"nope"}]`, "body_sha256"},
		{`[{"op":"mkdir","path":"a","colour":"red"}]`, `unknown field "colour"`},
		{`[{"op":"mkdir","path":"a","bytes":"ten"}]`, "not an effect"},
		{`[17]`, "not an effect"},
		{`[{"op":"call","function":"f","body":{"a":1}} ]`, ""},
		{`[{"op":"call","function":"f","method":"POST","url":"u","body":{"a":1}}]`, `entry 1: a call of an HTTP operation needs "headers", the headers the script's parameters set ({} for none)`},
		{`[{"op":"call","function":"f","method":"POST","url":"u","headers":null}]`, `needs "headers"`},
		{`[{"op":"call","function":"f","method":"POST","url":"u","headers":{"X-A":1}}]`, "not an effect"},
		{`[{"op":"call","function":"f","method":"POST","url":"u","headers":{}}]`, ""},
		{strings.Repeat(" ", MaxPlanBytes+1), "more than 16777216"},
		{tooMany, "10001 entries, more than 10000"},
	} {
		_, err := ParsePlan([]byte(tt.text))
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("ParsePlan(%.60q): %v", tt.text, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("ParsePlan(%.60q) = %v, want an error with %q", tt.text, err, tt.want)
		}
	}
}

func TestPlanCheck(t *testing.T) {
	n := int64(25)
	write := Effect{Op: OpWrite, Path: "out/a.csv", Bytes: &n, SHA256: shaA}
	call := Effect{Op: OpCall, Function: "sdk.t.create", Method: "POST", URL: "http://h/items",
		Headers: map[string]string{"Content-Type": "application/json", "X-Account": "reviewed"}, Body: json.RawMessage(`{"a":"x","b":[1,2]}`)}
	big := Effect{Op: OpCall, Function: "sdk.t.upload", Method: "PUT", URL: "http://h/blob", Headers: map[string]string{}, BodySHA256: shaA, BodyBytes: 70000}
	plan := []Effect{{Op: OpMkdir, Path: "out"}, write, {Op: OpRemove, Path: "old"}, call, big,
		{Op: OpCall, Function: "sdk.fs.write_file", Body: json.RawMessage(`{"path":"p"}`)}}
	withBody := func(e Effect, body string) Effect { e.Body = json.RawMessage(body); return e }
	withHeader := func(e Effect, name, value string) Effect {
		e.Headers = maps.Clone(e.Headers)
		if value == "" {
			delete(e.Headers, name)
		} else {
			e.Headers[name] = value
		}
		return e
	}

	tests := []struct {
		name string
		// attempts are applied in order; the last is the one the test is about.
		attempts []Effect
		want     string // "" for Proceed, else a part of the stop's message
	}{
		{"the first entry", plan[:1], ""},
		{"the plan in order", plan, ""},
		{"another header", append(append([]Effect{}, plan[:3]...), withHeader(call, "X-Account", "attacker")),
			`another value of header X-Account: "attacker", not "reviewed"`},
		{"a header left out", append(append([]Effect{}, plan[:3]...), withHeader(call, "X-Account", "")), `no header X-Account (expected "reviewed")`},
		{"a header added", append(append([]Effect{}, plan[:3]...), withHeader(call, "Cookie", "s=1")), `another header, Cookie: "s=1"`},
		{"a body's text is its bytes", append(append([]Effect{}, plan[:3]...), withBody(call, `"{\"a\":\"x\",\"b\":[1,2]}"`)), ""},
		{"a body's other bytes", append(append([]Effect{}, plan[:3]...), withBody(call, `"{\"b\":[1,2],\"a\":\"x\"}"`)), "another body"},
		{"the method's case does not matter", append(append([]Effect{}, plan[:3]...), func() Effect { c := call; c.Method = "post"; return c }()), ""},
		{"out of order", []Effect{write}, "the plan's next entry (1 of 6) is mkdir out: another op"},
		{"another path", []Effect{{Op: OpMkdir, Path: "other"}}, "another path"},
		{"other content", append(append([]Effect{}, plan[:1]...), Effect{Op: OpWrite, Path: "out/a.csv", SHA256: shaB}),
			"attempted write out/a.csv (sha256 " + shaB + "), which the plan does not hold: the plan's next entry (2 of 6) is write out/a.csv (25 bytes, sha256 " + shaA + "): other content; it was not carried out"},
		{"another body", append(append([]Effect{}, plan[:3]...), withBody(call, `{"a":"x","b":[1,3]}`)), "another body"},
		{"no body", append(append([]Effect{}, plan[:3]...), withBody(call, ``)), "another body"},
		{"another URL", append(append([]Effect{}, plan[:3]...), func() Effect { c := call; c.URL = "http://h/other"; return c }()),
			`attempted call sdk.t.create (POST http://h/other, headers {Content-Type: "application/json", X-Account: "reviewed"}) with body {"a":"x","b":[1,2]}, which the plan does not hold: ` +
				`the plan's next entry (4 of 6) is call sdk.t.create (POST http://h/items, headers {Content-Type: "application/json", X-Account: "reviewed"}) with body {"a":"x","b":[1,2]}: another URL`},
		{"another function", append(append([]Effect{}, plan[:3]...), func() Effect { c := call; c.Function = "sdk.t.delete"; return c }()),
			"another function"},
		{"another method", append(append([]Effect{}, plan[:3]...), func() Effect { c := call; c.Method = "PUT"; return c }()), "another method"},
		{"a large body by its sha", append(append([]Effect{}, plan[:4]...), func() Effect { c := big; c.BodySHA256 = shaB; return c }()), "another body"},
		{"past the plan's end", append(append([]Effect{}, plan...), Effect{Op: OpRemove, Path: "x"}),
			"attempted remove x, which the plan does not hold: the plan has no more entries (all 6 were applied)"},
		{"a tool's arguments", append(append([]Effect{}, plan[:5]...), withBody(plan[5], `{"path":"q"}`)), "another body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := PlanOf(raws(t, plan))
			if err != nil {
				t.Fatal(err)
			}
			r := NewPlan(p)
			if !r.Stages() || r.Mode() != Plan {
				t.Fatal("a plan run stages its io")
			}
			for i, e := range tt.attempts {
				d := r.Decide(func() Effect { return e })
				last := i == len(tt.attempts)-1
				if !last || tt.want == "" {
					if d != Proceed || r.Err() != nil {
						t.Fatalf("attempt %d (%s): %v, %v", i+1, Describe(e), d, r.Err())
					}
					continue
				}
				if d != Stop || r.Err() == nil || r.Err().Kind != "plan" || !strings.Contains(r.Err().Message, tt.want) {
					t.Fatalf("attempt %d: %v, %v; want a stop with %q", i+1, d, r.Err(), tt.want)
				}
				// Every later effect is refused, the plan's own included.
				if r.Decide(func() Effect { return plan[min(len(tt.attempts)-1, len(plan)-1)] }) != Stop {
					t.Error("an effect after the stop proceeded")
				}
			}
			applied := len(tt.attempts)
			if tt.want != "" {
				applied--
			}
			log, _ := r.Effects()
			if len(log) != applied {
				t.Errorf("logged %d effects, want the %d applied", len(log), applied)
			}
			unused := r.Unused()
			if want := max(len(plan)-applied, 0); len(unused) != want || (want > 0 && unused[0].Op != plan[applied].Op) {
				t.Errorf("unused %v, want the last %d entries", unused, want)
			}
		})
	}
	for _, r := range []*Run{nil, New(Real), New(DryRun)} {
		if r.Err() != nil || r.Unused() != nil {
			t.Errorf("mode %s has a stop or unused entries", r.Mode())
		}
	}
}

// raws is effects as a plan's entries.
func raws(t *testing.T, list []Effect) []json.RawMessage {
	var out []json.RawMessage
	for _, e := range list {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// A dry run's effects, as its result gives them, are a plan that holds
// the same effects.
func TestPlanOfDryRun(t *testing.T) {
	dry := New(DryRun)
	n := int64(3)
	for _, e := range []Effect{{Op: OpMkdir, Path: "d"}, {Op: OpWrite, Path: "d/f", Bytes: &n, SHA256: shaA, Diff: "--- /dev/null\n+++ b/d/f\n"}} {
		dry.Decide(func() Effect { return e })
	}
	c := Effect{Op: OpCall, Function: "sdk.a.b", Method: "POST", URL: "http://h/x", Headers: map[string]string{"Content-Type": "text/plain"}}
	c.SetBody([]byte(`{"z": 1, "y": "<&>"}`))
	dry.Decide(func() Effect { return c })
	log, _ := dry.Effects()
	text, _ := json.Marshal(map[string]any{"result": nil, "effects": log})
	p, err := ParsePlan(text)
	if err != nil {
		t.Fatal(err)
	}
	r := NewPlan(p)
	for _, e := range log {
		if d := r.Decide(func() Effect { return e }); d != Proceed {
			t.Fatalf("%s: %v (%v)", Describe(e), d, r.Err())
		}
	}
	if r.Unused() != nil {
		t.Error("entries left over")
	}
}

func FuzzParsePlan(f *testing.F) {
	for _, seed := range []string{
		`[]`, `{"effects":[]}`,
		`[{"op":"write","path":"a","sha256":"` + shaA + `"}]`,
		`[{"op":"call","function":"f","method":"POST","url":"u","headers":{"X-A":"b"},"body":{"a":[1,{"b":null}]}}]`,
		`[{"op":"call","function":"f","method":"POST","url":"u","headers":{},"body":"{\"a\":1,\"a\":2}"}]`,
		`[{"op":"call","function":"f","body_sha256":"` + shaA + `","body_bytes":70000}]`,
		`{"effects":[{"op":"remove","path":"x"},{"op":"mkdir","path":"d"},{"op":"rename","path":"a","to":"b"}]}`,
		`[{"op":"call","function":"f","body":1e999}]`, `[[[[[[`, `{"effects":null}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePlan(data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		// A parsed plan holds each of its own entries, in order.
		r := NewPlan(p)
		for i, e := range p.Entries() {
			if d := r.Decide(func() Effect { return e }); d != Proceed {
				t.Fatalf("entry %d (%s) of its own plan: %v", i+1, Describe(e), r.Err())
			}
		}
		if r.Unused() != nil {
			t.Fatal("entries left over")
		}
		if r.Decide(func() Effect { return Effect{Op: OpRemove, Path: fmt.Sprint(len(data))} }) != Stop {
			t.Fatal("an effect past the plan proceeded")
		}
	})
}
