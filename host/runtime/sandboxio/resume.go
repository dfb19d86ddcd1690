package sandboxio

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"

	"github.com/toolscript/toolscript/host/contract/effects/trace"
)

// A paused execution (host/contract/effects, resume.go) keeps the digest
// of every file its prefix read or wrote, as each is on disk at the
// pause; the resumed execution replays the prefix only when each is
// unchanged. A resumed execution's io goes on from its prefix: its
// handles are numbered after the prefix's, and the files the prefix
// wrote are among those it touched.

// The bounds of a pause's digests.
const (
	// MaxDigestFiles is how many files a pause keeps the digest of.
	MaxDigestFiles = 10000
	// MaxDigestBytes bounds the bytes a pause (and a resume) reads to
	// take them.
	MaxDigestBytes = 1 << 30
)

// FileDigest is a file of the io directory, and its content's sha256 (hex)
// at the pause: "" when there was no such file.
type FileDigest struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256,omitempty"`
}

// Digests takes the digest of each of paths (scripts' paths, cleaned here)
// in the io directory dir, sorted by path, reading at most MaxDigestBytes
// of them.
func Digests(dir string, paths []string) ([]FileDigest, error) {
	if len(paths) > MaxDigestFiles {
		return nil, fmt.Errorf("the execution touched %d files, more than a pause keeps (%d)", len(paths), MaxDigestFiles)
	}
	root, err := openDigestRoot(dir)
	if err != nil {
		return nil, err
	}
	if root != nil {
		defer root.Close()
	}
	seen := map[string]bool{}
	out := make([]FileDigest, 0, len(paths))
	budget := int64(MaxDigestBytes)
	for _, p := range paths {
		name, err := Clean(p)
		if err != nil || seen[name] {
			continue // a path the script could not open is no file of it
		}
		seen[name] = true
		sum, err := digest(root, name, &budget)
		if err != nil {
			return nil, err
		}
		out = append(out, FileDigest{Path: name, SHA256: sum})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// Unchanged checks that each file is as its digest says: the error names
// the first that is not ("FILE changed since the pause").
func Unchanged(dir string, files []FileDigest) error {
	if len(files) > MaxDigestFiles {
		return fmt.Errorf("a pause names %d files, more than %d", len(files), MaxDigestFiles)
	}
	root, err := openDigestRoot(dir)
	if err != nil {
		return err
	}
	if root != nil {
		defer root.Close()
	}
	budget := int64(MaxDigestBytes)
	for _, f := range files {
		name, err := Clean(f.Path)
		if err != nil {
			return fmt.Errorf("a pause names %q: %w", f.Path, err)
		}
		sum, err := digest(root, name, &budget)
		if err != nil {
			return err
		}
		if sum != f.SHA256 {
			return fmt.Errorf("%s changed since the pause", name)
		}
	}
	return nil
}

// openDigestRoot opens dir, nil when it does not exist (no file does).
func openDigestRoot(dir string) (*os.Root, error) {
	root, err := os.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, dirError(dir, false, err)
	}
	return root, nil
}

// digest is the sha256 of name in root ("" when there is no such file),
// its bytes taken from budget.
func digest(root *os.Root, name string, budget *int64) (string, error) {
	if root == nil {
		return "", nil
	}
	f, err := root.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, withoutPath(err))
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		return "", nil // a directory or a special file: no content the script read
	}
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, *budget+1))
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, withoutPath(err))
	}
	if *budget -= n; *budget < 0 {
		return "", fmt.Errorf("the files a pause keeps the digest of hold more than %d bytes", int64(MaxDigestBytes))
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ContinueFrom makes s go on from a paused execution's prefix, whose io
// opened opens (their outcomes): its handles are numbered after theirs,
// and the files they opened for writing are among those s touched, by
// their real names (realName) as the prefix's own records named them.
func (s *FS) ContinueFrom(opens []trace.IO) {
	for _, o := range opens {
		if o.Op != trace.IOOpen || o.Result <= 0 {
			continue
		}
		s.nextID = max(s.nextID, int32(o.Result))
		name, err := Clean(o.Path)
		_, _, writable, appendOnly, ok := modeFlags(o.Mode)
		if err == nil && ok && writable {
			_ = s.openRoot(false) // none yet: no link either
			if real, err := s.realName(name, true); err == nil {
				name = real
			}
			s.touch(name, appendOnly)
			if s.applied != nil {
				s.applied[name] = true // written by the prefix, for real
			}
		}
	}
}
