//go:build !linux

package sandboxio

import (
	"errors"
	"os"
)

// memoryFile is not available here: the overlay's files are files of the
// temporary directory.
func memoryFile() (*os.File, string, error) {
	return nil, "", errors.New("no memory files on this system")
}
