//go:build unix

package sandboxio

import (
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// openFlags are added to every open of a file: never wait for a FIFO's
// other end or a device, never acquire a controlling terminal.
const openFlags = syscall.O_NONBLOCK | syscall.O_NOCTTY

// dirFlags open a directory for listing; anything else fails at once.
const dirFlags = syscall.O_DIRECTORY | syscall.O_NONBLOCK

// The changes below are made on a real name (realName) without following
// any symbolic link: its parent is opened one component at a time from the
// io directory, each with O_NOFOLLOW, and the change is made in it by
// name (openat, mkdirat, renameat, unlinkat with no follow). os.Root
// alone would follow a link swapped in after the name was resolved to a
// file inside the directory that no record names.

// openParent opens the directory that holds name without following a
// link.
func openParent(root *os.Root, name string) (*os.File, error) {
	dir, err := root.OpenFile(".", os.O_RDONLY|dirFlags, 0)
	if err != nil {
		return nil, err
	}
	parent := path.Dir(name)
	if parent == "." {
		return dir, nil
	}
	for c := range strings.SplitSeq(parent, "/") {
		var fd int
		err := inDir(dir, c, func(d int) (err error) {
			fd, err = unix.Openat(d, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
			return err
		})
		dir.Close()
		if err != nil {
			return nil, &os.PathError{Op: "openat", Path: parent, Err: err}
		}
		dir = os.NewFile(uintptr(fd), c)
	}
	return dir, nil
}

// inDir calls f with dir's descriptor, again while it is interrupted; a
// failure because name, in dir, is a symbolic link is errLinkAppeared.
func inDir(dir *os.File, name string, f func(fd int) error) error {
	conn, err := dir.SyscallConn()
	if err != nil {
		return err
	}
	var opErr error
	if err := conn.Control(func(fd uintptr) {
		for opErr = f(int(fd)); opErr == unix.EINTR; opErr = f(int(fd)) {
		}
		if opErr == unix.ELOOP || opErr == unix.ENOTDIR || opErr == unix.EMLINK {
			var st unix.Stat_t
			if unix.Fstatat(int(fd), name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
				opErr = errLinkAppeared
			}
		}
	}); err != nil {
		return err
	}
	return opErr
}

// openNoFollow opens the real name in root with flags (os.O_*), making it
// with perm when flags say so.
func openNoFollow(root *os.Root, name string, flags int, perm fs.FileMode) (*os.File, error) {
	dir, err := openParent(root, name)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	base := path.Base(name)
	var fd int
	err = inDir(dir, base, func(d int) (err error) {
		fd, err = unix.Openat(d, base, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
		return err
	})
	if err != nil {
		return nil, &os.PathError{Op: "openat", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}

// mkdirNoFollow makes the directory of the real name in root.
func mkdirNoFollow(root *os.Root, name string, perm fs.FileMode) error {
	dir, err := openParent(root, name)
	if err != nil {
		return err
	}
	defer dir.Close()
	base := path.Base(name)
	if err := inDir(dir, base, func(d int) error { return unix.Mkdirat(d, base, uint32(perm.Perm())) }); err != nil {
		return &os.PathError{Op: "mkdirat", Path: name, Err: err}
	}
	return nil
}

// renameNoFollow renames the real name from to the real name to in root:
// the entries themselves, whatever they are.
func renameNoFollow(root *os.Root, from, to string) error {
	src, err := openParent(root, from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := openParent(root, to)
	if err != nil {
		return err
	}
	defer dst.Close()
	err = inDir(src, path.Base(from), func(s int) error {
		return inDir(dst, path.Base(to), func(d int) error { return unix.Renameat(s, path.Base(from), d, path.Base(to)) })
	})
	if err != nil {
		return &os.LinkError{Op: "renameat", Old: from, New: to, Err: err}
	}
	return nil
}

// removeFile unlinks the real name in its parent directory. unlinkat
// without AT_REMOVEDIR never removes a directory, even one swapped in
// after the caller checked.
func removeFile(root *os.Root, name string) error {
	dir, err := openParent(root, name)
	if err != nil {
		return err
	}
	defer dir.Close()
	base := path.Base(name)
	if err := inDir(dir, base, func(d int) error { return unix.Unlinkat(d, base, 0) }); err != nil {
		return &os.PathError{Op: "unlinkat", Path: name, Err: err}
	}
	return nil
}
