package mcpserver

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/contract/effects/trace"
	"github.com/toolscript/toolscript/host/contract/sdkcall"
	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/host/runtime/result"
	"github.com/toolscript/toolscript/host/runtime/sandboxio"
	"github.com/toolscript/toolscript/host/serve/auth"
	"github.com/toolscript/toolscript/host/serve/requeststate"
	"github.com/toolscript/toolscript/internal/syncbuf"
)

// Paused executions (MCP 2026-07-28). A rule asks a person; the client
// of the call can be asked only by the call's result: execute_script
// answers input_required, with the question as an elicitation and a
// sealed requestState (host/serve/requeststate), and the client retries
// the call with the person's answer and the state.
//
// The execution that asked waits in this process, paused in its Ask, for
// at most the approval timeout; a retry that reaches this process while
// it waits continues it in place. A retry that reaches another replica
// (or this one after the wait ended) resumes it from the state: the
// prefix's trace is replayed, repeating no effect, and the execution
// goes on live from the effect that was asked (resume.go). The result is
// the same either way.

// The bounds of paused executions held in place. Past them an execution
// is not held (it stops at once, its state still resumable by replay).
// A held execution keeps its wasm instance and its trace in memory, and
// no slot: the bytes it may hold (pausedBytes) are bounded too, one
// user's and all users', so that paused executions cannot hold more
// memory than a few running ones. A heap limit so large that one
// execution passes them raises them to one execution of one user's, and
// four in all (pausedTable.fit).
const (
	maxPaused             = 256
	maxPausedPerUser      = 16
	maxPausedBytes        = 2 << 30
	maxPausedBytesPerUser = 512 << 20
	// The host memory budgets every user's calls share are held by
	// paused executions to a quarter of max_host_bytes_total's default
	// at most: a few paused executions cannot make other calls fail.
	maxPausedHostBytes        = 16 << 20
	maxPausedHostBytesPerUser = 4 << 20
)

// The bounds of the traces that executions which may pause record to
// memory (every response of every call they make: their prefixes), all
// users' and one user's, running and paused. Past one a recording is cut
// at its last whole entry, the execution goes on, and a pause after the
// cut resumes only in place, saying why.
const (
	maxRecordedBytes        = 512 << 20
	maxRecordedBytesPerUser = 128 << 20
)

// recordToMemory is a memory recording of owner's execution within the
// server's bounds of them (releaseRecording gives its bytes back).
func (s *Server) recordToMemory(owner string, h trace.Header) *trace.Writer {
	w, _ := trace.NewWriterWithin(&syncbuf.Buffer{}, h, s.recordings, owner) // to memory: it does not fail
	return w
}

// releaseRecording gives back what a memory recording held, once it is
// closed and dropped.
func (s *Server) releaseRecording(w *trace.Writer) {
	if s.recordings != nil {
		w.Release()
	}
}

// running is an execution that may pause: its script runs on a goroutine
// of its own, detached from the call that started it, and tells the
// call holding it what it did next (events).
type running struct {
	id     string
	owner  string // the user's scope
	events chan event
	// answers carries the person's answer to the question the execution
	// waits on. waiting is the upstream server's request it waits on
	// instead (nil while it waits on a question), set by the call that
	// holds it before the table holds it.
	answers chan effects.Answer
	waiting *upstreamInput
	cancel  context.CancelFunc
	// x is the execution as its first call prepared it.
	x *execution
	// memory is the trace a pause keeps the prefix of (nil when the
	// execution records elsewhere, or cannot pause on a question).
	memory *trace.Writer
	// request is the weight of the message of the call that started r
	// (RequestWeight): r's context keeps that call, and so its message.
	request int64
	// bytes is what the table counts of r while it holds it; held is
	// the hold under way, which its wait's end finds r by (nil when
	// none: a retry took r on, and the wait keeps nothing of it).
	bytes, hostBytes int64
	held             *holding
}

