// Package vtscreen shows, for tests, what a person sees when a program's
// output reaches a terminal: the output goes through a real VT emulator
// (github.com/charmbracelet/x/vt) and the screen's text comes back, so that
// a test asserts the screen, not the bytes.
package vtscreen

import (
	"io"
	"strings"

	"github.com/charmbracelet/x/vt"
)

// Width and Height are the emulated terminal's size: tall enough that the
// tests' outputs never scroll.
const (
	Width  = 200
	Height = 200
)

// Render returns the screen after out was written to a fresh terminal, as
// a terminal's tty writes it (each newline as CR LF): its lines, trailing
// spaces and trailing empty lines dropped. Title is the window title out
// set, if any.
func Render(out string) (screen, title string) {
	e := vt.NewEmulator(Width, Height)
	e.SetCallbacks(vt.Callbacks{Title: func(s string) { title = s }})
	done := make(chan struct{})
	go func() { // the terminal's answers to queries, which nobody reads
		_, _ = io.Copy(io.Discard, e)
		close(done)
	}()
	_, _ = e.WriteString(strings.ReplaceAll(out, "\n", "\r\n"))
	lines := strings.Split(e.String(), "\n")
	_ = e.Close()
	<-done
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return strings.Join(lines, "\n"), title
}
