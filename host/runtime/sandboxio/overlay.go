package sandboxio

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/toolscript/toolscript/host/contract/effects"
)

// The overlay of a dry run: copy-on-write over the io directory. Files the
// script writes are staged in a temporary directory outside the io
// directory (a file it updates in place, "a" or "r+", is copied there
// first); the files it removes are hidden; the directories it creates are
// names in memory. Reads of a staged file read it, listings merge the
// overlay with the real directory, and the real directory is never opened
// for writing, nor created. Staged files are files rather than memory so
// that a handle works on them as on real ones, in bounded chunks, whatever
// their size; the bytes written to them count against the same write
// budget (max_bytes) and the files and directories created against the
// same max_files. The temporary directory is removed when the execution
// ends (Touched).
type overlay struct {
	// tmp is the temporary directory, made on the first staged file kept
	// there.
	tmp string
	// files are the staged files: script path to the file in tmp, or to
	// a memory file of mem.
	files map[string]string
	// mem are the memory files staged files are kept in (memoryFile),
	// open until the overlay is dropped; memCopied is how many bytes of
	// real files were copied into them.
	mem       []*os.File
	memCopied int64
	// copied is how many bytes of real files were copied into the
	// overlay, in memory or not (MaxStagedCopyBytes).
	copied int64
	// removed are real files the script removed.
	removed map[string]bool
	// dirs are directories the script created.
	dirs map[string]bool
	next int
}

func newOverlay() *overlay {
	return &overlay{files: map[string]string{}, removed: map[string]bool{}, dirs: map[string]bool{}}
}

// WithEffects makes s pass its unsafe effects (writes, removals,
// directory creation) through run: in a dry run they go to an overlay and
// are logged, and the real directory is left as it is. Call it before the
// first operation.
func (s *FS) WithEffects(run *effects.Run) *FS {
	s.fx = run
	if run.Stages() {
		s.ov = newOverlay()
	}
	if run.Applies() {
		s.apply, s.applied = true, map[string]bool{}
	}
	return s
}

// dirInfo is the fs.FileInfo of a directory that exists in the overlay
// only.
type dirInfo string

func (d dirInfo) Name() string     { return path.Base(string(d)) }
func (dirInfo) Size() int64        { return 0 }
func (dirInfo) Mode() fs.FileMode  { return fs.ModeDir | 0o755 }
func (dirInfo) ModTime() time.Time { return time.Time{} }
func (dirInfo) IsDir() bool        { return true }
func (dirInfo) Sys() any           { return nil }

// stat is root.Stat seen through the overlay (when there is one): a staged
// file's or directory's, nothing for a removed file, else the real one's.
func (s *FS) stat(name string) (fs.FileInfo, error) {
	return s.lookup(name, false)
}

// lstat is stat without following a final symbolic link.
func (s *FS) lstat(name string) (fs.FileInfo, error) {
	return s.lookup(name, true)
}

func (s *FS) lookup(name string, link bool) (fs.FileInfo, error) {
	if ov := s.ov; ov != nil {
		if tmp, ok := ov.files[name]; ok {
			return os.Stat(tmp)
		}
		if ov.dirs[name] || (name == "." && s.root == nil) {
			return dirInfo(name), nil
		}
		if ov.removed[name] {
			return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
		}
		if s.root == nil {
			return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
		}
	}
	if link {
		return s.root.Lstat(name)
	}
	return s.root.Stat(name)
}

// openRootStaged opens the real directory, when it exists, without ever
// creating it.
func (s *FS) openRootStaged(op, p string) error {
	if err := s.openRoot(false); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return refuse(op, p, err)
	}
	return nil
}

// openStaged is Open in a dry run.
func (s *FS) openStaged(op, p, name string, flags int, readable, writable, appendOnly bool) (int32, error) {
	if err := s.openRootStaged(op, p); err != nil {
		return 0, err
	}
	if strings.HasSuffix(p, "/") {
		if info, err := s.stat(name); err == nil && !info.IsDir() {
			return 0, refuse(op, p, errors.New("not a directory"))
		}
		return 0, refuse(op, p, errors.New("is a directory"))
	}
	name, err := s.resolve(op, p, name, true)
	if err != nil {
		return 0, err
	}
	create := flags&os.O_CREATE != 0
	if create {
		if err := s.makeParents(op, p, name); err != nil {
			return 0, err
		}
	}
	exists, err := s.openTarget(op, p, create)(s.stat(name))
	if err != nil {
		return 0, err
	}
	if writable && exists && flags&os.O_TRUNC == 0 {
		if err := s.mayCopy(op, p, name); err != nil {
			return 0, err
		}
	}
	var f *os.File
	staged := writable
	if tmp, ok := s.ov.files[name]; ok && !writable {
		f, err = os.Open(tmp)
		staged = true
	} else if !writable {
		f, err = s.root.OpenFile(name, flags|openFlags, 0)
	} else {
		// Kept content (append, update) is copied first; a truncating
		// open starts from nothing.
		f, err = s.stage(name, flags, exists && flags&os.O_TRUNC == 0)
	}
	if err != nil {
		return 0, ioError(op, p, withoutPath(err))
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return 0, ioError(op, p, withoutPath(err))
	}
	if why := notRegular(info); why != "" {
		f.Close()
		return 0, refuse(op, p, errors.New(why))
	}
	if !exists {
		s.created++
	}
	h := &handle{file: f, name: name, readable: readable, writable: writable, appendOnly: appendOnly,
		size: info.Size(), staged: staged, changed: writable && (!exists || flags&os.O_TRUNC != 0), tmp: s.ov.files[name]}
	return s.addHandle(h), nil
}