// hostBytesHeld is how many bytes of the host memory budgets r's sdk
// holds: responses of a parallel batch the script has not taken, the
// batch paused on a later call.
func (r *running) hostBytesHeld() int64 { return hostBytesOf(r.x.script.SDK) }

// hostBytesOf is how many bytes of the host memory budgets the calls of
// an execution's sdk hold now.
func hostBytesOf(sdk sdkcall.Caller) int64 {
	if h, ok := sdk.(sdkcall.Holder); ok {
		return h.HostBytesHeld()
	}
	return 0
}

// holding is one hold of a paused execution: the end of its wait finds
// the execution through it, so that the wait of a hold that ended (a
// retry took the execution on, and it may pause again) ends nothing and
// keeps nothing in memory.
type holding struct {
	r    *running
	wait *time.Timer
}

// pausedBytes is what r may hold in memory while paused: its wasm
// instance at its bound (the heap's and the runtime's own), the trace it
// records to memory, and the message of the call that started it.
func (r *running) pausedBytes() int64 {
	heap := r.x.script.Limits.WithDefaults().HeapBytes
	instance := int64(min(heap, math.MaxInt64-luau.MemoryOverheadBytes)) + luau.MemoryOverheadBytes
	return instance + r.memory.Held() + r.request
}

// event is what a running execution did next: it paused on a question
// or on an upstream server's request to the client, or it ended.
type event struct {
	question *effects.Question
	input    *upstreamInput
	res      *result.Result
}

// upstreamInput is an upstream MCP server's request to the client
// (sampling, elicitation, roots) that a client on 2026-07-28 answers by
// retrying the call (relayInput).
type upstreamInput struct {
	id      string
	request mcp.InputRequest
	answer  chan json.RawMessage // the client's answer (buffered: one)
}

// pausing is the Asker of a running execution: each Ask is an event
// for the call that holds the execution, and waits for the answer the
// next call brings.
type pausing struct {
	r       *running
	ctx     context.Context
	timeout time.Duration
}

func (p *pausing) Ask(q effects.Question) (effects.Answer, error) {
	select {
	case p.r.events <- event{question: &q}:
	case <-p.ctx.Done():
		return effects.Cancel, p.ctx.Err()
	}
	t := time.NewTimer(p.timeout)
	defer t.Stop()
	select {
	case a := <-p.r.answers:
		return a, nil
	case <-t.C:
		return effects.Cancel, fmt.Errorf("no answer within %s", p.timeout)
	case <-p.ctx.Done():
		return effects.Cancel, p.ctx.Err()
	}
}

// pausedTable holds the executions waiting for a person's answer, by id,
// counting them, the bytes of memory they may hold and the bytes of the
// host memory budgets they hold, in all and by user.
type pausedTable struct {
	mu                      sync.Mutex
	byID                    map[string]*running
	count, bytes, hostBytes account
	// maxBytes and maxUserBytes bound the bytes held (zero:
	// maxPausedBytes, maxPausedBytesPerUser).
	maxBytes, maxUserBytes int64
}

// account counts what the paused executions hold, in all and by user.
type account struct {
	all    int64
	byUser map[string]int64
}

// fits says whether n more of owner's stay within max in all and maxUser
// of one user's.
func (a *account) fits(owner string, n, max, maxUser int64) bool {
	return n <= max-a.all && n <= maxUser-a.byUser[owner]
}

func (a *account) add(owner string, n int64) {
	if a.byUser == nil {
		a.byUser = map[string]int64{}
	}
	a.all += n
	a.byUser[owner] += n
}

func (a *account) sub(owner string, n int64) {
	a.all -= n
	if a.byUser[owner] -= n; a.byUser[owner] <= 0 {
		delete(a.byUser, owner)
	}
}

// fit makes t's bounds of bytes room for an execution of heap bytes of
// heap: one of one user's, four in all.
func (t *pausedTable) fit(heap uint64) {
	one := (&running{x: &execution{script: luau.Script{Limits: luau.Limits{HeapBytes: heap}}}}).pausedBytes()
	t.maxBytes, t.maxUserBytes = max(maxPausedBytes, 4*one), max(maxPausedBytesPerUser, one)
}

