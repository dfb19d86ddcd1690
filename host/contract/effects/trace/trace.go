// Package trace is the file format of a recorded execution: a JSON Lines
// file whose first line is a Header and every later line an Entry, in the
// order the script caused them. It owns
//
//   - the format: Header, Entry and the kinds of entries (the random seed,
//     clock readings, sdk calls with their responses, io operations with
//     their outcomes, and the end of the execution);
//   - Writer, which streams entries to a file as they are decided (an sdk
//     call's entry keeps its place in the script's order while its response
//     is awaited), bounded by MaxBytes;
//   - Quota, the bounds of a record directory (all its traces, each
//     user's), which its writers share: past one a trace ends at its last
//     whole line;
//   - Reader, which treats a trace as untrusted input: every line is
//     bounded (by the replay's limits: LineBytesFor) as it is read,
//     decoded and checked, and anything wrong is an *Error naming the
//     line, never a crash.
//
// What an entry means to an execution (how it is recorded, substituted or
// found to diverge) is host/contract/effects'.
package trace

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Version is the trace format's version: the header's "trace". Format 2
// holds a call's headers; format 3 adds the rules' decisions (OpDecision),
// and reads format 2 as it is (it has none); a trace of format 1 is
// refused (its calls would replay without their headers compared).
const Version = 3

// MinVersion is the oldest format Reader reads.
const MinVersion = 2

// The bounds of a trace.
const (
	// MaxBytes bounds a whole trace: a larger one is refused when read,
	// and recording stops (the trace then ends early) when it would grow
	// past it.
	MaxBytes = 256 << 20
	// MaxLineBytes bounds one line whatever the configuration; a replay
	// bounds its lines by its own limits (LineBytesFor).
	MaxLineBytes = 128 << 20
)

// Header is a trace's first line.
type Header struct {
	// Trace is the format's version (Version).
	Trace int `json:"trace"`
	// Toolscript is the version of the program that recorded it.
	Toolscript string `json:"toolscript"`
	// ScriptSHA256 is the digest of the script's source; ConfigSHA256 of
	// the configuration it ran with (credentials left out).
	ScriptSHA256 string `json:"script_sha256"`
	ConfigSHA256 string `json:"config_sha256"`
	// Mode is how the execution treated its unsafe effects: ModeDryRun,
	// ModePlan, or "" (left out) for a real run.
	Mode string `json:"mode,omitempty"`
}

// The modes of a Header: the execute_script arguments that ask for them.
const (
	ModeDryRun = "dry_run"
	ModePlan   = "plan"
)

// Op is what an entry records.
type Op string

// The ops of an Entry.
const (
	// OpSeed is the random seed the script's math.random starts from.
	OpSeed Op = "seed"
	// OpClock is one reading of a clock: the wall clock (os.time,
	// os.date) or the monotonic one (os.clock).
	OpClock Op = "clock"
	// OpCall is an sdk call: its request (as a dry run's effect gives it:
	// no credential, frozen values as their names) and its response.
	OpCall Op = "call"
	// OpIO is one io operation (open, read, write, seek, flush, close,
	// list, remove) and its outcome.
	OpIO Op = "io"
	// OpEnd is the end of the execution: what its io left on disk.
	OpEnd Op = "end"
	// OpDecision is what a [[policy]] rule (or the default) decided of an
	// effect: Decision, Rule and the effect's one-line Effect. It is the
	// audit's, and a replay passes over it.
	OpDecision Op = "decision"
)

// The clocks of an OpClock entry.
const (
	ClockWall = "wall"
	ClockMono = "mono"
)

// Entry is one line after the header. Which fields are set depends on Op.
type Entry struct {
	Op Op `json:"op"`

	// Seed is an OpSeed's seed.
	Seed uint64 `json:"seed,omitempty"`

	// Clock is an OpClock's clock (ClockWall, ClockMono); Sec and Nsec
	// the wall clock's reading, Nanos the monotonic one's.
	Clock string `json:"clock,omitempty"`
	Sec   int64  `json:"sec,omitempty"`
	Nsec  int32  `json:"nsec,omitempty"`
	Nanos int64  `json:"nanos,omitempty"`

	// An OpCall's request: the function, an OpenAPI call's method, URL
	// and headers, the body (or its digest and size when large or
	// binary), as host/contract/effects.Effect holds them.
	Function   string            `json:"function,omitempty"`
	Method     string            `json:"method,omitempty"`
	URL        string            `json:"url,omitempty"`
	Headers    map[string]string `json:"headers,omitempty"`
	Body       json.RawMessage   `json:"body,omitempty"`
	BodySHA256 string            `json:"body_sha256,omitempty"`
	BodyBytes  int64             `json:"body_bytes,omitempty"`
	// Response is what the script got.
	Response *Response `json:"response,omitempty"`

	// IO is an OpIO's operation, the rest its request and outcome.
	IO *IO `json:"io,omitempty"`

	// Files is an OpEnd's files touched, as the result gives them, and
	// FilesOmitted how many it left out.
	Files        json.RawMessage `json:"files_touched,omitempty"`
	FilesOmitted int             `json:"files_touched_omitted,omitempty"`

	// An OpDecision's decision (allowed, denied, approved, declined,
	// ask), the rule that made it ("" for the default) and the effect it
	// was made of, in one line.
	Decision string `json:"decision,omitempty"`
	Rule     string `json:"rule,omitempty"`
	Effect   string `json:"effect,omitempty"`
}

