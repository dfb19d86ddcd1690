package luau

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io/fs"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/toolscript/toolscript/host/contract/effects/trace"
	"github.com/toolscript/toolscript/host/runtime/sandboxio"
)

// The host side of the io library (luau-build/shim/io.cpp). Every call moves
// bytes directly between a file and guest memory in bounded chunks the
// guest chooses, so host memory stays bounded whatever the file sizes.
//
// A failed call returns ioFailed or ioOverLimit and leaves its message
// pending; the guest fetches it (or a listing) with io_take and raises it.

// exportIO registers the io library's host functions.
func exportIO(b wazero.HostModuleBuilder) {
	exportIIIII(b, "io_open", tracedOpen(ioOpen))
	exportIIII(b, "io_read", ioRead)
	exportIIII(b, "io_write", ioWrite)
	exportJIIJ(b, "io_seek", ioSeek)
	exportII(b, "io_flush", ioFlush)
	exportII(b, "io_close", ioClose)
	exportIII(b, "io_list", ioList)
	exportIII(b, "io_remove", tracedRemove(ioRemove))
	exportIII(b, "io_take", ioTake)
	exportIII(b, "io_stat", ioStat)
	exportIII(b, "io_glob", ioGlob)
	exportI6(b, "io_grep", ioGrep)
	exportI7(b, "io_edit", tracedEdit(ioEdit))
	exportIIIII(b, "io_rename", tracedRename(ioRename))
}

var errIODisabled = &sandboxio.Error{Kind: sandboxio.KindIO, Op: "io", Reason: "io is not enabled for this execution"}

// ioExec returns the execution of an io call, nil with the failure status
// (its message pending) when io is disabled.
func ioExec(ctx context.Context) (*execution, int32) {
	exec := instanceFrom(ctx).exec
	if exec.fs == nil {
		return nil, exec.fail(errIODisabled)
	}
	return exec, 0
}

// status is an io call's result: n, or on error a failure status with the
// message left pending for io_take.
func (e *execution) status(n int32, err error) int32 {
	if err != nil {
		return e.fail(err)
	}
	return n
}

// fail leaves err's message pending and returns its status code.
func (e *execution) fail(err error) int32 {
	e.pending = []byte(err.Error())
	e.checkEffects()
	var se *sandboxio.Error
	if errors.As(err, &se) && se.Kind == sandboxio.KindLimit {
		return ioOverLimit
	}
	return ioFailed
}

func guestBytes(mod api.Module, ptr, n uint32) []byte { return view(mod.Memory(), "io buffer", ptr, n) }

func guestString(mod api.Module, ptr, n uint32) string { return string(guestBytes(mod, ptr, n)) }

// guestPath reads a path the script named for op, refusing one too long to
// be a path before copying it: the message shows its first bytes.
func guestPath(op string, mod api.Module, ptr, n uint32) (string, error) {
	if err := sandboxio.CheckLength(int(n)); err != nil {
		shown := guestBytes(mod, ptr, 40)
		return "", &sandboxio.Error{Kind: sandboxio.KindIO, Op: op, Path: strings.ToValidUTF8(string(shown), "?") + "...", Reason: err.Error()}
	}
	return guestString(mod, ptr, n), nil
}

// guestPattern reads a pattern the script gave op, refusing one longer
// than bound before copying it: the message shows its first bytes.
func guestPattern(op string, mod api.Module, ptr, n uint32, bound int) (string, error) {
	if int64(n) > int64(bound) {
		return "", sandboxio.LongPattern(op, guestString(mod, ptr, 201), int(n), bound) // shown cut, with "..."
	}
	return guestString(mod, ptr, n), nil
}

// ioPathExec is ioExec for a call on a path the script named for op: the
// execution and the path, or nil with the failure status (its message
// pending).
func ioPathExec(ctx context.Context, op string, mod api.Module, ptr, n uint32) (*execution, string, int32) {
	exec, fail := ioExec(ctx)
	if exec == nil {
		return nil, "", fail
	}
	path, err := guestPath(op, mod, ptr, n)
	if err != nil {
		return nil, "", exec.fail(err)
	}
	return exec, path, 0
}

// ioOpen is ts_host_io_open(path, pathLen, mode, modeLen): a handle.
func ioOpen(ctx context.Context, mod api.Module, pathPtr, pathLen, modePtr, modeLen uint32) int32 {
	exec, path, fail := ioPathExec(ctx, "io.open", mod, pathPtr, pathLen)
	if exec == nil {
		return fail
	}
	mode := guestString(mod, modePtr, min(modeLen, 16))
	return int32(exec.doIO(trace.IO{Op: trace.IOOpen, Path: path, Mode: mode}, nil, func() int64 {
		return int64(exec.status(exec.fs.Open(path, mode)))
	}))
}

