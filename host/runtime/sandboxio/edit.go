package sandboxio

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/toolscript/toolscript/host/contract/effects"
)

// Edit and Rename: the two changes besides a handle's writes and a
// removal. Edit is a write (it goes through Open and Write, so a dry run
// stages it, a plan holds it as a write with its diff, and it counts
// against max_bytes); Rename is an effect of its own (effects.OpRename).

// MaxEditBytes bounds the file Edit reads, and MaxEditResultBytes the
// file's new content: Edit holds both in memory.
const (
	MaxEditBytes       = 16 << 20
	MaxEditResultBytes = 64 << 20
)

// Edit replaces the first occurrence of the plain text old in the file p
// with new, or every occurrence when all is set, and returns how many it
// replaced. No occurrence is an error: nothing is written. The file's new
// content counts against the write budget, checked before the new content
// is built or anything is written.
func (s *FS) Edit(p, old, new string, all bool) (int, error) {
	const op = "io.edit"
	if old == "" {
		return 0, refuse(op, p, errors.New("the text to replace is empty"))
	}
	content, err := s.readSmall(op, p)
	if err != nil {
		return 0, err
	}
	n := strings.Count(content, old)
	if n == 0 {
		return 0, refuse(op, p, errors.New("the text to replace is not in the file (nothing was changed)"))
	}
	if !all {
		n = 1
	}
	// The new size is known before the new content is built: a short
	// text replaced by a long one everywhere in the file could make it
	// gigabytes, held by the host, were the budget checked after.
	cost := int64(len(content)) + int64(n)*(int64(len(new))-int64(len(old)))
	if s.written+cost > s.limits.MaxBytes {
		return 0, &Error{Kind: KindLimit, Op: op, Path: p, Reason: fmt.Sprintf(
			"write budget exceeded: rewriting the file (%d bytes) would bring the total to %d bytes, over the limit of %d",
			cost, s.written+cost, s.limits.MaxBytes)}
	}
	if cost > MaxEditResultBytes {
		return 0, &Error{Kind: KindLimit, Op: op, Path: p, Reason: fmt.Sprintf(
			"the edited file would be too large to hold (%d bytes; at most %d)", cost, MaxEditResultBytes)}
	}
	edited := strings.Replace(content, old, new, n)
	id, err := s.Open(p, "w")
	if err != nil {
		return 0, renamed(op, err)
	}
	err = s.Write(id, []byte(edited))
	if cerr := s.Close(id); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, renamed(op, err)
	}
	return n, nil
}

// renamed gives an error of the calls Edit makes the name of Edit.
func renamed(op string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		c := *e
		c.Op = op
		return &c
	}
	return err
}

// readSmall reads the regular file p whole, refusing one over
// MaxEditBytes.
func (s *FS) readSmall(op, p string) (string, error) {
	name, err := Clean(p)
	if err != nil {
		return "", refuse(op, p, err)
	}
	if err := s.openView(op, p); err != nil {
		return "", err
	}
	if name, err = s.resolve(op, p, name, true); err != nil {
		return "", err
	}
	f, err := s.openRead(name)
	if err != nil {
		return "", ioError(op, p, withoutPath(err))
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxEditBytes+1))
	if err != nil {
		return "", ioError(op, p, withoutPath(err))
	}
	if len(data) > MaxEditBytes {
		return "", &Error{Kind: KindLimit, Op: op, Path: p, Reason: fmt.Sprintf("the file is too large to edit (at most %d bytes)", MaxEditBytes)}
	}
	return string(data), nil
}

// Rename moves the file from to the path to, replacing a file there;
// directories and links are refused at either end, as os.remove refuses
// directories. The parent directories of to are created.
func (s *FS) Rename(from, to string) error {
	const op = "os.rename"
	src, err := s.renameEnd(op, from)
	if err != nil {
		return err
	}
	dst, err := s.renameEnd(op, to)
	if err != nil {
		return err
	}
	if err := s.renameChecks(op, from, src, to, dst); err != nil || src == dst {
		return err
	}
	if err := s.mayCopy(op, from, src); err != nil {
		return err
	}
	if err := s.makeParents(op, to, dst); err != nil {
		return err
	}
	switch out := s.fx.Pass(effects.Pending{Effect: func() effects.Effect { return effects.Effect{Op: effects.OpRename, Path: src, To: dst} }}); out.Decision {
	case effects.Hold:
		if err := s.renameStaged(src, dst); err != nil {
			return ioError(op, from, withoutPath(err))
		}
	case effects.Stop:
		return s.stopped(op, from)
	case effects.Deny:
		return denied(op, from, out)
	default:
		if err := s.applyRename(src, dst); err != nil {
			return ioError(op, from, withoutPath(err))
		}
	}
	s.touchRemoved(src)
	s.touch(dst, false)
	return nil
}

