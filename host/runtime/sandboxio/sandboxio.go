// Package sandboxio is the file system a script's io library works on: one
// directory, reached only through os.Root so that no path and no symbolic
// link leads outside it, with a cumulative write budget checked before any
// byte reaches the disk, a cap on open handles, bounded walks that never
// follow a link (Glob, Grep), and a record of the files the script wrote,
// appended to, renamed or removed, each by its real name: the file a
// symbolic link already in the directory leads to (resolve.go).
package sandboxio

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/runtime/result"
)

// MaxHandles is how many files a script may have open at once.
const MaxHandles = 64

// Limits on the paths a script names, checked before a path is split or
// walked: a path of many megabytes, or of thousands of levels, costs the
// host time and memory in every call that names it.
const (
	// MaxPathBytes bounds a path's length.
	MaxPathBytes = 4096
	// MaxNameBytes bounds one component of a path (as most file systems do).
	MaxNameBytes = 255
	// MaxPathDepth bounds the number of components of a path.
	MaxPathDepth = 64
)

// DefaultMaxFiles is how many files and directories one execution may
// create, by default.
const DefaultMaxFiles = 1000

// MaxTouchedReported bounds the entries Touched reports; the rest are
// counted.
const MaxTouchedReported = 1000

// writeBufferSize is the size of each writable handle's buffer.
const writeBufferSize = 64 << 10

// Kind says whether an Error is a sandbox refusal or I/O failure, or a
// configured budget.
type Kind int

// The kinds of Error.
const (
	KindIO Kind = iota
	KindLimit
)

// Error is a failed operation, worded for the script's author: it names the
// operation and the path as the script wrote it, never the host path.
type Error struct {
	Kind   Kind
	Op     string // "io.open", "read", ...
	Path   string // as the script wrote it; empty for handle operations
	Reason string
	// Err is the cause, when there is one.
	Err error
}

func (e *Error) Unwrap() error { return e.Err }

func (e *Error) Error() string {
	if e.Path == "" {
		return e.Op + ": " + e.Reason
	}
	return fmt.Sprintf("%s: '%s': %s", e.Op, e.Path, e.Reason)
}

// Limits are the budgets of one execution's file system.
type Limits struct {
	// MaxBytes is the cumulative write budget: bytes written, and the
	// holes a write past the end of a file leaves, which readers read as
	// zeros all the same.
	MaxBytes int64
	// MaxFiles is how many files and directories the execution may
	// create. Zero means DefaultMaxFiles.
	MaxFiles int
}

// FS is one execution's view of its io directory. It is not safe for
// concurrent use: one script uses it from one goroutine.
type FS struct {
	dir     string
	limits  Limits
	written int64
	created int
	root    *os.Root

	handles map[int32]*handle
	nextID  int32
	touched map[string]*touch
	order   []string

	// fx decides the unsafe effects (nil: a real run); ov is the overlay
	// they go to in a dry run, or are staged in until decided in a plan
	// run (nil otherwise).
	fx *effects.Run
	ov *overlay
	// apply is set in a plan run: an effect that proceeds is carried out
	// in the real directory (apply.go); applied names the files it
	// wrote or removed there.
	apply   bool
	applied map[string]bool

	// beforeReadDir, when set (by tests), is called before a walk reads a
	// directory: a test swaps the directory there.
	beforeReadDir func(dir string)
	// afterResolve, when set (by tests), is called once a path is
	// resolved to its real name: a test swaps a link in there.
	afterResolve func(name string)
	// walkRead and grepRead count the directory entries walks read and
	// the bytes Grep read, for tests that count work.
	walkRead int
	grepRead int64
}

type handle struct {
	file       *os.File
	name       string
	readable   bool
	writable   bool
	appendOnly bool
	writer     *bufio.Writer
	// pos is the handle's position and size the file's size as the handle
	// knows them (other handles to the same file may change the size): a
	// write at pos past size leaves a hole, which counts against the
	// budget.
	pos, size int64
	// staged is set for a file of the overlay (a dry run); changed once
	// the handle created, truncated or wrote its file: its close takes a
	// write effect.
	staged, changed bool
	// tmp is the overlay's file a staged handle works on. Like a real
	// file's descriptor, the handle follows it: a rename of it renames
	// the handle (renameStaged), and once no name has it (removed, or
	// replaced by a rename) the handle's writes land nowhere (current).
	tmp string
}

