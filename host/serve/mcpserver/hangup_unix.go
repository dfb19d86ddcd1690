//go:build unix

package mcpserver

import (
	"context"
	"errors"
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// hangupPoll is how often, in milliseconds, watchHangup looks again while
// nothing happens: it waits in poll(2), and checks ctx between waits.
const hangupPoll = 200

// watchHangup calls gone once the reader of out has gone away, when out is
// a pipe or a socket: a client killed mid-call is noticed at once, not at
// the next write, which a long script may not make for minutes. The end of
// the input alone is not a hang-up (a client may pipe its requests and
// read the answers). It returns when ctx ends.
func watchHangup(ctx context.Context, out io.Writer, gone func()) {
	f, ok := out.(*os.File)
	if !ok {
		return
	}
	info, err := f.Stat()
	if err != nil || info.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return
	}
	conn, err := f.SyscallConn()
	if err != nil {
		return
	}
	go func() {
		for ctx.Err() == nil {
			hungUp, failed := false, false
			err := conn.Control(func(fd uintptr) {
				// No events asked for: poll reports only POLLERR (a pipe
				// without a reader) and POLLHUP (a socket closed).
				fds := []unix.PollFd{{Fd: int32(fd)}}
				n, err := unix.Poll(fds, hangupPoll)
				failed = err != nil && !errors.Is(err, syscall.EINTR)
				hungUp = n > 0 && fds[0].Revents&(unix.POLLERR|unix.POLLHUP) != 0
			})
			if err != nil || failed {
				return
			}
			if hungUp {
				gone()
				return
			}
		}
	}()
}