// ioRead is ts_host_io_read(handle, buf, len): the bytes read.
func ioRead(ctx context.Context, mod api.Module, handle int32, ptr, n uint32) int32 {
	exec, fail := ioExec(ctx)
	if exec == nil {
		return fail
	}
	buf := guestBytes(mod, ptr, n)
	return int32(exec.doIO(trace.IO{Op: trace.IORead, Handle: handle, Len: int64(len(buf))}, buf, func() int64 {
		read, err := exec.fs.Read(handle, buf)
		return int64(exec.status(int32(read), err))
	}))
}

// ioWrite is ts_host_io_write(handle, buf, len).
func ioWrite(ctx context.Context, mod api.Module, handle int32, ptr, n uint32) int32 {
	exec, fail := ioExec(ctx)
	if exec == nil {
		return fail
	}
	data := guestBytes(mod, ptr, n)
	return int32(exec.doIO(trace.IO{Op: trace.IOWrite, Handle: handle, Len: int64(len(data))}, data, func() int64 {
		return int64(exec.status(0, exec.fs.Write(handle, data)))
	}))
}

// ioSeek is ts_host_io_seek(handle, whence, offset): the new position.
func ioSeek(ctx context.Context, _ api.Module, handle, whence int32, offset int64) int64 {
	exec, fail := ioExec(ctx)
	if exec == nil {
		return int64(fail)
	}
	return exec.doIO(trace.IO{Op: trace.IOSeek, Handle: handle, Whence: whence, Offset: offset}, nil, func() int64 {
		pos, err := exec.fs.Seek(handle, int(whence), offset)
		if err != nil {
			return int64(exec.fail(err))
		}
		return pos
	})
}

// ioFlush is ts_host_io_flush(handle).
func ioFlush(ctx context.Context, _ api.Module, handle int32) int32 {
	exec, fail := ioExec(ctx)
	if exec == nil {
		return fail
	}
	return int32(exec.doIO(trace.IO{Op: trace.IOFlush, Handle: handle}, nil, func() int64 {
		return int64(exec.status(0, exec.fs.Flush(handle)))
	}))
}

// ioClose is ts_host_io_close(handle).
func ioClose(ctx context.Context, _ api.Module, handle int32) int32 {
	exec, fail := ioExec(ctx)
	if exec == nil {
		return fail
	}
	return int32(exec.doIO(trace.IO{Op: trace.IOClose, Handle: handle}, nil, func() int64 {
		return int64(exec.status(0, exec.fs.Close(handle)))
	}))
}

// ioList is ts_host_io_list(path, len): it leaves the listing pending and
// returns its length.
func ioList(ctx context.Context, mod api.Module, ptr, n uint32) int32 {
	exec, path, fail := ioPathExec(ctx, "io.list", mod, ptr, n)
	if exec == nil {
		return fail
	}
	return int32(exec.doIO(trace.IO{Op: trace.IOList, Path: path}, nil, func() int64 {
		return int64(exec.names(exec.fs.List(ctx, path)))
	}))
}

// names leaves a listing pending and returns its length.
func (e *execution) names(names []string, err error) int32 {
	if err != nil {
		return e.fail(err)
	}
	// Names cannot contain NUL: it separates them.
	e.pending = []byte(strings.Join(names, "\x00"))
	return int32(len(e.pending))
}

// ioStat is ts_host_io_stat(path, len): it leaves the entry's record
// pending (statRecord bytes; a missing entry's kind and message) and
// returns its length.
func ioStat(ctx context.Context, mod api.Module, ptr, n uint32) int32 {
	exec, path, fail := ioPathExec(ctx, "io.stat", mod, ptr, n)
	if exec == nil {
		return fail
	}
	return int32(exec.doIO(trace.IO{Op: trace.IOStat, Path: path}, nil, func() int64 { return int64(exec.stat(path)) }))
}

// stat leaves the record of path pending and returns its length.
func (e *execution) stat(path string) int32 {
	info, err := e.fs.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		e.pending = append([]byte{statMissing}, err.Error()...)
		return int32(len(e.pending))
	}
	if err != nil {
		return e.fail(err)
	}
	kinds := map[string]byte{sandboxio.EntryFile: statFile, sandboxio.EntryDirectory: statDirectory, sandboxio.EntryLink: statLink}
	kind, ok := kinds[info.Kind]
	if !ok {
		kind = statOther
	}
	record := make([]byte, 1, statRecord)
	record[0] = kind
	record = binary.LittleEndian.AppendUint64(record, uint64(info.Size))
	e.pending = binary.LittleEndian.AppendUint64(record, uint64(info.Modified))
	return int32(len(e.pending))
}