// Response is an sdk call's response as the script got it (after
// redaction: a trace holds no credential).
type Response struct {
	// Fail is how the call failed (0: it did not), Message its message.
	Fail    int    `json:"fail,omitempty"`
	Message string `json:"message,omitempty"`
	Status  int    `json:"status,omitempty"`
	// Headers are the response's headers, names in lower case.
	Headers map[string]string `json:"headers,omitempty"`
	// JSON and Text are the body in the form the script got it; Content
	// an MCP error's content blocks.
	JSON    Bytes `json:"json,omitzero"`
	Text    Bytes `json:"text,omitzero"`
	Content Bytes `json:"content,omitzero"`
	DryRun  bool  `json:"dry_run,omitempty"`
	// Unanswered marks a call whose response the script never got (the
	// execution ended first).
	Unanswered bool `json:"unanswered,omitempty"`
}

// The operations of an IO entry.
const (
	IOOpen   = "open"
	IORead   = "read"
	IOWrite  = "write"
	IOSeek   = "seek"
	IOFlush  = "flush"
	IOClose  = "close"
	IOList   = "list"
	IORemove = "remove"
	IOStat   = "stat"
	IOGlob   = "glob"
	IOGrep   = "grep"
	IOEdit   = "edit"
	IORename = "rename"
)

// LeavesPending reports whether an io operation that succeeds leaves a
// result for the script to take (a listing, a stat, matches): it is
// recorded with the operation.
func LeavesPending(op string) bool {
	switch op {
	case IOList, IOStat, IOGlob, IOGrep:
		return true
	}
	return false
}