// current reports whether the staged handle h still works on the file
// its name has in the overlay: what its close describes and applies.
func (s *FS) current(h *handle) bool {
	tmp, ok := s.ov.files[h.name]
	return ok && tmp == h.tmp
}

type touch struct {
	appendOnly bool
	// removed: the script removed the file, or renamed it away, at some
	// point (what a dry run reports of a name it has no staged file for).
	removed bool
}

// New returns the file system over dir with the given budgets. The
// directory is created on the first write, not here.
func New(dir string, limits Limits) *FS {
	if limits.MaxFiles <= 0 {
		limits.MaxFiles = DefaultMaxFiles
	}
	return &FS{dir: dir, limits: limits, handles: map[int32]*handle{}, touched: map[string]*touch{}}
}

// CheckLength refuses a path of n bytes that is too long to be one, before
// it is copied or looked at.
func CheckLength(n int) error {
	if n > MaxPathBytes {
		return fmt.Errorf("path is too long (%d bytes; at most %d)", n, MaxPathBytes)
	}
	return nil
}

// Clean validates a script's path and returns it cleaned, relative and
// slash-separated ("." for the directory itself). Absolute paths, ".."
// components, NUL bytes, empty paths, names that are not valid UTF-8 (they
// could not be reported unambiguously) and paths past the limits above are
// refused.
func Clean(p string) (string, error) {
	if err := CheckLength(len(p)); err != nil {
		return "", err
	}
	switch {
	case p == "":
		return "", errors.New("empty path")
	case strings.IndexByte(p, 0) >= 0:
		return "", errors.New("path contains a NUL byte")
	case !utf8.ValidString(p):
		return "", errors.New("path is not valid UTF-8")
	case strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) || (len(p) >= 2 && p[1] == ':'):
		return "", errors.New("absolute paths are not allowed: paths are relative to the io directory")
	}
	depth := 0
	for part := range strings.SplitSeq(p, "/") {
		switch {
		case part == "..":
			return "", errors.New("'..' is not allowed: paths must stay inside the io directory")
		case len(part) > MaxNameBytes:
			return "", fmt.Errorf("a name in the path is too long (%d bytes; at most %d)", len(part), MaxNameBytes)
		case part != "" && part != ".":
			depth++
		}
	}
	if depth > MaxPathDepth {
		return "", fmt.Errorf("path is too deep (%d levels; at most %d)", depth, MaxPathDepth)
	}
	return path.Clean(p), nil
}

func refuse(op, p string, err error) *Error {
	return &Error{Kind: KindIO, Op: op, Path: p, Reason: err.Error(), Err: err}
}

// withoutPath returns the error an *fs.PathError wraps: the path may be the
// io directory's host path, which messages never show.
func withoutPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Err != nil {
		return pe.Err
	}
	return err
}

// ioError words an error of the os package for the script.
func ioError(op, p string, err error) *Error {
	reason := err.Error()
	var pe *fs.PathError
	if errors.As(err, &pe) {
		reason = pe.Err.Error()
	}
	if strings.Contains(reason, "escapes from parent") || strings.Contains(reason, "path escapes") {
		reason = "path escapes the io directory (through a symbolic link)"
	}
	return &Error{Kind: KindIO, Op: op, Path: p, Reason: reason, Err: err}
}

// openRoot opens the directory, creating it first if create is set.
func (s *FS) openRoot(create bool) error {
	if s.root != nil {
		return nil
	}
	if create {
		if err := os.MkdirAll(s.dir, 0o755); err != nil {
			return dirError(s.dir, true, err)
		}
	}
	root, err := os.OpenRoot(s.dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return notCreated{}
		}
		return dirError(s.dir, false, err)
	}
	s.root = root
	return nil
}

// modeFlags parses a Lua open mode.
func modeFlags(mode string) (flags int, readable, writable, appendOnly bool, ok bool) {
	m := strings.Replace(mode, "b", "", 1)
	switch m {
	case "r":
		return os.O_RDONLY, true, false, false, true
	case "w":
		return os.O_WRONLY | os.O_CREATE | os.O_TRUNC, false, true, false, true
	case "a":
		return os.O_WRONLY | os.O_CREATE | os.O_APPEND, false, true, true, true
	case "r+":
		return os.O_RDWR, true, true, false, true
	case "w+":
		return os.O_RDWR | os.O_CREATE | os.O_TRUNC, true, true, false, true
	case "a+":
		return os.O_RDWR | os.O_CREATE | os.O_APPEND, true, true, true, true
	}
	return 0, false, false, false, false
}