// hold keeps r until a retry takes it or wait passes (then it forgets r
// and stops it); false when the bounds leave no room.
func (t *pausedTable) hold(r *running, wait time.Duration) bool {
	n, host := r.pausedBytes(), r.hostBytesHeld()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byID == nil {
		t.byID = map[string]*running{}
	}
	if t.maxBytes == 0 {
		t.maxBytes, t.maxUserBytes = maxPausedBytes, maxPausedBytesPerUser
	}
	if !t.count.fits(r.owner, 1, maxPaused, maxPausedPerUser) || !t.bytes.fits(r.owner, n, t.maxBytes, t.maxUserBytes) ||
		!t.hostBytes.fits(r.owner, host, maxPausedHostBytes, maxPausedHostBytesPerUser) {
		return false
	}
	r.bytes, r.hostBytes = n, host
	h := &holding{r: r}
	r.held = h
	h.wait = time.AfterFunc(wait, func() {
		if r := t.expire(h); r != nil { // no retry took it on
			r.cancel()
		}
	})
	t.byID[r.id] = r
	t.count.add(r.owner, 1)
	t.bytes.add(r.owner, n)
	t.hostBytes.add(r.owner, host)
	return true
}

// holdHost counts n bytes of the host memory budgets that an execution of
// owner's holds while it waits in its call for a person (inCallAsker),
// within the bounds of the paused executions'; release gives them back.
func (t *pausedTable) holdHost(owner string, n int64) (release func(), err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.hostBytes.fits(owner, n, maxPausedHostBytes, maxPausedHostBytesPerUser) {
		return nil, fmt.Errorf("it holds %d bytes of responses the script has not taken, and executions waiting for a person hold at most %d MiB of the host memory budgets, %d MiB of one user's",
			n, maxPausedHostBytes>>20, maxPausedHostBytesPerUser>>20)
	}
	t.hostBytes.add(owner, n)
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		t.hostBytes.sub(owner, n)
	}, nil
}

// take removes and returns the execution id names, when owner holds it.
func (t *pausedTable) take(id, owner string) *running {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.byID[id]
	if r == nil || r.owner != owner {
		return nil
	}
	t.drop(r)
	return r
}

// holds says whether the execution id names is held for owner.
func (t *pausedTable) holds(id, owner string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.byID[id]
	return r != nil && r.owner == owner
}

// expire forgets the execution of h, whose wait ended, and returns it;
// nil when h ended otherwise (a retry took it on).
func (t *pausedTable) expire(h *holding) *running {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := h.r
	if r == nil || t.byID[r.id] != r || r.held != h {
		return nil
	}
	t.drop(r)
	return r
}

func (t *pausedTable) drop(r *running) {
	delete(t.byID, r.id)
	if h := r.held; h != nil {
		h.wait.Stop()
		h.r, r.held = nil, nil
	}
	t.count.sub(r.owner, 1)
	t.bytes.sub(r.owner, r.bytes)
	t.hostBytes.sub(r.owner, r.hostBytes)
}

// hold keeps r for the retry until the approval timeout passes (then it
// stops, unless a retry took it on); false when the bounds leave no room.
func (s *Server) hold(r *running) bool {
	return s.pausedRuns.hold(r, s.cfg.approvalTimeout())
}

