// Package result defines the execution result: what one run of a script
// produces on every surface (CLI, MCP), as docs/result.md describes it.
package result

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/toolscript/toolscript/host/contract/effects"
)

// Kind classifies why an execution failed.
type Kind string

// The kinds of failure. Every failed execution has exactly one.
const (
	Syntax   Kind = "syntax"   // the script does not parse or compile
	Type     Kind = "type"     // a run that asked for a type check was not started: the check found type errors
	Runtime  Kind = "runtime"  // a Lua error escaped the script
	Timeout  Kind = "timeout"  // the wall-clock limit passed, or the run was cancelled
	Memory   Kind = "memory"   // the script exceeded its memory limit
	Limit    Kind = "limit"    // a configured budget: write bytes, handles, result size...
	IO       Kind = "io"       // a sandbox refusal or I/O failure escaped the script
	Upstream Kind = "upstream" // an sdk call's HTTP error, transport failure or MCP tool error escaped the script
	Plan     Kind = "plan"     // an unsafe effect the plan of a plan run does not hold was stopped before it happened
	Replay   Kind = "replay"   // a replay left its trace (the script did otherwise), or the trace cannot be read
	Denied   Kind = "denied"   // an effect a [[policy]] rule denied, or a person declined, escaped the script
	Approval Kind = "approval" // an effect needed a person who could not be asked, or who stopped the script
	Internal Kind = "internal" // a fault of toolscript itself
)

// Kinds lists every Kind, in the documented order: the one list that
// schemas, docs and tests take the kinds from.
var Kinds = []Kind{Syntax, Type, Runtime, Timeout, Memory, Limit, IO, Upstream, Plan, Replay, Denied, Approval, Internal}

// Error describes a failed execution.
type Error struct {
	Kind    Kind   `json:"kind"`
	Message string `json:"message"`
	// Line is the 1-based script line the error was raised at, 0 when unknown.
	Line int `json:"line,omitempty"`
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s error: %s", e.Kind, e.Message)
}

// Op says what a script did to a file, judged by the file's final state.
type Op string

// The operations reported in FilesTouched.
const (
	OpWrite  Op = "write"
	OpAppend Op = "append"
	OpRemove Op = "remove"
)

// FileTouched is one file the script wrote, appended to or removed.
type FileTouched struct {
	// Name is the cleaned path relative to the io directory.
	Name string `json:"name"`
	Op   Op     `json:"op"`
	// Bytes is the file's size on disk at the end. It is written for every
	// op but OpRemove, 0 included, and omitted for removals (MarshalJSON).
	Bytes int64 `json:"bytes"`
	// DryRun marks an entry of a dry run: what the file would be; the
	// real file is untouched.
	DryRun bool `json:"dry_run,omitempty"`
}

// MarshalJSON writes bytes for every op but remove: an empty file written
// is {"name":"e.txt","op":"write","bytes":0}, a removed one has no size.
func (f FileTouched) MarshalJSON() ([]byte, error) {
	type wire struct {
		Name   string `json:"name"`
		Op     Op     `json:"op"`
		Bytes  *int64 `json:"bytes,omitempty"`
		DryRun bool   `json:"dry_run,omitempty"`
	}
	w := wire{Name: f.Name, Op: f.Op, DryRun: f.DryRun}
	if f.Op != OpRemove {
		w.Bytes = &f.Bytes
	}
	return marshal(w)
}

// marshal is json.Marshal without HTML escaping: these texts are read by
// people and models, not embedded in HTML.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// Result is the outcome of one execution. Logs and FilesTouched are reported
// whether or not the script succeeded.
type Result struct {
	// Value is the script's first return value as JSON ("null" when none).
	Value        json.RawMessage `json:"result"`
	Logs         []string        `json:"logs"`
	FilesTouched []FileTouched   `json:"files_touched"`
	// FilesOmitted counts the files touched that FilesTouched leaves out,
	// past its cap or to keep the result within its size bound.
	FilesOmitted int `json:"files_touched_omitted,omitempty"`
	// Effects are a dry run's unsafe effects in order, or those a plan
	// run carried out (nil, and left out, in a real run); EffectsOmitted
	// counts those left out past the log's bounds or the result's size
	// bound.
	Effects        []effects.Effect `json:"effects,omitzero"`
	EffectsOmitted int              `json:"effects_omitted,omitempty"`
	// PlanUnused are the entries of a plan run's plan that it did not
	// carry out (left out when there are none); PlanUnusedOmitted counts
	// those left out to keep the result within its size bound.
	PlanUnused        []effects.Effect `json:"plan_unused,omitempty"`
	PlanUnusedOmitted int              `json:"plan_unused_omitted,omitempty"`
	// Warnings are what the host tells the caller about the execution
	// besides its outcome (its recording was cut short), one line each;
	// left out when there are none.
	Warnings []string `json:"warnings,omitempty"`
	Error    *Error   `json:"error,omitempty"`
}