// IO is one io operation: its request (Op and the fields it takes) and
// its outcome (Result, and Message or Data).
type IO struct {
	Op string `json:"op"`
	// Path and Mode are an open's (Path also the path of a list, a
	// remove, a stat, a grep, an edit, and a rename's source; a glob's
	// pattern).
	Path string `json:"path,omitempty"`
	Mode string `json:"mode,omitempty"`
	// To is a rename's destination.
	To string `json:"to,omitempty"`
	// Pattern and Filter are a grep's regular expression and glob.
	Pattern string `json:"pattern,omitempty"`
	Filter  string `json:"filter,omitempty"`
	// All is an edit's: every occurrence replaced. An edit's SHA256 is
	// the digest of its old and new text (EditDigest).
	All bool `json:"all,omitempty"`
	// Handle is the handle operated on.
	Handle int32 `json:"handle,omitempty"`
	// Len is how many bytes a read asked for, or a write wrote; SHA256
	// the written bytes' digest.
	Len    int64  `json:"len,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	// Whence and Offset are a seek's.
	Whence int32 `json:"whence,omitempty"`
	Offset int64 `json:"offset,omitempty"`

	// Result is what the operation returned to the script: a handle, a
	// count, a position, or a failure status.
	Result int64 `json:"result"`
	// Pending is what the operation left for the script to take: a
	// failure's message or a listing.
	Pending Bytes `json:"pending,omitzero"`
	// Data are the bytes a read read.
	Data Bytes `json:"data,omitzero"`
}

// The ranges of outcomes a trace may hold: a response's fail (the host's
// failure kinds), and an io result's failure statuses (the io host
// functions').
const (
	MaxFail   = 3
	MinResult = -2
)

// Bytes are bytes in a trace: valid UTF-8 as a JSON string, other bytes
// as {"base64": "..."}. Nil and empty are the same (left out).
type Bytes []byte

// IsZero reports whether b is empty (omitzero leaves it out).
func (b Bytes) IsZero() bool { return len(b) == 0 }

// MarshalJSON is a string for UTF-8 text, a base64 object otherwise, or
// when the string, escaped, would be larger: Bytes are never written
// larger than base64Len of their size, which bounds a line
// (LineBytesFor).
func (b Bytes) MarshalJSON() ([]byte, error) {
	if utf8.Valid(b) {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(string(b)); err != nil {
			return nil, err
		}
		if text := bytes.TrimSuffix(buf.Bytes(), []byte("\n")); int64(len(text)) <= base64Len(int64(len(b))) {
			return text, nil
		}
	}
	return json.Marshal(struct {
		Base64 string `json:"base64"`
	}{base64.StdEncoding.EncodeToString(b)})
}

// base64Len is the size of n bytes as a Bytes base64 object.
func base64Len(n int64) int64 {
	return int64(len(`{"base64":""}`)) + (n+2)/3*4
}

// UnmarshalJSON takes either form.
func (b *Bytes) UnmarshalJSON(data []byte) error {
	if len(data) > 0 && data[0] == '"' {
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		*b = Bytes(s)
		return nil
	}
	var obj struct {
		Base64 *string `json:"base64"`
	}
	if err := json.Unmarshal(data, &obj); err != nil {
		return err
	}
	if obj.Base64 == nil {
		return fmt.Errorf("bytes: want a string or {\"base64\": ...}")
	}
	out, err := base64.StdEncoding.DecodeString(*obj.Base64)
	if err != nil {
		return fmt.Errorf("bytes: %w", err)
	}
	*b = out
	return nil
}

// Error is a trace that cannot be read: the line (1 for the header) and
// why.
type Error struct {
	Line   int
	Reason string
	// cause is a decoding error the reader names in Reason.
	cause error
}

func (e *Error) Error() string {
	return fmt.Sprintf("trace line %d: %s", e.Line, e.Reason)
}

// check says what is wrong with e, nil when nothing is.
func (e *Entry) check() error {
	switch e.Op {
	case OpSeed, OpEnd:
		if e.Op == OpEnd && len(e.Files) > 0 && !json.Valid(e.Files) {
			return fmt.Errorf("files_touched is not JSON")
		}
		if e.FilesOmitted < 0 {
			return fmt.Errorf("files_touched_omitted is negative")
		}
	case OpClock:
		return e.checkClock()
	case OpCall:
		return e.checkCall()
	case OpIO:
		if e.IO == nil {
			return fmt.Errorf("an io entry without io")
		}
		return e.IO.check()
	case OpDecision:
		if e.Decision == "" {
			return fmt.Errorf("a decision entry without its decision")
		}
	default:
		return fmt.Errorf("unknown op %q", e.Op)
	}
	return nil
}

func (e *Entry) checkClock() error {
	switch e.Clock {
	case ClockWall:
		if e.Nsec < 0 || e.Nsec >= 1e9 {
			return fmt.Errorf("a wall clock's nsec must be in [0, 1e9), not %d", e.Nsec)
		}
	case ClockMono:
		if e.Nanos < 0 {
			return fmt.Errorf("a monotonic clock reading is negative")
		}
	default:
		return fmt.Errorf("unknown clock %q (wall or mono)", e.Clock)
	}
	return nil
}

func (e *Entry) checkCall() error {
	switch {
	case e.Function == "":
		return fmt.Errorf("a call without a function")
	case e.Response == nil:
		return fmt.Errorf("a call without a response")
	case e.Response.Fail < 0 || e.Response.Fail > MaxFail:
		return fmt.Errorf("a response's fail %d is not one of 0 to %d", e.Response.Fail, MaxFail)
	case e.Response.Status < 0 || e.Response.Status > 999:
		return fmt.Errorf("a response's status %d is not an HTTP status", e.Response.Status)
	}
	return nil
}

// check says what is wrong with an io entry, nil when nothing is.
func (o *IO) check() error {
	switch o.Op {
	case IOOpen, IORead, IOWrite, IOSeek, IOFlush, IOClose, IOList, IORemove, IOStat, IOGlob, IOGrep, IOEdit, IORename:
	default:
		return fmt.Errorf("unknown io op %q", o.Op)
	}
	switch {
	case o.Len < 0:
		return fmt.Errorf("an io entry's len is negative")
	case o.Result < MinResult:
		return fmt.Errorf("an io result %d is below %d", o.Result, MinResult)
	case o.Op == IORead && int64(len(o.Data)) > o.Len:
		return fmt.Errorf("a read's data (%d bytes) is more than it asked for (%d)", len(o.Data), o.Len)
	case o.Op == IORead && o.Result >= 0 && o.Result != int64(len(o.Data)):
		return fmt.Errorf("a read's result %d is not the size of its data (%d bytes)", o.Result, len(o.Data))
	case LeavesPending(o.Op) && o.Result >= 0 && o.Result != int64(len(o.Pending)):
		return fmt.Errorf("a %s's result %d is not its size (%d bytes)", o.Op, o.Result, len(o.Pending))
	case o.Op != IOSeek && o.Result > 1<<31-1:
		return fmt.Errorf("an io result %d is out of range", o.Result)
	}
	return nil
}