// newExecutionID returns a random id for a running execution.
func newExecutionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// start runs x's script on a goroutine of its own, as an execution that
// may pause: for an upstream server's request to the client, and, when
// ask, to ask a person about an effect (its rules' Asker), both through
// the call's result.
func (s *Server) start(ctx context.Context, x *execution, ask bool) *running {
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(s.stopped, cancel)
	r := &running{id: newExecutionID(), owner: ownerOf(ctx), events: make(chan event), answers: make(chan effects.Answer, 1), cancel: cancel, x: x}
	if c := callFrom(ctx); c != nil {
		r.request = RequestWeight(c.raw)
	}
	script := x.script
	var memory *trace.Writer
	if ask && !script.Effects.Traced() {
		// The prefix a pause keeps: the execution records to memory.
		sum := sha256.Sum256(script.Source)
		memory = s.recordToMemory(r.owner, trace.Header{Toolscript: s.cfg.Version, ScriptSHA256: hex.EncodeToString(sum[:])})
		script.Effects.Record(memory)
	} else {
		// A resumed execution's own (resumeByReplay), if any: r ends it.
		memory, x.recording = x.recording, nil
	}
	r.memory = memory
	if ask {
		script.Effects.WithAsker(&pausing{r: r, ctx: rctx, timeout: s.cfg.approvalTimeout()})
	}
	gateway := s.gateway(ctx, nil)
	gateway.Request = s.relayInput(ctx, rctx, r, gateway)
	go func() {
		defer stop()
		defer cancel()
		if memory != nil {
			defer func() {
				memory.Close()
				s.releaseRecording(memory)
			}()
		}
		res := s.cfg.Runtime.Execute(sdkcall.WithClient(rctx, gateway), script)
		select {
		case r.events <- event{res: res}:
		case <-rctx.Done():
		}
	}()
	return r
}

// await waits for r's next event on behalf of the call whose context is
// ctx: its end is the call's result; a pause is the call's input_required
// result, and r is held for the retry. A call that ends first (cancelled)
// stops r.
func (s *Server) await(ctx context.Context, x *execution, r *running) (*mcp.CallToolResult, error) {
	select {
	case ev := <-r.events:
		if ev.res != nil {
			x.res = ev.res
			if s.cfg.IO == nil {
				explainDisabledIO(x.res, x.script.Source)
			}
			return s.holdResponse(ctx, x.call.User, x.res), nil
		}
		if ev.input != nil {
			return s.pausedForInput(x, r, ev.input)
		}
		return s.paused(ctx, x, r, *ev.question)
	case <-ctx.Done():
		r.cancel()
		x.res = &result.Result{Error: &result.Error{Kind: result.Timeout, Message: "execution was cancelled"}}
		return cancelled(), nil
	}
}

// pausedForInput answers the call whose execution r waits for the answer
// to an upstream server's request: input_required, with that request, and
// a state that resumes the execution only here (the upstream's request
// waits in this process).
func (s *Server) pausedForInput(x *execution, r *running, in *upstreamInput) (*mcp.CallToolResult, error) {
	st := &requeststate.State{Binding: x.binding, Expiry: time.Now().Add(s.cfg.approvalTimeout()), Execution: r.id,
		InPlaceOnly: "an upstream MCP server waits in it for the answer to its " + string(in.request.Method)}
	state, err := s.states.Seal(st)
	r.waiting = in
	if err == nil && !s.hold(r) {
		err = errors.New(s.pausedRuns.bounds())
	}
	if err != nil {
		r.cancel()
		x.res = &result.Result{Error: &result.Error{Kind: result.Upstream, Message: "an upstream server's " + string(in.request.Method) + " cannot wait for the client: " + err.Error()}}
		return toolResult(x.res), nil
	}
	x.paused = true
	return &mcp.CallToolResult{Result: mcp.Result{ResultType: mcp.ResultTypeInputRequired},
		MultiRoundTripResult: mcp.MultiRoundTripResult{InputRequests: mcp.InputRequests{in.id: in.request}, RequestState: state}}, nil
}

// bounds says what bounds the paused executions t holds.
func (t *pausedTable) bounds() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	total, user := cmp.Or(t.maxBytes, maxPausedBytes), cmp.Or(t.maxUserBytes, maxPausedBytesPerUser)
	return fmt.Sprintf("this server holds %d paused executions (%d MiB of their memory, %d MiB of the host memory budgets), %d of one user (%d MiB, %d MiB), at most",
		maxPaused, total>>20, maxPausedHostBytes>>20, maxPausedPerUser, user>>20, maxPausedHostBytesPerUser>>20)
}

