package terminal

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/contract/redact"
	"github.com/toolscript/toolscript/host/platform/positive"
	"github.com/toolscript/toolscript/host/platform/termtext"
)

// The bounds of the prompt.
const (
	// DefaultTimeout bounds the wait for one answer when Config.Timeout
	// is zero ([effects] approval_timeout's default).
	DefaultTimeout = 10 * time.Minute
	// MaxAttempts is how many answers one question reads: past it, a
	// person who gave no answer the prompt understands has declined.
	MaxAttempts = 3
	// MaxAnswerBytes is the longest answer read; the rest of a longer
	// line is read and dropped (the answer is not understood).
	MaxAnswerBytes = 64
	// MaxDiffLines is how many lines of a write's diff the prompt shows.
	MaxDiffLines = 40
)

// Config is how a Prompt asks.
type Config struct {
	// Timeout bounds the wait for the answer to one question
	// ([effects] approval_timeout); zero is DefaultTimeout. When it
	// passes, Ask gives an error: the script stops with kind approval.
	Timeout time.Duration
	// Redactor, when set, redacts the configuration's secrets from what
	// the prompt shows.
	Redactor *redact.Redactor
	// Cancel, when set and closed, ends a wait at once with an error (the
	// run was interrupted).
	Cancel <-chan struct{}
	// Alone, when set, runs each question with the terminal to itself
	// (the progress bar's Print: the bar is cleared, and not drawn again
	// until the answer came).
	Alone func(ask func())
}

// Prompt asks a person at a terminal about the effects the rules ask
// about: an effects.Asker. It writes the question (the rule, the effect's
// line and a write's diff) and reads one line: y or yes (Approve), n or
// no (Decline), a or all (ApproveAll: yes to all this rule asks), s or
// stop (Cancel), in any case. An answer it does not understand asks
// again, at most MaxAttempts times, then declines; the end of the input
// declines this and every later question. Its methods are safe for
// concurrent use: one question is asked at a time.
type Prompt struct {
	out   io.Writer
	cfg   Config
	flush func() // discards input typed before the question (a terminal's)
	turn  chan struct{}

	// The reader: one line is read when a question wants one, so that
	// nothing typed before the question is taken for its answer.
	want  chan struct{}
	lines chan readLine
	// pending: a line was asked of the reader and not received (a wait
	// that ended first); the next question takes it, after flush.
	pending bool
	ended   bool // the input ended
	// closed ends the reader (Close); closer closes the terminal Open
	// opened (nil for New's).
	closed chan struct{}
	closer io.Closer
}

type readLine struct {
	text string
	err  error
}

// New returns a Prompt that writes to out and reads from in (a terminal's
// input, or a pipe in tests).
func New(in io.Reader, out io.Writer, cfg Config) *Prompt {
	cfg.Timeout = positive.Or(cfg.Timeout, DefaultTimeout)
	p := &Prompt{out: out, cfg: cfg, turn: make(chan struct{}, 1), want: make(chan struct{}), lines: make(chan readLine),
		closed: make(chan struct{})}
	go p.read(bufio.NewReaderSize(in, 4096))
	return p
}

// Close stops reading, and closes the terminal Open opened. A read under
// way ends when its input does.
func (p *Prompt) Close() error {
	close(p.closed)
	if p.closer != nil {
		return p.closer.Close()
	}
	return nil
}

// read reads one line each time a question wants one, until the input
// ends (or fails) or the Prompt is closed.
func (p *Prompt) read(in *bufio.Reader) {
	for {
		select {
		case <-p.want:
		case <-p.closed:
			return
		}
		text, err := readAnswer(in)
		select {
		case p.lines <- readLine{text, err}:
		case <-p.closed:
			return
		}
		if err != nil {
			return
		}
	}
}

// readAnswer reads one line, keeping at most MaxAnswerBytes of it.
func readAnswer(in *bufio.Reader) (string, error) {
	var kept []byte
	for {
		chunk, err := in.ReadSlice('\n')
		if len(kept) <= MaxAnswerBytes {
			kept = append(kept, chunk[:min(len(chunk), MaxAnswerBytes+1-len(kept))]...)
		}
		switch {
		case err == nil:
			return string(kept), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case len(kept) > 0 && errors.Is(err, io.EOF):
			return string(kept), nil // the last line, without its newline
		}
		return "", err
	}
}

