package luau

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/contract/telemetry"
	"github.com/toolscript/toolscript/host/platform/positive"
	"github.com/toolscript/toolscript/host/runtime/result"
	"github.com/toolscript/toolscript/host/runtime/sandboxio"

	"github.com/toolscript/toolscript/host/contract/sdkcall"
)

// Limits bound one execution. Zero fields take the defaults below.
type Limits struct {
	// Timeout is the wall-clock limit. Default 30s.
	Timeout time.Duration
	// HeapBytes caps the Luau heap. Default 64 MiB.
	HeapBytes uint64
	// MaxLogLines and MaxLogBytes cap the print() lines kept. Defaults 10,000
	// lines and 1 MiB.
	MaxLogLines int
	MaxLogBytes int
	// MaxResultBytes caps the JSON text of the result. Default 4 MiB.
	MaxResultBytes int
	// MaxOutputBytes bounds the whole execution result (value, logs, files
	// touched) as JSON; past it files touched, then logs, are left out and
	// counted. Default 8 MiB; MaxResultBytes is capped by it.
	MaxOutputBytes int
}

// The defaults of Limits.
const (
	DefaultTimeout        = 30 * time.Second
	DefaultHeapBytes      = 64 << 20
	DefaultMaxLogLines    = 10000
	DefaultMaxLogBytes    = 1 << 20
	DefaultMaxResultBytes = 4 << 20
	DefaultMaxOutputBytes = 8 << 20
)

// WithDefaults returns l with every zero field set to its default.
func (l Limits) WithDefaults() Limits {
	l.Timeout = positive.Or(l.Timeout, DefaultTimeout)
	l.HeapBytes = positive.Or(l.HeapBytes, DefaultHeapBytes)
	l.MaxLogLines = positive.Or(l.MaxLogLines, DefaultMaxLogLines)
	l.MaxLogBytes = positive.Or(l.MaxLogBytes, DefaultMaxLogBytes)
	l.MaxResultBytes = positive.Or(l.MaxResultBytes, DefaultMaxResultBytes)
	l.MaxOutputBytes = positive.Or(l.MaxOutputBytes, DefaultMaxOutputBytes)
	l.MaxResultBytes = min(l.MaxResultBytes, l.MaxOutputBytes)
	return l
}

// Script is one execution request.
type Script struct {
	// Source is Luau source text. Bytecode is refused.
	Source []byte
	// Args are passed to the script as `...`.
	Args   []string
	Limits Limits
	// OnLog, if set, sees each print() line as it happens (lines past the
	// log caps are not shown).
	OnLog func(line string)
	// OnProgress, if set, receives the script's progress() calls; total is
	// nil when the script gave none.
	OnProgress func(done float64, total *float64, message string)
	// IO, if set, gives the script the io library (and os.remove) confined
	// to one directory. Nil leaves io out of the environment.
	IO *IO
	// SDK makes the script's sdk calls (the functions of the Runtime's
	// Config.SDK); nil fails every call.
	SDK sdkcall.Caller
	// MaxParallel bounds the sdk calls the script has in flight at once
	// (parallel); default DefaultMaxParallel.
	MaxParallel int
	// User is the hosted user's subject, which the execution's span
	// names (Config.Tracer); empty for none.
	User string
	// Effects, when set, is the execution's effects layer: its io passes
	// through it (in a dry run, to an overlay), and the result reports its
	// log. The SDK's caller is given the same one by whoever makes it
	// (sdk.Session.WithEffects). Nil is a real run.
	Effects *effects.Run
}

// IO configures the sandboxed io library for one execution.
type IO struct {
	// Dir is the directory the script's paths are relative to. It is
	// created on the first write.
	Dir string
	// MaxBytes is the cumulative write budget of the execution.
	MaxBytes int64
	// MaxFiles caps the files and directories the execution creates.
	// Default sandboxio.DefaultMaxFiles.
	MaxFiles int
}

// DefaultIOMaxBytes is the default write budget: 50 MiB.
const DefaultIOMaxBytes = 50 << 20

// execution is the state of one running script that host functions reach.
type execution struct {
	logs       logSink
	onProgress func(done float64, total *float64, message string)
	// fs is the io directory, nil when io is disabled.
	fs *sandboxio.FS
	// pending is an io message or listing the guest has yet to take.
	pending []byte
	// sdk makes the execution's sdk calls, nil when there is none.
	sdk sdkcall.Caller
	// maxParallel bounds the sdk calls in flight at once.
	maxParallel int
	// calls are the requests parallel made, nil before the first.
	calls *calls
	// fx is the execution's effects layer, nil in a real run: the clocks,
	// the seed and io pass through it when it records or replays.
	fx *effects.Run
	// tracer is the Runtime's (nil: no spans): its io effects' spans,
	// ioSpans of them so far (the guest's io calls come one at a time).
	tracer  *telemetry.Tracer
	ioSpans int
}

