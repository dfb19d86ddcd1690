package terminal

import (
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/toolscript/toolscript/host/contract/effects"
)

// TestPromptDiscardsTypeAhead: a line typed at the terminal before the
// question showed (for something else, or a "y" held down) is not taken
// for its answer; what is typed once it shows is.
func TestPromptDiscardsTypeAhead(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	if _, err := io.WriteString(ptmx, "y\n"); err != nil {
		t.Fatal(err)
	}
	// The line is in the terminal's input queue before the question.
	for {
		n, err := unix.IoctlGetInt(int(tty.Fd()), unix.TIOCINQ)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		runtime.Gosched()
	}
	p := New(tty, tty, Config{})
	p.flush = func() { discardInput(tty) }
	defer p.Close()
	go func() { // the person reads the question, then answers no
		var screen strings.Builder
		buf := make([]byte, 1024)
		for !strings.Contains(screen.String(), "allow it?") {
			n, err := ptmx.Read(buf)
			if err != nil {
				return
			}
			screen.Write(buf[:n])
		}
		io.WriteString(ptmx, "n\n")
	}()
	if got, err := p.Ask(addPet()); err != nil || got != effects.Decline {
		t.Errorf("Ask: %v, %v; want the answer typed after the question (decline)", got, err)
	}
}