// ioGlob is ts_host_io_glob(pattern, len): it leaves the matching paths
// pending, NUL-separated, and returns their length.
func ioGlob(ctx context.Context, mod api.Module, ptr, n uint32) int32 {
	exec, fail := ioExec(ctx)
	if exec == nil {
		return fail
	}
	pattern, err := guestPattern("io.glob", mod, ptr, n, sandboxio.MaxPathBytes)
	if err != nil {
		return exec.fail(err)
	}
	return int32(exec.doIO(trace.IO{Op: trace.IOGlob, Path: pattern}, nil, func() int64 {
		return int64(exec.names(exec.fs.Glob(ctx, pattern)))
	}))
}

// ioGrep is ts_host_io_grep(pattern, len, path, len, filter, len): it
// leaves the matches pending (grepHeader and the path and text of each)
// and returns their length.
func ioGrep(ctx context.Context, mod api.Module, patternPtr, patternLen, pathPtr, pathLen, filterPtr, filterLen uint32) int32 {
	exec, path, fail := ioPathExec(ctx, "io.grep", mod, pathPtr, pathLen)
	if exec == nil {
		return fail
	}
	pattern, err := guestPattern("io.grep", mod, patternPtr, patternLen, sandboxio.MaxPatternBytes)
	if err != nil {
		return exec.fail(err)
	}
	filter, err := guestPattern("io.grep", mod, filterPtr, filterLen, sandboxio.MaxPathBytes)
	if err != nil {
		return exec.fail(err)
	}
	return int32(exec.doIO(trace.IO{Op: trace.IOGrep, Path: path, Pattern: pattern, Filter: filter}, nil, func() int64 {
		return int64(exec.matches(exec.fs.Grep(ctx, pattern, path, filter)))
	}))
}

// matches leaves grep's matches pending and returns their length.
func (e *execution) matches(found []sandboxio.Match, err error) int32 {
	if err != nil {
		return e.fail(err)
	}
	var out []byte
	for _, m := range found {
		out = binary.LittleEndian.AppendUint32(out, uint32(len(m.Path)))
		out = binary.LittleEndian.AppendUint32(out, uint32(m.Line))
		out = binary.LittleEndian.AppendUint32(out, uint32(len(m.Text)))
		out = append(append(out, m.Path...), m.Text...)
	}
	e.pending = out
	return int32(len(out))
}

// ioEdit is ts_host_io_edit(path, len, old, len, new, len, all): how many
// occurrences it replaced.
func ioEdit(ctx context.Context, mod api.Module, pathPtr, pathLen, oldPtr, oldLen, newPtr, newLen, all uint32) int32 {
	exec, path, fail := ioPathExec(ctx, "io.edit", mod, pathPtr, pathLen)
	if exec == nil {
		return fail
	}
	old, replacement := guestBytes(mod, oldPtr, oldLen), guestBytes(mod, newPtr, newLen)
	req := trace.IO{Op: trace.IOEdit, Path: path, Len: int64(len(old)), SHA256: editDigest(old, replacement), All: all != 0}
	return int32(exec.doIO(req, nil, func() int64 {
		count, err := exec.fs.Edit(path, string(old), string(replacement), all != 0)
		return int64(exec.status(int32(count), err))
	}))
}

// editDigest is the digest an edit's trace entry holds of its old and new
// text: the old text's length (8 bytes, little-endian), the old text, the
// new text.
func editDigest(old, replacement []byte) string {
	h := sha256.New()
	h.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(old))))
	h.Write(old)
	h.Write(replacement)
	return hex.EncodeToString(h.Sum(nil))
}

// ioRename is ts_host_io_rename(from, len, to, len).
func ioRename(ctx context.Context, mod api.Module, fromPtr, fromLen, toPtr, toLen uint32) int32 {
	exec, from, fail := ioPathExec(ctx, "os.rename", mod, fromPtr, fromLen)
	if exec == nil {
		return fail
	}
	to, err := guestPath("os.rename", mod, toPtr, toLen)
	if err != nil {
		return exec.fail(err)
	}
	return int32(exec.doIO(trace.IO{Op: trace.IORename, Path: from, To: to}, nil, func() int64 {
		return int64(exec.status(0, exec.fs.Rename(from, to)))
	}))
}

// ioRemove is ts_host_io_remove(path, len).
func ioRemove(ctx context.Context, mod api.Module, ptr, n uint32) int32 {
	exec, path, fail := ioPathExec(ctx, "os.remove", mod, ptr, n)
	if exec == nil {
		return fail
	}
	return int32(exec.doIO(trace.IO{Op: trace.IORemove, Path: path}, nil, func() int64 {
		return int64(exec.status(0, exec.fs.Remove(path)))
	}))
}

// ioTake is ts_host_io_take(buf, len): it copies the pending message or
// listing into the guest's buffer and returns its length.
func ioTake(ctx context.Context, mod api.Module, ptr, n uint32) int32 {
	exec := instanceFrom(ctx).exec
	copied := copy(guestBytes(mod, ptr, n), exec.pending)
	exec.pending = nil
	return int32(copied)
}