// Execute runs script in a fresh instance and returns its result. It never
// returns nil; failures of every kind, including toolscript's own, are
// reported in the result's Error.
func (r *Runtime) Execute(ctx context.Context, script Script) *result.Result {
	limits := script.Limits.WithDefaults()
	exec := &execution{
		logs:       logSink{maxLines: limits.MaxLogLines, maxBytes: limits.MaxLogBytes, onLine: script.OnLog},
		onProgress: script.OnProgress,
		sdk:        script.SDK,
		fx:         script.Effects,
		tracer:     r.tracer,
	}
	exec.maxParallel = positive.Or(script.MaxParallel, DefaultMaxParallel)
	if script.IO != nil {
		maxBytes := positive.Or(script.IO.MaxBytes, DefaultIOMaxBytes)
		exec.fs = sandboxio.New(script.IO.Dir, sandboxio.Limits{MaxBytes: maxBytes, MaxFiles: script.IO.MaxFiles}).WithEffects(script.Effects)
		exec.fs.ContinueFrom(script.Effects.PrefixOpens()) // a resumed execution's (none for another)
	}
	ctx, span := r.startExecution(ctx, script)
	res := &result.Result{}
	defer endExecution(span, res)
	res.Error = r.execute(ctx, script, limits, exec, res)
	// No request outlives its execution.
	exec.calls.close()
	res.Logs = exec.logs.finish()
	if exec.fs != nil {
		// However the execution ended, its handles are closed and what it
		// left on disk is reported.
		exec.fs.CloseAll()
		res.FilesTouched, res.FilesOmitted = exec.fs.Touched()
	}
	if script.Effects.Traced() {
		endTrace(script.Effects, res)
	}
	// A denial the script let escape (or raised again) is kind denied,
	// whether it came from the sdk or io.
	if fx := script.Effects; res.Error != nil && (res.Error.Kind == result.Runtime || res.Error.Kind == result.IO) && fx.Denied(res.Error.Message) {
		res.Error.Kind = result.Denied
	}
	// A dry run, a plan run and a run with rules report their effects; a
	// replay's result is the recording's.
	if fx := script.Effects; fx.Mode() != effects.Replay && fx.Logs() {
		res.Effects, res.EffectsOmitted = fx.Effects()
		if res.Effects == nil {
			res.Effects = []effects.Effect{}
		}
		res.PlanUnused = fx.Unused()
		// An effect stopped when the script ended (a write whose handle
		// was left open) fails the execution all the same; a script that
		// had failed otherwise keeps its error, which says so too.
		if stop := fx.Err(); stop != nil {
			switch {
			case res.Error == nil:
				res.Error = &result.Error{Kind: result.Kind(stop.Kind), Message: stop.Message}
			case res.Error.Kind != result.Kind(stop.Kind):
				res.Error.Message += "; then, as its files were closed: " + stop.Message
			}
		}
	}
	res.Bound(limits.MaxOutputBytes)
	return res
}

func (r *Runtime) execute(ctx context.Context, script Script, limits Limits, exec *execution, res *result.Result) *result.Error {
	if limits.HeapBytes+MemoryOverheadBytes > r.maxMemory {
		return &result.Error{Kind: result.Limit, Message: fmt.Sprintf(
			"memory limit of %d bytes is more than this runtime allows (%d bytes)", limits.HeapBytes, r.maxMemory-MemoryOverheadBytes)}
	}
	if err := ctx.Err(); err != nil {
		return &result.Error{Kind: result.Timeout, Message: "execution was cancelled before it started"}
	}
	inst, err := r.acquire(ctx)
	if err != nil {
		return internalError(err)
	}
	defer r.discard(inst)
	return r.run(ctx, inst, script, limits, exec, res)
}