// renameEnd cleans one path of a rename and opens the directory.
func (s *FS) renameEnd(op, p string) (string, error) {
	name, err := Clean(p)
	if err != nil {
		return "", refuse(op, p, err)
	}
	if name == "." || strings.HasSuffix(p, "/") {
		return "", refuse(op, p, errors.New("is a directory: os.rename moves files only"))
	}
	if s.ov != nil {
		if err := s.openRootStaged(op, p); err != nil {
			return "", err
		}
	} else if err := s.openRoot(false); err != nil {
		return "", refuse(op, p, err)
	}
	// A link at either end is refused (renameChecks); links among the
	// directories are followed.
	return s.resolve(op, p, name, false)
}

// renameChecks refuses a rename of anything but a regular file, or onto
// anything but a regular file or nothing.
func (s *FS) renameChecks(op, from, src, to, dst string) error {
	info, err := s.lstat(src)
	if err != nil {
		return ioError(op, from, withoutPath(err))
	}
	if why := notMovable(info); why != "" {
		return refuse(op, from, errors.New(why))
	}
	info, err = s.lstat(dst)
	switch {
	case err == nil:
		if why := notMovable(info); why != "" {
			return refuse(op, to, errors.New(why))
		}
	case !errors.Is(err, fs.ErrNotExist):
		return ioError(op, to, withoutPath(err))
	}
	return nil
}

// notMovable says why an entry cannot be renamed or replaced by a rename.
func notMovable(info fs.FileInfo) string {
	mode := info.Mode()
	switch {
	case mode.IsRegular():
		return ""
	case mode.IsDir():
		return "is a directory: os.rename moves files only"
	case mode&fs.ModeSymlink != 0:
		return "is a symbolic link: os.rename moves regular files only"
	}
	return notRegular(info)
}

// applyRename renames for real: in a plan run the overlay's copy too.
func (s *FS) applyRename(src, dst string) error {
	if s.ov == nil {
		return renameNoFollow(s.root, src, dst)
	}
	if err := s.renameStaged(src, dst); err != nil {
		return err
	}
	s.applied[src], s.applied[dst] = true, true
	if s.root == nil {
		return nil
	}
	if _, err := s.root.Lstat(src); errors.Is(err, fs.ErrNotExist) {
		return nil // written in this run, not yet on disk
	}
	return renameNoFollow(s.root, src, dst)
}

// renameStaged is a rename in the overlay: the staged file of src, or a
// copy of the real one, becomes dst's, and src is hidden.
func (s *FS) renameStaged(src, dst string) error {
	ov := s.ov
	tmp, staged := ov.files[src]
	if !staged {
		f, err := s.root.OpenFile(src, os.O_RDONLY|openFlags, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		info, err := f.Stat()
		if err != nil || !info.Mode().IsRegular() {
			return errors.New("not a regular file")
		}
		out, path, err := s.newStaged(os.O_RDWR, info.Size())
		if err != nil {
			return err
		}
		ov.copied += info.Size()
		_, err = io.Copy(out, f)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			ov.discard(path)
			return err
		}
		tmp = path
	}
	if old, ok := ov.files[dst]; ok {
		ov.discard(old)
	}
	ov.files[dst] = tmp
	delete(ov.files, src)
	for _, h := range s.handles {
		if h.staged && h.tmp == tmp {
			h.name = dst // the handle's file is dst's now, as a descriptor follows a rename
		}
	}
	delete(ov.removed, dst)
	if s.root != nil {
		if _, err := s.root.Lstat(src); err == nil {
			ov.removed[src] = true
		}
	}
	return nil
}
