// Package progressbar draws a script's progress(done, total?, message?)
// calls as one line on a terminal, for `toolscript run`:
//
//	[==========>         ]  52/100  52%  10.4/s  ETA 5s  reading rows
//
// It owns the rendering (Render, a pure function of the state, the clock
// and the terminal's width) and the drawing (Bar): redrawn at most once
// per interval with the newest state, on a goroutine of its own so that a
// script never waits for the terminal, and cleared when the script ends.
package progressbar

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/text/width"

	"github.com/toolscript/toolscript/host/platform/pacer"
	"github.com/toolscript/toolscript/host/platform/positive"
	"github.com/toolscript/toolscript/host/platform/termtext"
)

// DefaultInterval is the least time between two redraws: ten a second.
const DefaultInterval = 100 * time.Millisecond

// maxMessageRunes bounds the message kept: no terminal line is longer.
const maxMessageRunes = 512

// State is what a bar shows.
type State struct {
	Done float64
	// Total is NaN when the script gave none.
	Total   float64
	Message string
	// Start is when the first progress call came, with the done it gave:
	// the rate counts from there.
	Start     time.Time
	StartDone float64
}

// Render returns the line for s at now, at most cols columns wide (one
// less, so that the cursor never wraps). It contains no control characters:
// the message is escaped (host/platform/termtext).
func Render(s State, now time.Time, cols int) string {
	hasTotal := !math.IsNaN(s.Total) && !math.IsInf(s.Total, 0) && s.Total > 0
	var parts []string
	if hasTotal {
		parts = append(parts, number(s.Done)+"/"+number(s.Total))
		fraction := min(max(s.Done/s.Total, 0), 1)
		parts = append(parts, fmt.Sprintf("%.0f%%", math.Floor(fraction*100)))
	} else {
		parts = append(parts, number(s.Done))
	}
	elapsed := now.Sub(s.Start).Seconds()
	if rate := (s.Done - s.StartDone) / elapsed; elapsed >= 0.5 && rate > 0 && !math.IsInf(rate, 0) {
		parts = append(parts, rateText(rate)+"/s")
		if hasTotal && s.Done < s.Total {
			parts = append(parts, "ETA "+eta((s.Total-s.Done)/rate))
		}
	}
	text := strings.Join(parts, "  ")

	avail := cols - 1
	line := ""
	// The bar takes what is left beside the numbers, from 10 to 30 columns.
	if bar := min(30, avail-runeWidth(text)-2-2); hasTotal && bar >= 10 {
		filled := int(math.Floor(min(max(s.Done/s.Total, 0), 1) * float64(bar)))
		b := strings.Repeat("=", filled)
		if filled < bar {
			b += ">" + strings.Repeat(" ", bar-filled-1)
		}
		line = "[" + b + "]  "
	}
	line += text
	if msg := clean(s.Message); msg != "" {
		line += "  " + msg
	}
	return cut(line, avail)
}

// number writes a count: integers as such, others with up to two decimals.
func number(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	if math.Abs(v) >= 1e15 {
		return strconv.FormatFloat(v, 'g', 4, 64)
	}
	s := strconv.FormatFloat(v, 'f', 2, 64)
	return strings.TrimRight(strings.TrimRight(s, "0"), ".")
}

func rateText(r float64) string {
	switch {
	case r >= 1e15:
		return strconv.FormatFloat(r, 'g', 3, 64)
	case r >= 100:
		return strconv.FormatFloat(r, 'f', 0, 64)
	}
	return strconv.FormatFloat(r, 'f', 1, 64)
}

// eta writes a number of seconds as "12s", "3m05s" or "2h07m".
func eta(seconds float64) string {
	if seconds > 99*3600 {
		return ">99h"
	}
	d := time.Duration(math.Ceil(seconds)) * time.Second
	h, m, s := int(d/time.Hour), int(d%time.Hour/time.Minute), int(d%time.Minute/time.Second)
	switch {
	case h > 0:
		return fmt.Sprintf("%dh%02dm", h, m)
	case m > 0:
		return fmt.Sprintf("%dm%02ds", m, s)
	}
	return fmt.Sprintf("%ds", s)
}

