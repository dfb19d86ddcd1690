package terminal

import (
	"os"

	"golang.org/x/term"
)

// Open returns a Prompt on the person's terminal: the process's
// controlling terminal (/dev/tty), read and written; or, when that cannot
// be opened and stdin is a terminal, stdin read and stderr written. It
// is nil when there is no terminal: then nobody can be asked, and under
// `toolscript run` an ask is deny. Close closes the terminal it opened.
func Open(stdin, stderr *os.File, cfg Config) *Prompt {
	if tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0); err == nil {
		if term.IsTerminal(int(tty.Fd())) {
			p := New(tty, tty, cfg)
			p.flush = func() { discardInput(tty) }
			p.closer = tty
			return p
		}
		tty.Close()
	}
	if stdin != nil && stderr != nil && term.IsTerminal(int(stdin.Fd())) {
		p := New(stdin, stderr, cfg)
		p.flush = func() { discardInput(stdin) }
		return p
	}
	return nil
}
