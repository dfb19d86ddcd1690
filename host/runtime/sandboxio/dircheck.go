package sandboxio

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// DirHint tells the user how to choose another io directory. It ends every
// DirError: the message reaches people through a script's error too.
const DirHint = "set --io-dir or TOOLSCRIPT_IO_DIR to an absolute path"

// DirError says why the io directory itself cannot be used. It names the
// directory as configured and, when that is relative, the path it resolved
// to: this is a configuration problem, and the one message in which the
// host path of the directory appears.
type DirError struct {
	Dir     string // as configured
	Abs     string // the absolute path, when Dir is relative
	Problem string // "is not a directory", "cannot be created", ...
	Err     error  // the cause, when there is one
}

func (e *DirError) Error() string {
	name := e.Dir
	if e.Abs != "" && e.Abs != e.Dir {
		name = fmt.Sprintf("%q (%s)", e.Dir, e.Abs)
	}
	if e.Err == nil {
		return fmt.Sprintf("the io directory %s %s (%s)", name, e.Problem, DirHint)
	}
	return fmt.Sprintf("the io directory %s %s: %v (%s)", name, e.Problem, e.Err, DirHint)
}

func (e *DirError) Unwrap() error { return e.Err }

// CheckDir reports whether dir can be an io directory: an existing
// directory this process can write in, or a path that can be created (its
// nearest existing ancestor is a directory this process can write in). It
// creates nothing. The error, a *DirError, says exactly what is wrong.
func CheckDir(dir string) error {
	e := &DirError{Dir: dir}
	if !filepath.IsAbs(dir) {
		if abs, err := filepath.Abs(dir); err == nil {
			e.Abs = abs
		}
	}
	info, err := os.Stat(dir)
	switch {
	case err == nil && !info.IsDir():
		e.Problem = "is not a directory"
		return e
	case err == nil:
		if err := writable(dir); err != nil {
			e.Problem, e.Err = "is not writable", err
			return e
		}
		return nil
	case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
		e.Problem, e.Err = "cannot be used", withoutPath(err)
		return e
	}
	// Missing: can it be created?
	e.Problem = "cannot be created"
	parent := filepath.Clean(dir)
	if e.Abs != "" {
		parent = e.Abs
	}
	for {
		next := filepath.Dir(parent)
		if next == parent {
			return nil // nothing exists up to the root: nothing to check
		}
		parent = next
		info, err := os.Stat(parent)
		switch {
		case err == nil && !info.IsDir():
			e.Err = fmt.Errorf("%s is not a directory", parent)
			return e
		case err == nil:
			if err := writable(parent); err != nil {
				e.Err = fmt.Errorf("%s: %w", parent, err)
				return e
			}
			return nil
		case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
			e.Err = err
			return e
		}
	}
}

// dirError is what the io library reports when the io directory cannot be
// created (create) or opened: CheckDir's diagnosis, or the cause itself.
func dirError(dir string, create bool, cause error) error {
	if err := CheckDir(dir); err != nil {
		return err
	}
	e := &DirError{Dir: dir, Problem: "cannot be opened", Err: withoutPath(cause)}
	if create {
		e.Problem = "cannot be created"
	}
	if abs, err := filepath.Abs(dir); err == nil && !filepath.IsAbs(dir) {
		e.Abs = abs
	}
	return e
}

// notCreated is the error of reading from an io directory that does not
// exist yet: the file the script names does not exist either.
type notCreated struct{}

func (notCreated) Error() string        { return "no such file or directory" }
func (notCreated) Is(target error) bool { return target == fs.ErrNotExist }