// clean makes a script's message safe to draw on one line: escaped as
// host/platform/termtext escapes a line (escape sequences shown, never run),
// bounded.
func clean(msg string) string {
	if limit := maxMessageRunes * utf8.UTFMax; len(msg) > limit {
		for limit > 0 && !utf8.RuneStart(msg[limit]) {
			limit--
		}
		msg = msg[:limit] // a huge message costs nothing more
	}
	msg = termtext.Line(msg)
	n := 0
	for i := range msg {
		if n == maxMessageRunes {
			msg = msg[:i]
			break
		}
		n++
	}
	return strings.TrimSpace(msg)
}

// runeWidth is the number of terminal columns s takes: wide East Asian
// characters take two.
func runeWidth(s string) int {
	n := 0
	for _, r := range s {
		n += columns(r)
	}
	return n
}

func columns(r rune) int {
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return 2
	}
	return 1
}

// cut returns the longest prefix of s that fits in cols columns.
func cut(s string, cols int) string {
	n := 0
	for i, r := range s {
		if n+columns(r) > cols {
			return s[:i]
		}
		n += columns(r)
	}
	return s
}

// Bar draws progress on a terminal. Update, Print and Close may be called
// from any goroutine; nothing is drawn after Close.
type Bar struct {
	w    io.Writer
	cols func() int
	now  func() time.Time
	pace *pacer.Pacer // the redraws

	mu      sync.Mutex // guards the fields below and every write to w
	state   State
	started bool
	dirty   bool // the state changed since the last draw
	drawn   bool // a line is on the terminal
	closed  bool
}

// New starts a bar drawing on w, a terminal; cols returns its width in
// columns. interval is the least time between redraws (DefaultInterval
// if zero).
func New(w io.Writer, cols func() int, interval time.Duration) *Bar {
	b := &Bar{w: w, cols: cols, now: time.Now}
	b.pace = pacer.Start(positive.Or(interval, DefaultInterval), b.redraw)
	return b
}

// Update records a progress call; total is nil when the script gave none.
// It never waits for the terminal. It has the type of luau.Script's
// OnProgress.
func (b *Bar) Update(done float64, total *float64, message string) {
	if math.IsNaN(done) || math.IsInf(done, 0) {
		return
	}
	t := math.NaN()
	if total != nil {
		t = *total
	}
	b.mu.Lock()
	if !b.started {
		b.started = true
		b.state.Start, b.state.StartDone = b.now(), done
	}
	b.state.Done, b.state.Total = done, t
	b.state.Message = clean(message)
	b.dirty = true
	b.mu.Unlock()
	b.pace.Wake()
}

// Print clears the bar, runs write (which writes a line to the same
// terminal: a script's print), and has the bar drawn again.
func (b *Bar) Print(write func()) {
	b.mu.Lock()
	if b.drawn {
		io.WriteString(b.w, "\r\x1b[K")
		b.drawn = false
		b.dirty = true
	}
	write()
	started := b.started
	b.mu.Unlock()
	if started {
		b.pace.Wake()
	}
}

// Close stops drawing and clears the line if one is drawn.
func (b *Bar) Close() {
	b.pace.Stop()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	if b.drawn {
		io.WriteString(b.w, "\r\x1b[K")
		b.drawn = false
	}
}

// redraw draws the newest state if it is not drawn yet, and reports
// whether it drew.
func (b *Bar) redraw() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.dirty || b.closed {
		return false
	}
	io.WriteString(b.w, "\r"+Render(b.state, b.now(), b.cols())+"\x1b[K")
	b.dirty, b.drawn = false, true
	return true
}