// run runs script on inst, a fresh instance.
func (r *Runtime) run(ctx context.Context, inst *instance, script Script, limits Limits, exec *execution, res *result.Result) *result.Error {
	inst.exec = exec
	ctx = withInstance(ctx, inst)

	// Source and arguments travel in one allocation: the source, then each
	// argument as a 32-bit length and its bytes.
	payload := make([]byte, 0, len(script.Source)+8*len(script.Args))
	payload = append(payload, script.Source...)
	for _, arg := range script.Args {
		payload = binary.LittleEndian.AppendUint32(payload, uint32(len(arg)))
		payload = append(payload, arg...)
	}
	ptr, err := inst.write(ctx, payload)
	if err != nil {
		if errors.Is(err, ErrOutOfMemory) {
			return &result.Error{Kind: result.Memory, Message: "the script and its arguments do not fit in the module's memory"}
		}
		return internalError(err)
	}

	inst.clock.restart()
	inst.done = ctx.Done() // the caller's: a stop by it is a cancellation
	// Host calls that wait (sdk) get the deadline with the cancellation,
	// once per execution rather than once per call. It stands still while
	// a person is asked about an effect: that time is not the script's.
	dl := newDeadline(ctx, limits.Timeout)
	defer dl.release()
	inst.deadline = dl
	script.Effects.OnWait(dl.pause)
	r.traceAsks(ctx, script.Effects)
	ctx = withInstance(dl, inst) // found first by every host call
	_, err = inst.run.Call(ctx,
		uint64(ptr), uint64(len(script.Source)),
		uint64(ptr)+uint64(len(script.Source)), uint64(len(script.Args)),
		uint64(limits.MaxResultBytes), limits.HeapBytes, runFlags(exec), exec.fx.Seed(randomSeed))

	if err != nil {
		return unwoundError(inst, err, limits)
	}
	return readOutcome(inst, res)
}

// randomSeed is a new execution's random seed (math.random's).
func randomSeed() uint64 { return uint64(rand.Uint32()) }

// runFlags are ts_run's flags: which optional libraries the script gets.
func runFlags(exec *execution) uint64 {
	if exec.fs != nil {
		return flagIO
	}
	return 0
}

// readOutcome reads ts_out: the result JSON, or the error's message, kind and line.
func readOutcome(inst *instance, res *result.Result) *result.Error {
	out, err := tryView(inst.mem, "outcome", inst.outAddr, outSize)
	if err != nil {
		return internalError(err)
	}
	ptr := binary.LittleEndian.Uint32(out[0:])
	length := binary.LittleEndian.Uint32(out[4:])
	line := int(int32(binary.LittleEndian.Uint32(out[8:])))
	kind := int32(binary.LittleEndian.Uint32(out[12:]))
	text, err := tryView(inst.mem, "outcome text", ptr, length)
	if err != nil {
		return internalError(err)
	}
	if kind == kindOK {
		res.Value = json.RawMessage(append([]byte(nil), text...))
		return nil
	}
	return &result.Error{Kind: kindName(kind), Message: string(text), Line: line}
}

func kindName(kind int32) result.Kind {
	switch kind {
	case kindSyntax:
		return result.Syntax
	case kindRuntime:
		return result.Runtime
	case kindMemory:
		return result.Memory
	case kindLimit:
		return result.Limit
	case kindIO:
		return result.IO
	case kindUpstream:
		return result.Upstream
	default:
		return result.Internal
	}
}

// unwoundError classifies an execution that unwound through the host.
func unwoundError(inst *instance, err error, limits Limits) *result.Error {
	var abort *frontEndAbort
	var thrown *luaThrow
	switch {
	case errors.As(err, &thrown) && thrown.status == luaErrMem:
		// Out of memory outside any protected call: loading the chunk or
		// pushing the arguments.
		return &result.Error{Kind: result.Memory, Message: fmt.Sprintf(
			"not enough memory: the script and its arguments exceed the memory limit of %d bytes", limits.HeapBytes)}
	case errors.Is(err, errEffectsStopped):
		stop := inst.exec.fx.Err()
		return &result.Error{Kind: result.Kind(stop.Kind), Message: stop.Message}
	case errors.Is(err, errStopRequested):
		if inst.stopReason == stoppedByCancellation {
			return &result.Error{Kind: result.Timeout, Message: "execution was cancelled"}
		}
		return &result.Error{Kind: result.Timeout, Message: fmt.Sprintf("script exceeded the time limit of %s", limits.Timeout)}
	case errors.As(err, &abort):
		if abort.line == abortOutOfMemory {
			return &result.Error{Kind: result.Memory, Message: abort.message}
		}
		if abort.line > 0 {
			return &result.Error{Kind: result.Syntax, Message: fmt.Sprintf("script:%d: %s", abort.line, abort.message), Line: abort.line}
		}
		return &result.Error{Kind: result.Internal, Message: abort.message}
	}
	return internalError(err)
}

func internalError(err error) *result.Error {
	return &result.Error{Kind: result.Internal, Message: err.Error()}
}
