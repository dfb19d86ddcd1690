// Package effects is the one layer every effect of a script passes through
// on its way out of the sandbox: io writes, removals and directory
// creation (host/runtime/sandboxio) and sdk calls (host/sdk, OpenAPI operations
// and MCP tools alike). It owns
//
//   - the Effect, the record of one unsafe effect as a person reviews it,
//     and how two calls' effects compare (compare.go): every byte of the
//     request the script controls, for plans and replays alike;
//   - the classification of effects into safe (they observe) and unsafe
//     (they change something): Classify for calls, and the io operations
//     are unsafe by their op;
//   - the Mode of an execution (a real run, a dry run, or a plan run: a
//     real run held to a dry run's effects) and the decision every unsafe
//     effect asks for before it happens (Run.Pass): proceed, hold it
//     and let the caller substitute (the io overlay, a synthesised
//     response), deny it (a rule, policy.go: the script is told), or stop
//     it (an effect the plan does not hold, plan.go; a person who could
//     not be asked, ask.go);
//   - the Rules that decide each effect first, as an interface (the CEL
//     rules are host/contract/policy's), the Facts they see, and asking
//     a person (ask.go);
//   - the ordered, bounded log of the effects an execution decided on,
//     which the result reports;
//   - recording a real run, and replaying one (mode Replay): every sdk
//     call, safe or unsafe, every io operation, the clock readings and
//     the random seed pass the run in order, and are written to a trace
//     (host/contract/effects/trace) or given back from one (replay.go);
//   - the rules that decide each effect (policy.go), asking a person
//     about one (ask.go), and pausing
//     and resuming an execution that asks: the consistent prefix of its
//     recording a pause keeps (Run.Prefix), and a run that replays that
//     prefix, then goes live with the person's answer (NewResume,
//     resume.go).
//
// What happens to a held effect is the caller's: sandboxio keeps held
// writes in an overlay, the sdk makes a response up. A capability added
// later gets dry runs by asking Decide before it acts.
package effects

import (
	"encoding/json"
	"sync"

	"github.com/toolscript/toolscript/host/contract/catalog"
)

// Op is what an effect does.
type Op string

// The ops of an Effect.
const (
	OpWrite  Op = "write"  // a file's content written (one effect per writing handle)
	OpRemove Op = "remove" // a file removed
	OpRename Op = "rename" // a file renamed (Path to To)
	OpMkdir  Op = "mkdir"  // a directory created
	OpCall   Op = "call"   // an sdk call: an OpenAPI operation or an MCP tool
)

// MaxBodyBytes is the size up to which a call's body is given in full;
// a larger one is given by its sha256 and size.
const MaxBodyBytes = 64 << 10