// Open opens a file like Lua's io.open and returns its handle.
func (s *FS) Open(p, mode string) (int32, error) {
	const op = "io.open"
	flags, readable, writable, appendOnly, ok := modeFlags(mode)
	if !ok {
		return 0, &Error{Kind: KindIO, Op: op, Path: p, Reason: fmt.Sprintf("invalid mode '%s' (use r, w, a, r+, w+ or a+, optionally with b)", mode)}
	}
	name, err := Clean(p)
	if err != nil {
		return 0, refuse(op, p, err)
	}
	if name == "." {
		return 0, refuse(op, p, errors.New("is a directory"))
	}
	if len(s.handles) >= MaxHandles {
		return 0, &Error{Kind: KindLimit, Op: op, Path: p, Reason: fmt.Sprintf("too many open files (at most %d; close some first)", MaxHandles)}
	}
	if s.ov != nil {
		return s.openStaged(op, p, name, flags, readable, writable, appendOnly)
	}
	create := flags&os.O_CREATE != 0
	if err := s.openRoot(create); err != nil {
		return 0, refuse(op, p, err)
	}
	if strings.HasSuffix(p, "/") {
		// A trailing slash names a directory, never the file x.txt.
		if info, err := s.root.Stat(name); err == nil && !info.IsDir() {
			return 0, refuse(op, p, errors.New("not a directory"))
		}
		return 0, refuse(op, p, errors.New("is a directory"))
	}
	if name, err = s.resolve(op, p, name, true); err != nil {
		return 0, err
	}
	if create {
		if err := s.makeParents(op, p, name); err != nil {
			return 0, err
		}
	}
	exists, err := s.openTarget(op, p, create)(s.root.Stat(name))
	if err != nil {
		return 0, err
	}
	// It may have been swapped since: open without blocking (openFlags)
	// or following a link, and check what was opened.
	f, err := openNoFollow(s.root, name, flags|openFlags, 0o644)
	if err != nil {
		return 0, ioError(op, p, err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return 0, ioError(op, p, err)
	}
	if why := notRegular(info); why != "" {
		f.Close()
		return 0, refuse(op, p, errors.New(why))
	}
	if !exists {
		s.created++
	}
	h := &handle{file: f, name: name, readable: readable, writable: writable, appendOnly: appendOnly, size: info.Size()}
	return s.addHandle(h), nil
}

// addHandle registers an opened handle (and the file it may write) and
// returns its id.
func (s *FS) addHandle(h *handle) int32 {
	if h.writable {
		s.touch(h.name, h.appendOnly)
	}
	s.nextID++
	s.handles[s.nextID] = h
	return s.nextID
}

// touch counts name among the files the execution wrote (appendOnly:
// only appended to, so far).
func (s *FS) touch(name string, appendOnly bool) {
	if t, seen := s.touched[name]; seen {
		t.appendOnly = t.appendOnly && appendOnly
		return
	}
	s.touched[name] = &touch{appendOnly: appendOnly}
	s.order = append(s.order, name)
}

// notRegular says why a file that is not regular cannot be opened, or
// returns "" for a regular file.
func notRegular(info fs.FileInfo) string {
	const only = ": only regular files can be opened"
	mode := info.Mode()
	switch {
	case mode.IsRegular():
		return ""
	case mode.IsDir():
		return "is a directory"
	case mode&fs.ModeNamedPipe != 0:
		return "is a named pipe (FIFO)" + only
	case mode&fs.ModeSocket != 0:
		return "is a socket" + only
	case mode&fs.ModeDevice != 0:
		return "is a device" + only
	}
	return "not a regular file" + only
}

// mayCreate refuses to create n more files or directories past the budget.
func (s *FS) mayCreate(op, p string, n int) error {
	if s.created+n > s.limits.MaxFiles {
		return &Error{Kind: KindLimit, Op: op, Path: p, Reason: fmt.Sprintf(
			"too many files and directories created (at most %d per execution)", s.limits.MaxFiles)}
	}
	return nil
}

// makeParents creates the parent directories of name, one level at a time
// so that each counts against the creation budget.
func (s *FS) makeParents(op, p, name string) error {
	dir := path.Dir(name)
	if dir == "." {
		return nil
	}
	var missing []string
	for d := dir; d != "."; d = path.Dir(d) {
		info, err := s.stat(d)
		if err == nil {
			if !info.IsDir() {
				return refuse(op, p, fmt.Errorf("not a directory: '%s' is a file", d))
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return ioError(op, p, err)
		}
		missing = append(missing, d)
	}
	if err := s.mayCreate(op, p, len(missing)); err != nil {
		return err
	}
	for i := len(missing) - 1; i >= 0; i-- {
		d := missing[i]
		switch out := s.fx.Pass(effects.Pending{Effect: func() effects.Effect { return effects.Effect{Op: effects.OpMkdir, Path: d} }}); out.Decision {
		case effects.Hold:
			s.ov.dirs[d] = true
		case effects.Stop:
			return s.stopped(op, p)
		case effects.Deny:
			return denied(op, p, out)
		default:
			if err := s.openRoot(true); err != nil { // a plan run's first change may make it
				return refuse(op, p, err)
			}
			if err := mkdirNoFollow(s.root, d, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return ioError(op, p, err)
			}
		}
		s.created++
	}
	return nil
}

func (s *FS) handle(op string, id int32) (*handle, error) {
	h, ok := s.handles[id]
	if !ok {
		return nil, &Error{Kind: KindIO, Op: op, Reason: "attempt to use a closed file"}
	}
	return h, nil
}

// Read reads up to len(buf) bytes; 0 with a nil error means end of file.
func (s *FS) Read(id int32, buf []byte) (int, error) {
	h, err := s.handle("read", id)
	if err != nil {
		return 0, err
	}
	if !h.readable {
		return 0, &Error{Kind: KindIO, Op: "read", Path: h.name, Reason: "file is not open for reading"}
	}
	if h.writer != nil {
		if err := h.writer.Flush(); err != nil {
			return 0, ioError("read", h.name, err)
		}
	}
	n, err := h.file.Read(buf)
	h.pos += int64(n)
	if err != nil && !errors.Is(err, io.EOF) {
		return n, ioError("read", h.name, err)
	}
	return n, nil
}

// Write writes data unless it would take the execution past its write
// budget, in which case nothing is written.
func (s *FS) Write(id int32, data []byte) error {
	h, err := s.handle("write", id)
	if err != nil {
		return err
	}
	if !h.writable {
		return &Error{Kind: KindIO, Op: "write", Path: h.name, Reason: "file is not open for writing"}
	}
	if h.appendOnly {
		// Writes land at the end, wherever the handle was.
		h.pos = h.size
	}
	// A write past the end of the file leaves a hole that readers read as
	// zeros: the file grows by it all the same.
	cost := int64(len(data)) + max(0, h.pos-h.size)
	if s.written+cost > s.limits.MaxBytes {
		what := fmt.Sprintf("this write of %d bytes", len(data))
		if cost > int64(len(data)) {
			what = fmt.Sprintf("this write of %d bytes at offset %d, past the end of the file (%d bytes),", len(data), h.pos, h.size)
		}
		return &Error{Kind: KindLimit, Op: "write", Path: h.name, Reason: fmt.Sprintf(
			"write budget exceeded: %s would bring the total to %d bytes, over the limit of %d",
			what, s.written+cost, s.limits.MaxBytes)}
	}
	s.written += cost
	h.changed = true
	h.pos += int64(len(data))
	h.size = max(h.size, h.pos)
	if h.writer == nil {
		// Created on the first write: a file opened, written a little and
		// closed thousands of times should not cost a 64 KiB buffer each.
		h.writer = bufio.NewWriterSize(h.file, writeBufferSize)
	}
	if _, err := h.writer.Write(data); err != nil {
		return ioError("write", h.name, err)
	}
	return nil
}

// Seek moves the file position like Lua's seek (whence 0 set, 1 cur, 2 end)
// and returns the new position.
func (s *FS) Seek(id int32, whence int, offset int64) (int64, error) {
	h, err := s.handle("seek", id)
	if err != nil {
		return 0, err
	}
	if h.writer != nil {
		if err := h.writer.Flush(); err != nil {
			return 0, ioError("seek", h.name, err)
		}
	}
	pos, err := h.file.Seek(offset, whence)
	if err != nil {
		return 0, ioError("seek", h.name, err)
	}
	h.pos = pos
	if info, err := h.file.Stat(); err == nil {
		h.size = info.Size()
	}
	return pos, nil
}

// Flush writes buffered bytes to the file.
func (s *FS) Flush(id int32) error {
	h, err := s.handle("flush", id)
	if err != nil {
		return err
	}
	if h.writer != nil {
		if err := h.writer.Flush(); err != nil {
			return ioError("flush", h.name, err)
		}
	}
	return nil
}

// Close flushes and closes a handle.
func (s *FS) Close(id int32) error {
	h, err := s.handle("close", id)
	if err != nil {
		return err
	}
	delete(s.handles, id)
	var flushErr error
	if h.writer != nil {
		flushErr = h.writer.Flush()
	}
	var applyErr error
	if flushErr == nil && h.staged && h.changed {
		// A handle whose file no name has any more wrote nothing that
		// lands: its effect says so, and nothing is applied or unstaged.
		current := s.current(h)
		switch out := s.fx.Pass(effects.Pending{Effect: func() effects.Effect { return s.writeEffect(h, h.file, current) }}); out.Decision {
		case effects.Proceed: // a plan run's write the plan holds, a write the rules allow
			if current {
				applyErr = s.applyWrite(h.name)
			}
		case effects.Stop:
			h.file.Close()
			return s.stopped("close", h.name)
		case effects.Deny:
			h.file.Close()
			if current {
				s.unstage(h.name)
			}
			return denied("close", h.name, out)
		}
	}
	if err := errors.Join(flushErr, h.file.Close()); err != nil {
		return ioError("close", h.name, err)
	}
	if applyErr != nil {
		return ioError("close", h.name, applyErr)
	}
	return nil
}

// List returns the sorted names of the entries of one directory. It reads
// them in batches, at most MaxWalkEntries of them, and stops when ctx is
// done: a directory of a million entries costs no more than the bound.
func (s *FS) List(ctx context.Context, p string) ([]string, error) {
	const op = "io.list"
	name, err := Clean(p)
	if err != nil {
		return nil, refuse(op, p, err)
	}
	if s.ov != nil {
		if err := s.openRootStaged(op, p); err != nil {
			return nil, err
		}
		// A dry run lists what it staged under the real name (realName).
		if name, err = s.resolve(op, p, name, true); err != nil {
			return nil, err
		}
		info, err := s.stat(name)
		if err != nil {
			return nil, ioError(op, p, err)
		}
		if !info.IsDir() {
			return nil, refuse(op, p, errors.New("not a directory"))
		}
		var real []string
		if _, onlyStaged := info.(dirInfo); !onlyStaged {
			if real, err = s.listReal(ctx, op, p, name); err != nil {
				return nil, err
			}
		}
		return s.listStaged(name, real), nil
	}
	if err := s.openRoot(false); err != nil {
		if name == "." && errors.Is(err, fs.ErrNotExist) {
			return []string{}, nil // the directory is created on first write
		}
		return nil, refuse(op, p, err)
	}
	return s.listReal(ctx, op, p, name)
}

// listReal lists the real directory name.
func (s *FS) listReal(ctx context.Context, op, p, name string) ([]string, error) {
	// Only a directory is opened: opening a FIFO would block the host,
	// beyond the reach of the script's timeout.
	info, err := s.root.Stat(name)
	if err != nil {
		return nil, ioError(op, p, err)
	}
	if !info.IsDir() {
		return nil, refuse(op, p, errors.New("not a directory"))
	}
	dir, err := s.root.OpenFile(name, os.O_RDONLY|dirFlags, 0)
	if err != nil {
		return nil, ioError(op, p, err)
	}
	defer dir.Close()
	if info, err = dir.Stat(); err != nil {
		return nil, ioError(op, p, err)
	}
	if !info.IsDir() {
		return nil, refuse(op, p, errors.New("not a directory"))
	}
	w := &walker{s: s, ctx: ctx, op: op}
	entries, err := w.readOpened(dir, p)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.name
	}
	sort.Strings(names)
	return names, nil
}

// Remove deletes a file; directories are refused.
func (s *FS) Remove(p string) error {
	const op = "os.remove"
	name, err := Clean(p)
	if err != nil {
		return refuse(op, p, err)
	}
	if name == "." {
		return refuse(op, p, errors.New("is a directory"))
	}
	if s.ov != nil {
		if err := s.openRootStaged(op, p); err != nil {
			return err
		}
	} else if err := s.openRoot(false); err != nil {
		return refuse(op, p, err)
	}
	// The link itself, when p is one, is what goes; links among its
	// directories are followed.
	if name, err = s.resolve(op, p, name, false); err != nil {
		return err
	}
	info, err := s.lstat(name)
	if err != nil {
		return ioError(op, p, err)
	}
	if strings.HasSuffix(p, "/") && !info.IsDir() {
		return refuse(op, p, errors.New("not a directory"))
	}
	if info.IsDir() {
		return refuse(op, p, errors.New("is a directory: os.remove deletes files only"))
	}
	switch out := s.fx.Pass(effects.Pending{Effect: func() effects.Effect { return effects.Effect{Op: effects.OpRemove, Path: name} }}); out.Decision {
	case effects.Hold:
		s.removeStaged(name)
	case effects.Stop:
		return s.stopped(op, p)
	case effects.Deny:
		return denied(op, p, out)
	default:
		if err := s.applyRemove(name); err != nil {
			return ioError(op, p, err)
		}
	}
	s.touchRemoved(name)
	return nil
}

// touchRemoved counts name among the files the execution changed, as
// removed.
func (s *FS) touchRemoved(name string) {
	s.touch(name, false)
	s.touched[name].removed = true
}

// OpenHandles is the number of open handles.
func (s *FS) OpenHandles() int { return len(s.handles) }

// CloseAll closes every handle and the directory. It is called when the
// execution ends, however it ended; the FS is unusable afterwards except
// for Touched.
func (s *FS) CloseAll() {
	for id := range s.handles {
		_ = s.Close(id)
	}
}

// Touched reports the final state on disk of every file the script wrote,
// appended to or removed, sorted by name: the first MaxTouchedReported of
// them, and how many more there were. Call it after CloseAll.
func (s *FS) Touched() (touched []result.FileTouched, omitted int) {
	names := append([]string(nil), s.order...)
	if s.apply {
		names = s.appliedOnly(names)
	}
	sort.Strings(names)
	if len(names) > MaxTouchedReported {
		omitted = len(names) - MaxTouchedReported
		names = names[:MaxTouchedReported]
	}
	out := make([]result.FileTouched, 0, len(names))
	if len(names) > 0 {
		s.openRoot(false) // open already, unless every name is a resumed prefix's (ContinueFrom)
	}
	for _, name := range names {
		entry := result.FileTouched{Name: name, Op: result.OpRemove}
		if s.ov != nil && !s.apply {
			if staged, ok := s.touchedStaged(name); ok {
				out = append(out, staged)
			}
			continue
		}
		if s.root != nil {
			// The name is the real one (realName): a file written through
			// a link is reported by its own name, with its size.
			info, err := s.root.Stat(name)
			if err == nil || !errors.Is(err, fs.ErrNotExist) {
				entry.Op = result.OpWrite
				if s.touched[name].appendOnly {
					entry.Op = result.OpAppend
				}
			}
			if err == nil {
				entry.Bytes = info.Size()
			}
		}
		out = append(out, entry)
	}
	if s.root != nil {
		s.root.Close()
		s.root = nil
	}
	s.dropOverlay()
	return out, omitted
}

// touchedStaged is the files_touched entry of name in a dry run: the file
// as the overlay has it. A name the overlay neither holds nor removed,
// and the script never removed, changed nothing (its change was denied
// or declined), and has none.
func (s *FS) touchedStaged(name string) (result.FileTouched, bool) {
	entry := result.FileTouched{Name: name, Op: result.OpRemove, DryRun: true}
	tmp, staged := s.ov.files[name]
	if !staged && !s.ov.removed[name] && !s.touched[name].removed {
		return entry, false
	}
	if staged {
		entry.Op = result.OpWrite
		if s.touched[name].appendOnly {
			entry.Op = result.OpAppend
		}
		if info, err := os.Stat(tmp); err == nil {
			entry.Bytes = info.Size()
		}
	}
	return entry, true
}

// openTarget checks what an open finds at a path, given the result of its
// stat (the real directory's, or the dry run's overlay's): anything but a
// regular file is refused before it is opened (opening a device can have
// effects, and opening a FIFO waits for its other end); a missing file is
// an error unless create, when it counts against the files the execution
// may create. It says whether the file exists.
func (s *FS) openTarget(op, p string, create bool) func(fs.FileInfo, error) (bool, error) {
	return func(info fs.FileInfo, err error) (bool, error) {
		switch {
		case err == nil:
			if why := notRegular(info); why != "" {
				return false, refuse(op, p, errors.New(why))
			}
			return true, nil
		case !create || !errors.Is(err, fs.ErrNotExist):
			return false, ioError(op, p, err)
		}
		return false, s.mayCreate(op, p, 1)
	}
}