// stage opens the overlay's file for name for writing with the open
// flags of the script's mode (O_TRUNC, O_APPEND), making it when name has
// none yet: a copy of the real file when keep is set, else empty. It is
// always opened for reading too, so that its close can digest it.
func (s *FS) stage(name string, flags int, keep bool) (*os.File, error) {
	ov := s.ov
	mode := os.O_RDWR | flags&(os.O_TRUNC|os.O_APPEND)
	if tmp, ok := ov.files[name]; ok {
		return os.OpenFile(tmp, mode, 0)
	}
	var in *os.File
	var size int64
	if keep && s.root != nil {
		f, err := s.root.OpenFile(name, os.O_RDONLY|openFlags, 0)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		info, err := f.Stat()
		if err != nil || !info.Mode().IsRegular() {
			return nil, errors.New("not a regular file")
		}
		in, size = f, info.Size()
	}
	out, tmp, err := s.newStaged(mode, size)
	if err != nil {
		return nil, err
	}
	if in != nil {
		ov.copied += size
		_, err := io.Copy(out, in)
		if err == nil {
			_, err = out.Seek(0, io.SeekStart)
		}
		if err != nil {
			out.Close()
			ov.discard(tmp)
			return nil, err
		}
	}
	ov.files[name] = tmp
	delete(ov.removed, name)
	return out, nil
}

// The bounds of the overlay's memory: its files are memory files while
// the execution's write budget is at most maxMemoryWrites (which bounds
// what writes add to them) and the real files copied into them total at
// most maxMemoryCopies; past either, they are files of the temporary
// directory.
const (
	maxMemoryWrites = 64 << 20
	maxMemoryCopies = 16 << 20
)

// MaxStagedCopyBytes bounds the bytes of real files one execution's
// overlay copies (a file updated in place or renamed, kept apart until
// decided): they are outside the write budget, and a copy is not stopped
// by the deadline.
const MaxStagedCopyBytes = 256 << 20

// mayCopy refuses to copy the real file name into the overlay past
// MaxStagedCopyBytes; a file the overlay has already is not copied.
func (s *FS) mayCopy(op, p, name string) error {
	if s.ov == nil {
		return nil
	}
	if _, staged := s.ov.files[name]; staged {
		return nil
	}
	info, err := s.stat(name)
	if err != nil || s.ov.copied+info.Size() <= MaxStagedCopyBytes {
		return nil // an error is the caller's to report
	}
	return &Error{Kind: KindLimit, Op: op, Path: p, Reason: fmt.Sprintf(
		"the file (%d bytes) would be copied into the overlay of this dry run, plan run or run with rules, past its bound of %d bytes of real files copied per execution (%d so far): write a new file instead",
		info.Size(), MaxStagedCopyBytes, s.ov.copied)}
}

// newStaged makes a file of the overlay, open with mode, that copySize
// bytes of a real file are to be copied into: a memory file when the
// system has them and the overlay's memory stays within its bounds (no
// file system work: creating files in a directory costs a journalled
// file system tens to hundreds of microseconds each), else a file of the
// temporary directory. It returns the file and the path it reopens by.
func (s *FS) newStaged(mode int, copySize int64) (*os.File, string, error) {
	ov := s.ov
	if s.limits.MaxBytes <= maxMemoryWrites && ov.memCopied+copySize <= maxMemoryCopies {
		if mem, path, err := memoryFile(); err == nil {
			if out, err := os.OpenFile(path, mode, 0); err == nil {
				ov.mem = append(ov.mem, mem)
				ov.memCopied += copySize
				return out, path, nil
			}
			mem.Close()
		}
	}
	if ov.tmp == "" {
		if within(os.TempDir(), s.dir) {
			return nil, "", errors.New("the overlay of a dry run or a plan run would be inside the io directory (the temporary directory is in it): set TMPDIR elsewhere")
		}
		dir, err := os.MkdirTemp("", "toolscript-dry-run-")
		if err != nil {
			return nil, "", fmt.Errorf("cannot make the dry run's overlay: %w", err)
		}
		ov.tmp = dir
	}
	ov.next++
	tmp := filepath.Join(ov.tmp, strconv.Itoa(ov.next))
	out, err := os.OpenFile(tmp, mode|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, "", err
	}
	return out, tmp, nil
}

