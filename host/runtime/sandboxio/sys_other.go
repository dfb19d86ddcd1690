//go:build !unix

package sandboxio

import "os"

const (
	openFlags = 0
	dirFlags  = 0
)

// removeFile removes name through root; the caller has checked that it is
// not a directory.
func removeFile(root *os.Root, name string) error {
	return root.Remove(name)
}