// Bound keeps the result's JSON text within about maxBytes, so that no
// surface has to carry an unbounded answer: entries of FilesTouched are
// left out from the end (and counted in FilesOmitted), then a plan's
// unused entries from the end (PlanUnusedOmitted), then effects from the
// end (counted in EffectsOmitted), then log lines from the end (a last
// line says how many). The value and the error are capped where they are
// made.
func (r *Result) Bound(maxBytes int) {
	size := len(r.JSON())
	if size <= maxBytes {
		return
	}
	for len(r.FilesTouched) > 0 && size > maxBytes {
		last := r.FilesTouched[len(r.FilesTouched)-1]
		b, _ := json.Marshal(last)
		size -= len(b) + 1
		r.FilesTouched = r.FilesTouched[:len(r.FilesTouched)-1]
		r.FilesOmitted++
	}
	if size <= maxBytes {
		return
	}
	size = dropFromEnd(&r.PlanUnused, &r.PlanUnusedOmitted, size, maxBytes)
	if size <= maxBytes {
		return
	}
	size = dropFromEnd(&r.Effects, &r.EffectsOmitted, size, maxBytes)
	if size <= maxBytes {
		return
	}
	dropped := 0
	for len(r.Logs) > 0 && size > maxBytes-100 {
		b, _ := json.Marshal(r.Logs[len(r.Logs)-1])
		size -= len(b) + 1
		r.Logs = r.Logs[:len(r.Logs)-1]
		dropped++
	}
	if dropped > 0 {
		r.Logs = append(r.Logs, fmt.Sprintf("... %s dropped to keep the result within %d bytes", Plural(dropped, "more log line", "more log lines"), maxBytes))
	}
}

// Plural says n things, in the singular for one.
func Plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// Failed reports whether the execution failed.
func (r *Result) Failed() bool { return r.Error != nil }

// MarshalJSON writes the result with empty lists as [] and a null result on
// failure, so that consumers never meet a missing or null list.
func (r *Result) MarshalJSON() ([]byte, error) {
	type plain Result
	out := plain(*r)
	if out.Logs == nil {
		out.Logs = []string{}
	}
	if out.FilesTouched == nil {
		out.FilesTouched = []FileTouched{}
	}
	if out.Value == nil || out.Error != nil {
		out.Value = json.RawMessage("null")
	}
	return marshal(&out)
}

// JSON returns the result as one line of JSON. Unlike json.Marshal it leaves
// <, > and & unescaped: these texts are read by people and models, not
// embedded in HTML.
func (r *Result) JSON() []byte {
	// MarshalJSON's text is what an encoder gives for r; called directly,
	// it spares the second pass an encoder makes over a Marshaler's text
	// (validating and compacting it again): half the time.
	b, err := r.MarshalJSON()
	if err != nil {
		// Only a malformed Value could fail; report it rather than panic.
		return []byte(`{"result":null,"logs":[],"files_touched":[],"error":{"kind":"internal","message":"result is not valid JSON"}}`)
	}
	return b
}

// dropFromEnd drops entries from the end of *list, counting them in
// *omitted, until size (less each entry's JSON and its comma) is at most
// maxBytes or the list is empty, and returns the size left.
func dropFromEnd[T any](list *[]T, omitted *int, size, maxBytes int) int {
	for len(*list) > 0 && size > maxBytes {
		b, _ := json.Marshal((*list)[len(*list)-1])
		size -= len(b) + 1
		*list = (*list)[:len(*list)-1]
		*omitted++
	}
	return size
}
