package terminal

import (
	"os"

	"golang.org/x/sys/unix"
)

// discardInput drops what was typed at the terminal f and not yet read,
// so that a line typed before a question is not taken for its answer.
func discardInput(f *os.File) {
	_ = unix.IoctlSetInt(int(f.Fd()), unix.TCFLSH, unix.TCIFLUSH)
}