// ownerOf is who owns the executions of the call whose context is ctx:
// its user (every call of stdio's one user is the zero User's).
func ownerOf(ctx context.Context) string {
	user, _ := auth.UserFrom(ctx)
	return user.Issuer + "\x00" + user.Subject
}

// ownSealer is a sealer with a random key of the process's own.
func ownSealer() (*requeststate.Sealer, error) {
	key, err := requeststate.NewKey()
	if err != nil {
		return nil, err
	}
	return requeststate.NewSealer("", requeststate.NewSpent(0), key)
}

// sealPause seals the state that resumes x, paused by r on q: the trace
// of what it did so far and the digests of the files it touched as they
// are now. A prefix that cannot be taken (a file still open at the
// pause, a recording that is not the pause's) makes a state that resumes
// only in place; it says why to a retry that reaches another process,
// and sealPause returns why (inPlaceOnly).
func (s *Server) sealPause(ctx context.Context, x *execution, r *running, q effects.Question) (state, inPlaceOnly string, err error) {
	st := &requeststate.State{
		Binding:   x.binding,
		Expiry:    time.Now().Add(s.cfg.approvalTimeout()),
		Execution: r.id,
		Question:  q,
	}
	if err := s.takePrefix(ctx, x, st); err != nil {
		st.Prefix, st.Files = nil, nil
		st.InPlaceOnly = err.Error()
	}
	state, err = s.states.Seal(st)
	if err != nil && st.Prefix != nil {
		// Too large to travel, with nowhere to keep it: in place only.
		st.Prefix, st.Files = nil, nil
		st.InPlaceOnly = err.Error()
		state, err = s.states.Seal(st)
	}
	return state, st.InPlaceOnly, err
}

// takePrefix puts x's prefix and the digests of its files into st.
func (s *Server) takePrefix(ctx context.Context, x *execution, st *requeststate.State) error {
	ctx, cancel := context.WithTimeout(ctx, prefixWait)
	defer cancel()
	prefix, err := x.script.Effects.Prefix(ctx)
	if err != nil {
		return err
	}
	st.Prefix = prefix
	paths, err := x.script.Effects.PrefixFiles()
	if err != nil || len(paths) == 0 {
		return err
	}
	if x.script.IO == nil {
		return nil
	}
	st.Files, err = sandboxio.Digests(x.script.IO.Dir, paths)
	return err
}

// prefixWait bounds the wait of a pause for the calls still in flight
// before the effect asked about (a parallel batch's): their responses
// belong to the prefix.
const prefixWait = 30 * time.Second

// paused answers the call whose execution r asks q: input_required, with
// q as an elicitation and the sealed state that resumes the execution.
// A pause the bounds leave no room to hold stops at once: its state still
// resumes it by replay, unless it resumes only in place, and then the
// call's result is an error saying why.
func (s *Server) paused(ctx context.Context, x *execution, r *running, q effects.Question) (*mcp.CallToolResult, error) {
	state, inPlaceOnly, err := s.sealPause(ctx, x, r, q)
	if err != nil {
		r.cancel()
		x.res = &result.Result{Error: &result.Error{Kind: result.Internal, Message: "the paused execution cannot be sealed: " + err.Error()}}
		return toolResult(x.res), nil
	}
	r.waiting = nil
	if !s.hold(r) {
		r.cancel()
		if inPlaceOnly != "" {
			x.res = &result.Result{Error: &result.Error{Kind: result.Approval, Message: fmt.Sprintf(
				"the execution cannot wait for a person's answer: %s, and it could resume only in place (%s); the effect was not made",
				s.pausedRuns.bounds(), inPlaceOnly)}}
			return toolResult(x.res), nil
		}
	}
	x.paused = true
	return server.NewInputRequestBuilder(state).Elicit(approvalID, questionParams(q, s.cfg.Redactor)).ToolResult(), nil
}
