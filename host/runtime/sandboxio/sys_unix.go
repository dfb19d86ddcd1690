//go:build unix

package sandboxio

import (
	"os"
	"path"
	"syscall"

	"golang.org/x/sys/unix"
)

// openFlags are added to every open of a file: never wait for a FIFO's
// other end or a device, never acquire a controlling terminal.
const openFlags = syscall.O_NONBLOCK | syscall.O_NOCTTY

// dirFlags open a directory for listing; anything else fails at once.
const dirFlags = syscall.O_DIRECTORY | syscall.O_NONBLOCK

// removeFile unlinks name in its parent directory, opened through root.
// unlinkat without AT_REMOVEDIR never removes a directory, even one
// swapped in after the caller checked.
func removeFile(root *os.Root, name string) error {
	dir, err := root.OpenFile(path.Dir(name), os.O_RDONLY|dirFlags, 0)
	if err != nil {
		return err
	}
	defer dir.Close()
	conn, err := dir.SyscallConn()
	if err != nil {
		return err
	}
	var unlinkErr error
	if err := conn.Control(func(fd uintptr) {
		unlinkErr = unix.Unlinkat(int(fd), path.Base(name), 0)
	}); err != nil {
		return err
	}
	if unlinkErr != nil {
		return &os.PathError{Op: "unlinkat", Path: name, Err: unlinkErr}
	}
	return nil
}
