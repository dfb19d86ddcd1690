package sandboxio

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"syscall"
)

// Symbolic links already in the io directory (a script cannot make one;
// the directory of `run` and stdio `serve` is the user's own). Every
// operation that opens or changes a file first resolves the script's path
// to its real name (realName): the name, inside the io directory, with no
// symbolic link in it, of the file the operation reaches. That name is the
// one every record shows: the effect a rule decides, a dry run lists, a
// plan holds and a person is asked about, the files touched, the handle's
// messages. The change itself is then made on that name without following
// any link (sys_unix.go): a link that appears in it between the two fails
// the operation, and never leads it to a file the records do not name.

// MaxLinkHops is how many symbolic links one path's resolution follows,
// as the kernel's bound (ELOOP): a loop, or a longer chain, is refused.
const MaxLinkHops = 40

// maxResolveSteps bounds the names one resolution looks up (each a walk
// of at most MaxPathDepth components through os.Root): links whose
// targets go down and up again cost no more than it.
const maxResolveSteps = 4 * MaxPathDepth

// linkError is a resolution the io directory refuses: a link that leads
// outside it, a loop, a chain or a path too long. It names the link.
type linkError struct {
	link, why string
}

func (e *linkError) Error() string {
	return fmt.Sprintf("%s (through the symbolic link '%s')", e.why, e.link)
}

// Reasons of a linkError (whyLoop takes MaxLinkHops).
const (
	whyEscapes = "path escapes the io directory"
	whyLong    = "the path, its symbolic links followed, is too long to resolve"
	whyLoop    = "too many levels of symbolic links (more than %d: a loop, or a chain too long)"
)

// notDirError is a path that goes on past a file, as if it were a
// directory.
type notDirError struct{ file string }

func (e *notDirError) Error() string {
	return fmt.Sprintf("not a directory: '%s' is a file", e.file)
}

// errLinkAppeared is the error of a change whose real name (realName) has
// a symbolic link in it by the time the change is made.
var errLinkAppeared = errors.New("a symbolic link appeared in the path after it was resolved: nothing was changed")

// resolve is realName for the operation op on the script's path p
// (cleaned: name), its error worded for the script.
func (s *FS) resolve(op, p, name string, final bool) (string, error) {
	real, err := s.realName(name, final)
	if err == nil {
		if s.afterResolve != nil {
			s.afterResolve(real)
		}
		return real, nil
	}
	var le *linkError
	var nd *notDirError
	if errors.As(err, &le) || errors.As(err, &nd) {
		return "", refuse(op, p, err)
	}
	return "", ioError(op, p, withoutPath(err))
}

// realName resolves name (cleaned) to the real name of what it reaches in
// the io directory, as the dry run's overlay has it: each symbolic link
// among its components is replaced by its target, at most MaxLinkHops of
// them; a link that leads outside (an absolute target, or too many
// "..") is an error. The final component is followed only when final is
// set (a removal or a rename acts on a link itself). What does not exist
// yet is kept as named: a file to be made at the end of a dangling link
// is made where the link leads.
func (s *FS) realName(name string, final bool) (string, error) {
	if s.root == nil {
		return name, nil // nothing exists yet, no link either
	}
	var real []string
	// todo is a stack: its last element is the next component.
	todo := pushPath(nil, name)
	hops, steps, link := 0, 0, ""
	for len(todo) > 0 {
		c := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		switch c {
		case "", ".":
			continue
		case "..": // only from a link's target: Clean refuses it in a script's path
			if len(real) == 0 {
				return "", &linkError{link: link, why: whyEscapes}
			}
			real = real[:len(real)-1]
			continue
		}
		next := path.Join(append(real, c)...)
		if len(todo) == 0 && !final {
			return next, nil
		}
		if steps++; steps > maxResolveSteps || len(real) >= MaxPathDepth {
			return "", &linkError{link: next, why: whyLong}
		}
		info, err := s.lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			return missing(next, todo)
		}
		if errors.Is(err, syscall.ENOTDIR) && len(real) > 0 {
			return "", &notDirError{file: path.Join(real...)}
		}
		if err != nil {
			return "", err
		}
		if info.Mode()&fs.ModeSymlink == 0 {
			real = append(real, c)
			continue
		}
		if hops++; hops > MaxLinkHops {
			return "", &linkError{link: next, why: fmt.Sprintf(whyLoop, MaxLinkHops)}
		}
		target, err := s.root.Readlink(next)
		if err != nil {
			return "", err
		}
		link = next
		if target == "" || filepath.IsAbs(target) || filepath.VolumeName(target) != "" || strings.HasPrefix(filepath.ToSlash(target), "/") {
			return "", &linkError{link: link, why: whyEscapes}
		}
		todo = pushPath(todo, filepath.ToSlash(target))
	}
	if len(real) == 0 {
		return ".", nil
	}
	return path.Join(real...), nil
}

// pushPath pushes the components of p on the stack todo, the first on
// top.
func pushPath(todo []string, p string) []string {
	parts := strings.Split(p, "/")
	for i := len(parts) - 1; i >= 0; i-- {
		todo = append(todo, parts[i])
	}
	return todo
}

// missing is the real name of a path whose component next does not
// exist: next and what follows it (the stack todo), which no link can
// change. A ".." after it is a path through nothing.
func missing(next string, todo []string) (string, error) {
	parts := []string{next}
	for i := len(todo) - 1; i >= 0; i-- {
		switch todo[i] {
		case "", ".":
		case "..":
			return "", &fs.PathError{Op: "lstat", Path: next, Err: syscall.ENOENT}
		default:
			parts = append(parts, todo[i])
		}
	}
	real := path.Join(parts...)
	if strings.Count(real, "/")+1 > MaxPathDepth {
		return "", &linkError{link: next, why: whyLong}
	}
	return real, nil
}
