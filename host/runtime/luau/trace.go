package luau

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/contract/effects/trace"
	"github.com/toolscript/toolscript/host/runtime/result"
	"github.com/toolscript/toolscript/host/runtime/sandboxio"
)

// What an execution that records or replays (host/contract/effects) passes through
// its effects layer besides sdk calls: the clocks, the random seed
// (execute.go) and io. Each is read at the time of the call from the
// instance's current execution, so that instances made ahead in the pool
// from the memory template follow the execution they run.

// walltime is the instance's wall clock, which os.time and os.date read.
func (inst *instance) walltime() (int64, int32) {
	if exec := inst.exec; exec != nil && exec.fx.Traced() {
		return exec.fx.Wall(realWalltime)
	}
	return realWalltime()
}

func realWalltime() (int64, int32) {
	now := time.Now()
	return now.Unix(), int32(now.Nanosecond())
}

// nanotime is the instance's monotonic clock (instanceClock), which
// os.clock reads.
func (inst *instance) nanotime() int64 {
	if exec := inst.exec; exec != nil && exec.fx.Traced() {
		return exec.fx.Mono(inst.clock.nanotime)
	}
	return inst.clock.nanotime()
}

// doIO performs an io call: do, directly, or through the trace when the
// execution records or replays. buf is the guest's buffer of a read or a
// write (nil for other calls).
func (e *execution) doIO(req trace.IO, buf []byte, do func() int64) int64 {
	if !e.fx.Traced() {
		return do()
	}
	return e.traceIO(req, buf, do)
}

// traceIO passes an io call through the execution's trace: recording, do
// performs it and its outcome is recorded (the bytes a read put in buf, the
// digest of the bytes a write took from buf, the message or listing it left
// pending); replaying, the outcome comes from the trace and nothing is done.
func (e *execution) traceIO(req trace.IO, buf []byte, do func() int64) int64 {
	if req.Op == trace.IOWrite {
		req.SHA256 = digest(buf)
	}
	out, diverged := e.fx.IO(req, func(o *trace.IO) {
		o.Result = do()
		if o.Result < 0 || trace.LeavesPending(req.Op) {
			o.Pending = bytes.Clone(e.pending)
		}
		if req.Op == trace.IORead && o.Result > 0 {
			o.Data = bytes.Clone(buf[:min(int(o.Result), len(buf))])
		}
	})
	if diverged != nil {
		return int64(e.fail(&sandboxio.Error{Kind: sandboxio.KindIO, Op: "replay", Reason: diverged.Error()}))
	}
	if out.Result < 0 || trace.LeavesPending(req.Op) {
		e.pending = out.Pending
	}
	if req.Op == trace.IORead {
		copy(buf, out.Data)
	}
	return out.Result
}

// digest is the hex SHA-256 of data.
func digest(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// endTrace passes the end of the execution: recording, the files touched
// are written to the trace, and a trace that is not whole is the result's
// warning; replaying, they come from it, and a
// divergence is the execution's error (kind replay).
func endTrace(fx *effects.Run, res *result.Result) {
	var files json.RawMessage
	if !fx.Replaying() {
		files, _ = json.Marshal(res.FilesTouched)
	}
	if d := fx.Diverged(); d == nil {
		recorded, omitted, err := fx.End(files, res.FilesOmitted)
		if err != nil && fx.Recording() {
			// Once, however many entries the cut left out.
			res.Warnings = append(res.Warnings, "the recording of this execution is not whole: "+err.Error())
		}
		if fx.Replaying() && fx.Diverged() == nil {
			res.FilesTouched, res.FilesOmitted = nil, omitted
			if err := json.Unmarshal(recorded, &res.FilesTouched); err != nil {
				res.Error = &result.Error{Kind: result.Replay, Message: "the trace's files_touched: " + err.Error()}
			}
		}
	}
	if d := fx.Diverged(); d != nil {
		res.Error = &result.Error{Kind: result.Replay, Message: d.Error()}
		res.FilesTouched, res.FilesOmitted = nil, 0
	}
}
