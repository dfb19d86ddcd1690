package app

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/toolscript/toolscript/host/config"
	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/contract/effects/trace"
	"github.com/toolscript/toolscript/host/runtime/result"
)

// Recording and replaying executions (host/contract/effects, host/contract/effects/trace):
// the files a run records to or replays from, and the files `serve`
// records each execution to under [effects] record_dir.

// header is the trace header of a run of source with file, in mode.
func header(version string, source []byte, file *config.File, mode effects.Mode) trace.Header {
	sum := sha256.Sum256(source)
	h := trace.Header{Toolscript: version, ScriptSHA256: hex.EncodeToString(sum[:]), ConfigSHA256: file.Digest()}
	switch mode {
	case effects.DryRun:
		h.Mode = trace.ModeDryRun
	case effects.Plan:
		h.Mode = trace.ModePlan
	}
	return h
}

// recorder is a trace being written to a file (which the trace's Close,
// at the execution's end, closes).
type recorder struct {
	path string
	w    *trace.Writer
	// quota and user are whose bytes the trace takes (nil: none).
	quota *trace.Quota
	user  string
}

// discard closes the trace and removes its file, whose bytes its quota no
// longer counts: there was no execution to keep.
func (r *recorder) discard() {
	_ = r.w.Close()
	if r.path == "" {
		return
	}
	info, err := os.Stat(r.path)
	if err != nil {
		return
	}
	if os.Remove(r.path) == nil && r.quota != nil {
		r.quota.Remove(r.user, info.Size())
	}
}

// startRecording creates path and writes a trace's header to it. Unless
// exclusive, a file already at path is replaced: removed, then created
// again (truncating it instead would cost a flush of the new content when
// it is closed, on file systems that guard a rewritten file so). The
// trace is user's within q (nil: no quota).
func startRecording(path string, exclusive bool, h trace.Header, q *trace.Quota, user string) (*recorder, error) {
	if !exclusive {
		if info, err := os.Lstat(path); err == nil && !info.IsDir() {
			_ = os.Remove(path) // if it stays, the create below says why
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("recording: %w", err)
	}
	w, err := trace.NewWriterWithin(f, h, q, user)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("recording %s: %w", path, err)
	}
	return &recorder{path: path, w: w, quota: q, user: user}, nil
}

// finish closes the trace (the execution's end has closed it already) and
// says whether it is whole.
func (r *recorder) finish() error {
	if err := r.w.Close(); err != nil {
		return fmt.Errorf("recording %s: %w", r.path, err)
	}
	return nil
}

// openReplay opens the trace at path for a replay whose largest payload
// (max_response_bytes, or one io read) is payload bytes: a line longer
// than such a payload can make (trace.LineBytesFor) is refused as it is
// read. A trace that cannot be replayed (no header, another format, too
// large) is an execution result of kind replay, as a divergence is.
func openReplay(path string, payload int64) (*effects.Run, io.Closer, *trace.Header, *result.Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, nil, nil, usage(fmt.Errorf("replay: %w", err))
	}
	if info, err := f.Stat(); err == nil && info.Size() > trace.MaxBytes {
		f.Close()
		return nil, nil, nil, replayFailure(fmt.Sprintf("the trace %s is %d bytes, more than %d", path, info.Size(), trace.MaxBytes)), nil
	}
	r, h, err := trace.NewReader(f, trace.LineBytesFor(payload))
	if err != nil {
		f.Close()
		msg := err.Error()
		var te *trace.Error
		if errors.As(err, &te) {
			msg = (&effects.Divergence{Line: te.Line, Got: te.Reason}).Error()
		}
		return nil, nil, nil, replayFailure(msg), nil
	}
	return effects.NewReplay(r), f, &h, nil, nil
}

// explainDivergence adds to a replay's divergence that the script is not
// the one the trace recorded, when its digest says so.
func explainDivergence(res *result.Result, h *trace.Header, source []byte) {
	if res == nil || res.Error == nil || res.Error.Kind != result.Replay {
		return
	}
	sum := sha256.Sum256(source)
	if got := hex.EncodeToString(sum[:]); got != h.ScriptSHA256 {
		res.Error.Message += " (the script is not the one the trace recorded: its sha256 is " + got + ", the trace's " + h.ScriptSHA256 + ")"
	}
}

func replayFailure(msg string) *result.Result {
	return &result.Result{Value: []byte("null"), Logs: []string{}, FilesTouched: []result.FileTouched{},
		Error: &result.Error{Kind: result.Replay, Message: msg}}
}

// traceName is a new trace's file name in a record directory: the time
// (UTC, to the microsecond) and 64 random bits, so that two executions
// never share one.
func traceName(now time.Time) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102T150405.000000Z") + "-" + hex.EncodeToString(b[:]) + ".trace.jsonl"
}

// recordDir is where `serve` records each execution ([effects]
// record_dir): a trace of its own for each, in dir itself for the stdio
// mode's one user and in <dir>/<user.DirName()> for each hosted user, all
// of them within quota.
type recordDir struct {
	dir   string
	quota *trace.Quota
}

// openRecordDir makes dir when missing and counts what its traces hold
// already (every file in it and in its users' directories) against a new
// quota of total bytes, perUser of them for each user.
func openRecordDir(dir string, total, perUser int64) (*recordDir, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	q := trace.NewQuota(total, perUser)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		user := ""
		if rel, err := filepath.Rel(dir, path); err == nil && strings.Contains(rel, string(filepath.Separator)) {
			user = strings.SplitN(rel, string(filepath.Separator), 2)[0]
		}
		q.Add(user, info.Size())
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("counting the traces in it: %w", err)
	}
	return &recordDir{dir: dir, quota: q}, nil
}

// record starts recording an execution of user's ("": the stdio mode's
// one user; else a directory name of auth.User.DirName) with header h.
// When the user's bound or the total one is reached already, nothing is
// created: the recorder's path is "" and its trace, written nowhere, says
// why when it closes.
func (d *recordDir) record(user string, h trace.Header) (*recorder, error) {
	if d.quota.Full(user) != nil {
		w, err := trace.NewWriterWithin(nowhere{}, h, d.quota, user)
		if err != nil {
			return nil, fmt.Errorf("recording: %w", err)
		}
		return &recorder{w: w}, nil
	}
	dir := filepath.Join(d.dir, user)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("recording: %w", err)
	}
	return startRecording(filepath.Join(dir, traceName(time.Now())), true, h, d.quota, user)
}

// nowhere is the file of a trace its quota refuses from its first byte:
// never written.
type nowhere struct{}

func (nowhere) Write(p []byte) (int, error) {
	return 0, errors.New("a trace past its quota was written")
}