// Effect is one unsafe effect as the result reports it. Which fields are
// set depends on Op: Path (and To) for io, Bytes and SHA256 (and Diff) for
// writes, Function, Method, URL, Headers and the body for calls. A call's
// effect never holds a credential or a frozen parameter's value.
type Effect struct {
	Op   Op     `json:"op"`
	Path string `json:"path,omitempty"`
	// To is a rename's new path.
	To string `json:"to,omitempty"`
	// Bytes is a written file's resulting size; SHA256 its content's
	// digest (hex).
	Bytes  *int64 `json:"bytes,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
	// Diff is a unified diff of a text file's write against the real
	// file, when both are small enough (see sandboxio).
	Diff string `json:"diff,omitempty"`
	// Function is the sdk function ("sdk.gh.issues_create"); Method and
	// URL the HTTP request's (empty for an MCP tool).
	Function string `json:"function,omitempty"`
	Method   string `json:"method,omitempty"`
	URL      string `json:"url,omitempty"`
	// Headers are an HTTP request's headers that its parameters set
	// (cookies as one Cookie header), and its Content-Type: every header
	// but the credential and those the host sends on every request. It
	// is set, {} for none, on every call of an OpenAPI operation
	// (compare.go); several values of one header are joined by "\n".
	Headers map[string]string `json:"headers,omitzero"`
	// Body is the call's body (SetBody: its bytes exactly), or an MCP
	// tool's arguments (SetArguments), when at most MaxBodyBytes; a
	// larger or binary body is given by BodySHA256 and BodyBytes instead.
	Body       json.RawMessage `json:"body,omitempty"`
	BodySHA256 string          `json:"body_sha256,omitempty"`
	BodyBytes  int64           `json:"body_bytes,omitempty"`
	// Decision is what the rules decided of the effect (policy.go:
	// allowed, denied, approved, declined, ask), and Rule the rule that
	// decided it ("" for [effects] default); both empty when the run has
	// no rules. A plan skips denied and declined entries: they did not
	// happen.
	Decision string `json:"decision,omitempty"`
	Rule     string `json:"rule,omitempty"`
}

// size is about how many bytes e takes in the result's JSON.
func (e *Effect) size() int {
	n := 64 + len(e.Path) + len(e.To) + len(e.Decision) + len(e.Rule) + len(e.SHA256) + len(e.Diff) + len(e.Function) +
		len(e.Method) + len(e.URL) + len(e.Body) + len(e.BodySHA256)
	for k, v := range e.Headers {
		n += 8 + len(k) + len(v)
	}
	return n
}

// Safety says whether an effect observes (Safe) or changes something
// (Unsafe).
type Safety int

// The classes of Safety. Unknown is an override's zero value: no override.
const (
	Unknown Safety = iota
	Safe
	Unsafe
)

func (s Safety) String() string {
	switch s {
	case Safe:
		return "safe"
	case Unsafe:
		return "unsafe"
	}
	return "unknown"
}

// Call is what classifies an sdk call.
type Call struct {
	// Method is an OpenAPI operation's HTTP method; empty for an MCP tool.
	Method string
	// ReadOnly is an MCP tool's readOnlyHint annotation (true only when
	// the tool declares it).
	ReadOnly bool
	// Override is a configured classification of the function, Unknown
	// when there is none.
	Override Safety
}

// Classify says whether a call is safe: an override when there is one;
// else an OpenAPI operation by its method (GET, HEAD and OPTIONS observe;
// every other method changes something), an MCP tool by its readOnlyHint.
func Classify(c Call) Safety {
	if c.Override != Unknown {
		return c.Override
	}
	if c.Method == "" {
		if c.ReadOnly {
			return Safe
		}
		return Unsafe
	}
	if catalog.SafeMethod(c.Method) {
		return Safe
	}
	return Unsafe
}

// OfFunction classifies the calls of an sdk function: as the
// configuration declares it ([apis.NAME] or [mcp_servers.NAME] safe and
// unsafe: catalog.Function.Configured), else an OpenAPI operation by its
// method, an MCP tool by its readOnlyHint. The dry run and lint --effects
// both ask it.
func OfFunction(f *catalog.Function) Safety {
	override := Unknown
	if f.Configured != nil {
		override = Unsafe
		if *f.Configured {
			override = Safe
		}
	}
	if f.Kind == catalog.MCP {
		return Classify(Call{ReadOnly: f.Hints != nil && f.Hints.ReadOnly != nil && *f.Hints.ReadOnly, Override: override})
	}
	return Classify(Call{Method: f.Method, Override: override})
}

// Mode is how an execution treats its unsafe effects.
type Mode int

// The modes. The zero Mode is a real run.
const (
	// Real: effects happen; nothing is logged.
	Real Mode = iota
	// DryRun: unsafe effects are held (the caller substitutes: an overlay,
	// a synthesised response) and logged; safe ones happen.
	DryRun
	// Plan: a real run held to a dry run's effects (plan.go): each unsafe
	// effect proceeds, and is logged, when it is the plan's next entry;
	// the first one that is not stops the run.
	Plan
	// Replay: every sdk response, io outcome, clock reading and the seed
	// come from a recorded trace, and nothing reaches the world
	// (replay.go).
	Replay
)

func (m Mode) String() string {
	switch m {
	case DryRun:
		return "dry run"
	case Plan:
		return "plan"
	case Replay:
		return "replay"
	}
	return "real"
}

// Decision is what Decide says of an unsafe effect.
type Decision int

// The decisions.
const (
	// Proceed: the effect happens for real.
	Proceed Decision = iota
	// Hold: the effect does not reach the world; the caller substitutes
	// (the io overlay keeps the write, the sdk makes a response up).
	Hold
	// Stop: the effect must not happen, and the execution stops (Run.Err
	// says why): a plan does not hold it, or a person who could not be
	// asked, or who stopped the script, was needed (kind approval).
	Stop
	// Deny: the effect must not happen, and the script is told (an error
	// of kind denied, which it may catch): a rule denied it, or a person
	// declined it.
	Deny
)

// The bounds of the log.
const (
	// MaxEffects is how many effects the log keeps; the rest are counted.
	MaxEffects = 10000
	// MaxLogBytes bounds the log's size (about the JSON of its effects):
	// past it, diffs are left out, then effects are counted only.
	MaxLogBytes = 4 << 20
)

// Run is the effects of one execution: its mode and its log. Its methods
// are safe for concurrent use (parallel sdk calls decide at once). A nil
// *Run is a real run that logs nothing.
type Run struct {
	mode Mode
	// tr is the trace the run records to or replays from (replay.go),
	// nil when there is none.
	tr *traced

	mu      sync.Mutex
	log     []Effect
	bytes   int
	omitted int
	// diffWork is what the run's diffs have cost (Diff).
	diffWork int64
	// plan is a plan run's plan and progress (nil in other modes).
	plan *planState
	// policy is the run's rules (policy.go), nil when it has none.
	policy *policyState
	// asking is who the run asks about an effect a rule asks about, and
	// how (ask.go).
	asking asking
}

// New returns the effects of an execution in mode m.
func New(m Mode) *Run {
	return &Run{mode: m}
}

// Mode is the run's mode (Real for nil).
func (r *Run) Mode() Mode {
	if r == nil {
		return Real
	}
	return r.mode
}

// Stages reports whether unsafe io is to be kept apart from the real
// directory until it is decided (an overlay): in a dry run it never
// reaches it; in a plan run a write reaches it once its content is known
// (when its handle closes) and the plan holds it.
func (r *Run) Stages() bool { m := r.Mode(); return m == DryRun || m == Plan || r.Applies() }

// Applies reports whether r's staged io reaches the real directory once
// decided (a write when its handle closes): a plan run, and a real run
// with rules (a write is decided on its content).
func (r *Run) Applies() bool {
	return r.Mode() == Plan || (r.HasRules() && r.Mode() == Real)
}

// Decide is Pass for an unsafe io effect: its Decision.
func (r *Run) Decide(effect func() Effect) Decision {
	return r.Pass(Pending{Effect: effect}).Decision
}

// Pass is the point every unsafe effect (and a safe one, when the rules
// decide safe effects: DecidesSafe) passes before it happens. Rules, when
// the run has them, decide first (policy.go): a denied effect is logged
// and denied, an asked one waits for a person. Then the mode: in a real
// run it proceeds, and p.Effect is not called when there are no rules (a
// real run pays for nothing); in a dry run the effect is logged, in
// order, and held; in a plan run it is checked against the plan (check):
// it proceeds and is logged, or is stopped. A safe effect the rules
// allow proceeds in every mode, unlogged.
func (r *Run) Pass(p Pending) Outcome {
	if r.Resuming() && !p.Safe {
		if out := r.resumedPass(p); out != nil {
			return *out
		}
	}
	if !r.HasRules() {
		if p.Safe || r.Mode() == Real {
			return Outcome{Decision: Proceed}
		}
		return r.byMode(p.Effect())
	}
	if r.Mode() == Replay || (p.Safe && !r.policy.rules.DecidesSafe()) {
		// A replay gives back what the recording got; safe effects pass
		// unless a rule names effect.safe.
		return Outcome{Decision: Proceed}
	}
	e, out, next := r.ruled(p)
	if !next {
		return out
	}
	if p.Safe {
		return Outcome{Decision: Proceed}
	}
	return r.byMode(e)
}

// byMode decides an unsafe effect by the run's mode.
func (r *Run) byMode(e Effect) Outcome {
	switch r.Mode() {
	case Real:
		if r.HasRules() {
			r.add(e)
		}
		return Outcome{Decision: Proceed}
	case Plan:
		return Outcome{Decision: r.check(e)}
	}
	r.add(e)
	return Outcome{Decision: Hold}
}

func (r *Run) add(e Effect) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.log) >= MaxEffects {
		r.omitted++
		return
	}
	size := e.size()
	if r.bytes+size > MaxLogBytes && e.Diff != "" {
		e.Diff = ""
		size = e.size()
	}
	if r.bytes+size > MaxLogBytes {
		r.omitted++
		return
	}
	r.bytes += size
	r.log = append(r.log, e)
}

// Effects returns the logged effects in order and how many more were
// left out past the log's bounds (nil for a real run).
func (r *Run) Effects() ([]Effect, int) {
	if r == nil {
		return nil, 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Effect(nil), r.log...), r.omitted
}
