// Package cachedir owns toolscript's directories in the user cache
// directory (toolscript/sdk for converted specs, toolscript/wazero for
// compiled modules): where they are, that they are the current user's
// alone, and the one warning a cache that cannot be used gives.
//
// A cache is an optimisation, never a dependency or a trust boundary. Every
// directory from the user cache directory down must be the current user's
// and writable by no one else (the user cache directory itself may be
// root's, or shared if it has the sticky bit, as /tmp does); the
// directories toolscript makes are 0700 and its files 0600. An entry is
// used only when it is a regular file (never through a symbolic link) of
// the current user's that no one else may write. Whatever fails these
// checks is not used: the caller runs without its cache and warns once.
package cachedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// Modes of what toolscript makes in a cache.
const (
	DirMode  fs.FileMode = 0o700
	FileMode fs.FileMode = 0o600
)

// ErrNoUserCacheDir is Open's error when the user has no cache directory
// (neither XDG_CACHE_HOME nor HOME is set): nothing to warn about, there is
// simply no cache.
var ErrNoUserCacheDir = errors.New("no user cache directory")

// Open returns the cache directory name (such as "sdk") under the user
// cache directory, made 0700 where missing, each directory from the user
// cache directory down checked (Secure). The error says which directory
// cannot be trusted, and why.
func Open(name string) (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNoUserCacheDir, err)
	}
	return OpenIn(base, "toolscript", name)
}

// OpenIn is Open under base, the directories below it named by parts.
func OpenIn(base string, parts ...string) (string, error) {
	if _, err := os.Stat(base); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(base, DirMode); err != nil {
			return "", fmt.Errorf("cannot make the cache directory %s: %w", base, err)
		}
	}
	info, err := os.Stat(base) // the user's own setting may be a symbolic link
	if err != nil {
		return "", fmt.Errorf("cannot read the cache directory %s: %w", base, err)
	}
	if err := checkBase(base, info); err != nil {
		return "", err
	}
	dir := base
	for _, part := range parts {
		dir = filepath.Join(dir, part)
		if err := ensureDir(dir); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// ensureDir makes dir 0700 unless it is there, and checks it.
func ensureDir(dir string) error {
	err := os.Mkdir(dir, DirMode)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("cannot make the cache directory %s: %w", dir, err)
	}
	return CheckDir(dir)
}

// CheckDir checks a directory of toolscript's in a cache: a directory (not
// a symbolic link to one) of the current user's that no one else may write.
func CheckDir(dir string) error {
	info, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("cannot read the cache directory %s: %w", dir, err)
	}
	if !info.IsDir() {
		return fmt.Errorf("the cache directory %s is not a directory (%s)", dir, kind(info))
	}
	return checkOwned(dir, info, "cache directory")
}

// CheckEntry checks an entry of a cache before it is read: a regular file
// (not a symbolic link) of the current user's that no one else may write.
func CheckEntry(path string) error {
	info, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("the cache entry %s is not a regular file (%s)", path, kind(info))
	}
	return checkOwned(path, info, "cache entry")
}

// checkOwned refuses what another user owns or may write.
func checkOwned(path string, info fs.FileInfo, what string) error {
	if uid, ok := owner(info); ok && uid != os.Getuid() {
		return fmt.Errorf("the %s %s belongs to another user (uid %d, not %d)", what, path, uid, os.Getuid())
	}
	if info.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("the %s %s may be written by other users (mode %#o; want at most 0755)", what, path, info.Mode().Perm())
	}
	return nil
}

// checkBase checks the user cache directory: the current user's or root's,
// and writable by others only when sticky (others cannot then replace what
// the user makes in it).
func checkBase(base string, info fs.FileInfo) error {
	if !info.IsDir() {
		return fmt.Errorf("the cache directory %s is not a directory (%s)", base, kind(info))
	}
	if uid, ok := owner(info); ok && uid != os.Getuid() && uid != 0 {
		return fmt.Errorf("the cache directory %s belongs to another user (uid %d, not %d)", base, uid, os.Getuid())
	}
	if info.Mode().Perm()&0o022 != 0 && info.Mode()&fs.ModeSticky == 0 {
		return fmt.Errorf("the cache directory %s may be written by other users (mode %#o, not sticky)", base, info.Mode().Perm())
	}
	return nil
}

func kind(info fs.FileInfo) string {
	switch m := info.Mode(); {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a directory"
	case m.IsRegular():
		return "a file"
	}
	return "mode " + info.Mode().Type().String()
}

// Warning reports that a cache cannot be used, once: the first problem is
// told, the later ones are not (the cache is bypassed either way).
type Warning struct {
	once sync.Once
	warn func(string)
}

// NewWarning returns a Warning telling warn (nil: nobody).
func NewWarning(warn func(string)) *Warning { return &Warning{warn: warn} }

// Warn tells the first problem: "<what>: <err>; running without it".
func (w *Warning) Warn(what string, err error) {
	if w == nil || w.warn == nil {
		return
	}
	w.once.Do(func() { w.warn(fmt.Sprintf("%s cannot be used (%v); running without it", what, err)) })
}
