package sandboxio

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"

	"github.com/toolscript/toolscript/host/contract/effects"
)

// A plan run (effects.Plan) stages like a dry run: a file's writes go to
// the overlay, since the content the plan must hold is known only when
// its handle closes. Each effect the plan holds is then carried out in
// the real directory: a directory is made and a file removed when the
// script asks, and a write reaches the real file at its handle's close
// (or the script's end), written beside it and renamed over it, so that
// the real file is either as it was or as planned. An effect the plan
// does not hold reaches nothing. The overlay stays the script's view
// until the end: it holds what was carried out, and what was not.

// stopped is the error of an effect the effects layer stopped.
func (s *FS) stopped(op, p string) error {
	stop := s.fx.Err()
	if stop == nil { // cannot happen: a Stop has its reason
		stop = &effects.StopError{Kind: effects.KindPlan, Message: "the effect was stopped"}
	}
	return &Error{Kind: KindIO, Op: op, Path: p, Reason: stop.Message, Err: stop}
}

// denied is the error of an effect the rules denied (or a person
// declined): nothing happened, and the script may go on.
func denied(op, p string, out effects.Outcome) error {
	return &Error{Kind: KindIO, Op: op, Path: p, Reason: out.Message}
}

// unstage forgets a denied write of name: the overlay shows the real file
// again (as it was, or as an earlier write left it).
func (s *FS) unstage(name string) {
	if tmp, ok := s.ov.files[name]; ok {
		delete(s.ov.files, name)
		s.ov.discard(tmp)
	}
}

// applyRemove removes name for real: in a plan run the overlay's copy
// too, and the real file only when there is one (a file created and not
// yet closed has none).
func (s *FS) applyRemove(name string) error {
	if s.ov == nil {
		return removeFile(s.root, name)
	}
	s.removeStaged(name)
	s.applied[name] = true
	if s.root == nil {
		return nil
	}
	if _, err := s.root.Lstat(name); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return removeFile(s.root, name)
}

// applyWrite carries a plan run's write out: the overlay's content of
// name (a real name: realName) is copied to a new file beside the real
// one, synced, and renamed over it (the real file keeps its permissions),
// without following a link, so that the file changed is the one the
// effect named. Nothing is left behind on failure. A file removed since
// it was written is left alone: the write left nothing.
func (s *FS) applyWrite(name string) error {
	staged, ok := s.ov.files[name]
	if !ok {
		return nil
	}
	s.applied[name] = true
	if err := s.openRoot(true); err != nil {
		return err
	}
	in, err := os.Open(staged)
	if err != nil {
		return withoutPath(err)
	}
	defer in.Close()
	perm, existed := fs.FileMode(0o644), false // a new file's, as a real run's
	if info, err := s.root.Lstat(name); err == nil {
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			return errLinkAppeared // it was resolved when opened: the effect names the file, not a link
		case info.Mode().IsRegular():
			perm, existed = info.Mode().Perm(), true
		}
	}
	var suffix [8]byte
	_, _ = rand.Read(suffix[:])
	tmp := path.Join(path.Dir(name), ".toolscript-plan-"+hex.EncodeToString(suffix[:]))
	out, err := openNoFollow(s.root, tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|openFlags, perm)
	if err != nil {
		return withoutPath(err)
	}
	_, err = io.Copy(out, in)
	if err == nil && existed {
		err = out.Chmod(perm) // as it was, whatever the umask
	}
	if err == nil {
		err = out.Sync()
	}
	if closeErr := out.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = renameNoFollow(s.root, tmp, name)
	}
	if err != nil {
		_ = removeFile(s.root, tmp)
		return withoutPath(err)
	}
	return nil
}

// appliedOnly keeps of names those a plan run changed in the real
// directory.
func (s *FS) appliedOnly(names []string) []string {
	out := names[:0]
	for _, n := range names {
		if s.applied[n] {
			out = append(out, n)
		}
	}
	return out
}
