package sandboxio

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// memoryFile makes an anonymous file in memory (memfd_create), and the
// path that opens it again, with a file offset and flags of its own.
func memoryFile() (*os.File, string, error) {
	fd, err := unix.MemfdCreate("toolscript-overlay", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, "", err
	}
	return os.NewFile(uintptr(fd), "toolscript-overlay"), "/proc/self/fd/" + strconv.Itoa(fd), nil
}