// Ask puts q to the person and waits for the answer (effects.Asker).
func (p *Prompt) Ask(q effects.Question) (answer effects.Answer, err error) {
	p.turn <- struct{}{}
	defer func() { <-p.turn }()
	if p.cfg.Alone == nil {
		return p.ask(q)
	}
	p.cfg.Alone(func() { answer, err = p.ask(q) })
	return answer, err
}

func (p *Prompt) ask(q effects.Question) (effects.Answer, error) {
	if !p.pending && p.flush != nil {
		// Before the question shows: what is typed once it shows is kept.
		p.flush()
	}
	p.show(q)
	if p.ended {
		p.say("declined: the terminal's input has ended")
		return effects.Decline, nil
	}
	timer := time.NewTimer(p.cfg.Timeout)
	defer timer.Stop()
	for range MaxAttempts {
		p.say("allow it? [y]es, [n]o, [a]ll this rule asks, [s]top the script: ")
		line, err := p.readLine(timer.C)
		switch {
		case errors.Is(err, io.EOF):
			p.ended = true
			p.say("\ndeclined: the terminal's input has ended\n")
			return effects.Decline, nil
		case err != nil:
			p.say("\n" + termtext.Line(err.Error()) + "\n")
			return effects.Decline, err
		}
		if answer, ok := parseAnswer(line); ok {
			return answer, nil
		}
		p.say("\"" + cutAnswer(line) + "\" is not an answer: type y, n, a or s and press Enter\n")
	}
	p.say(fmt.Sprintf("declined: no answer understood in %d tries\n", MaxAttempts))
	return effects.Decline, nil
}

// readLine waits for the reader's next line, for timeout, or for Cancel.
func (p *Prompt) readLine(timeout <-chan time.Time) (string, error) {
	if !p.pending {
		p.want <- struct{}{}
		p.pending = true
	}
	select {
	case l := <-p.lines:
		p.pending = false
		return l.text, l.err
	case <-timeout:
		return "", fmt.Errorf("no answer within %s (approval_timeout)", p.cfg.Timeout)
	case <-p.cfg.Cancel:
		return "", errors.New("the run was interrupted while waiting for an answer")
	}
}

// show writes the question: the rule, the effect's line, a write's diff.
func (p *Prompt) show(q effects.Question) {
	var b strings.Builder
	fmt.Fprintf(&b, "\ntoolscript: the rule %s asks before this effect:\n", termtext.JSON(quoteJSON(q.Rule)))
	fmt.Fprintf(&b, "  %s\n", EffectLine(q.Effect))
	diff := DiffLines(q.Effect)
	for i, line := range diff {
		if i == MaxDiffLines {
			fmt.Fprintf(&b, "    ... %d more lines of the diff\n", len(diff)-i)
			break
		}
		fmt.Fprintf(&b, "    %s\n", line)
	}
	p.say(b.String())
}

// say writes text, its secrets redacted.
func (p *Prompt) say(text string) {
	if p.cfg.Redactor.Active() {
		text = p.cfg.Redactor.String(text)
	}
	io.WriteString(p.out, text)
}

// parseAnswer reads an answer: y/yes, n/no, a/all, s/stop, in any case,
// spaces around it ignored.
func parseAnswer(line string) (effects.Answer, bool) {
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return effects.Approve, true
	case "n", "no":
		return effects.Decline, true
	case "a", "all":
		return effects.ApproveAll, true
	case "s", "stop":
		return effects.Cancel, true
	}
	return effects.Decline, false
}

// cutAnswer is an answer not understood, as the prompt repeats it: one
// line, escaped, cut.
func cutAnswer(line string) string {
	line = strings.TrimRight(line, "\r\n")
	if len(line) > 20 {
		line = strings.ToValidUTF8(line[:20], "") + "..."
	}
	return termtext.Line(line)
}

func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