// discard forgets the staged file at tmp: a file of the temporary
// directory is removed; a memory file goes when the overlay is dropped.
func (ov *overlay) discard(tmp string) {
	if ov.tmp != "" && filepath.Dir(tmp) == ov.tmp {
		os.Remove(tmp)
	}
}

// within reports whether path is dir or inside it, links resolved where
// they exist.
func within(path, dir string) bool {
	resolve := func(p string) string {
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		return p
	}
	rel, err := filepath.Rel(resolve(dir), resolve(path))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// writeEffect is the effect of a staged handle's writes, taken when it is
// closed (f is its file, flushed and still open): the file's resulting
// size and sha256, and a diff against the real file when both are small
// text. When the handle's file is no longer current (removed, or replaced
// by a rename, since), the write left nothing.
func (s *FS) writeEffect(h *handle, file *os.File, current bool) effects.Effect {
	e := effects.Effect{Op: effects.OpWrite, Path: h.name}
	var f io.Reader = io.NewSectionReader(file, 0, 1<<62)
	if !current {
		f = strings.NewReader("")
	}
	hash := sha256.New()
	var small []byte
	n, _ := io.Copy(hash, io.TeeReader(io.LimitReader(f, effects.MaxDiffBytes+1), writerFunc(func(b []byte) { small = append(small, b...) })))
	more, _ := io.Copy(hash, f)
	n += more
	e.Bytes = &n
	e.SHA256 = hex.EncodeToString(hash.Sum(nil))
	if n <= effects.MaxDiffBytes && effects.IsText(small) && (s.fx.Mode() == effects.DryRun || s.fx.HasRules()) {
		if old, ok := s.realSmall(h.name); ok {
			e.Diff = s.fx.Diff(h.name, old, small)
		}
	}
	return e
}

// realSmall reads the real file name when it is at most MaxDiffBytes
// (nil, true when there is none; false when it cannot be diffed).
func (s *FS) realSmall(name string) ([]byte, bool) {
	if s.root == nil {
		return nil, true
	}
	f, err := s.root.OpenFile(name, os.O_RDONLY|openFlags, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, true
	}
	if err != nil {
		return nil, false
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() || info.Size() > effects.MaxDiffBytes {
		return nil, false
	}
	data, err := io.ReadAll(io.LimitReader(f, effects.MaxDiffBytes+1))
	if err != nil || len(data) > effects.MaxDiffBytes {
		return nil, false
	}
	if data == nil {
		data = []byte{}
	}
	return data, true
}

type writerFunc func([]byte)

func (w writerFunc) Write(b []byte) (int, error) {
	w(b)
	return len(b), nil
}

// removeStaged is the removal of name in a dry run: a staged file is
// dropped, a real one hidden.
func (s *FS) removeStaged(name string) {
	ov := s.ov
	if tmp, ok := ov.files[name]; ok {
		ov.discard(tmp)
		delete(ov.files, name)
	}
	if s.root != nil {
		if _, err := s.root.Lstat(name); err == nil {
			ov.removed[name] = true
		}
	}
}

// listStaged merges the real listing of directory name (nil when it has
// none) with the overlay.
func (s *FS) listStaged(name string, real []string) []string {
	ov := s.ov
	seen := make(map[string]bool, len(real))
	var out []string
	for _, n := range real {
		child := n
		if name != "." {
			child = name + "/" + n
		}
		if !ov.removed[child] {
			seen[n] = true
			out = append(out, n)
		}
	}
	add := func(child string) {
		if path.Dir(child) == name && !seen[path.Base(child)] {
			seen[path.Base(child)] = true
			out = append(out, path.Base(child))
		}
	}
	for child := range ov.files {
		add(child)
	}
	for child := range ov.dirs {
		add(child)
	}
	sort.Strings(out)
	if out == nil {
		out = []string{}
	}
	return out
}

// dropOverlay removes the overlay's temporary directory.
func (s *FS) dropOverlay() {
	if s.ov == nil {
		return
	}
	for _, f := range s.ov.mem {
		f.Close()
	}
	s.ov.mem = nil
	if s.ov.tmp != "" {
		os.RemoveAll(s.ov.tmp)
		s.ov.tmp = ""
	}
}
