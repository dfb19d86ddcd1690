//go:build !unix

package sandboxio

import (
	"io/fs"
	"os"
)

const (
	openFlags = 0
	dirFlags  = 0
)

// Without the *at calls of unix, a change to a real name (realName) is
// made through os.Root, which follows a link swapped in since only to a
// file inside the io directory.

// openNoFollow opens the real name in root.
func openNoFollow(root *os.Root, name string, flags int, perm fs.FileMode) (*os.File, error) {
	return root.OpenFile(name, flags, perm)
}

// mkdirNoFollow makes the directory of the real name in root.
func mkdirNoFollow(root *os.Root, name string, perm fs.FileMode) error {
	return root.Mkdir(name, perm)
}

// renameNoFollow renames the real name from to the real name to in root.
func renameNoFollow(root *os.Root, from, to string) error {
	return root.Rename(from, to)
}

// removeFile removes name through root; the caller has checked that it is
// not a directory.
func removeFile(root *os.Root, name string) error {
	return root.Remove(name)
}
