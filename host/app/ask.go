package app

import (
	"io"
	"os"
	"sync"

	"github.com/toolscript/toolscript/host/app/terminal"
	"github.com/toolscript/toolscript/host/contract/effects"
)

// TerminalAsk is RunConfig.Ask for the person at the terminal of the
// command `run` (its standard input and error), and the function that
// closes the prompt once the run ended. The prompt opens when the first
// question comes (a run nothing asks about never touches the terminal);
// without a terminal every question is answered as nobody can answer it
// (effects.Refuse: ask is deny). cancel ends a wait (the first signal);
// alone, when set, runs the prompt's writes apart from a progress bar.
func TerminalAsk(stdin io.Reader, stderr io.Writer, cancel <-chan struct{}, alone func(func())) (ask func(Asking) effects.Asker, closePrompt func()) {
	person := &personAtTerminal{}
	ask = func(how Asking) effects.Asker {
		person.open = func() *terminal.Prompt {
			in, ok := stdin.(*os.File)
			if !ok {
				return nil // run in a test, with another reader: no terminal
			}
			errFile, _ := stderr.(*os.File)
			return terminal.Open(in, errFile, terminal.Config{Redactor: how.Redactor, Timeout: how.Timeout, Cancel: cancel, Alone: alone})
		}
		return person
	}
	return ask, person.close
}

// personAtTerminal asks the person at the terminal, through the prompt
// it opens at the first question.
type personAtTerminal struct {
	once   sync.Once
	open   func() *terminal.Prompt
	prompt *terminal.Prompt
}

func (p *personAtTerminal) Ask(q effects.Question) (effects.Answer, error) {
	p.once.Do(func() {
		if p.open != nil {
			p.prompt = p.open()
		}
	})
	if p.prompt == nil {
		return effects.Refuse.Ask(q) // no terminal: ask is deny
	}
	return p.prompt.Ask(q)
}

// close closes the prompt if it was opened.
func (p *personAtTerminal) close() {
	p.once.Do(func() {}) // no question comes after this
	if p.prompt != nil {
		p.prompt.Close()
	}
}
