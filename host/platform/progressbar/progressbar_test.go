package progressbar

import (
	"math"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/toolscript/toolscript/host/platform/termtext"
)

func TestRender(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return start.Add(d) }
	nan := math.NaN()
	cases := []struct {
		name  string
		state State
		now   time.Time
		cols  int
		want  string
	}{
		{"half way", State{Done: 50, Total: 100, Message: "reading rows", Start: start}, at(10 * time.Second), 80,
			"[===============>              ]  50/100  50%  5.0/s  ETA 10s  reading rows"},
		{"just started: no rate yet", State{Done: 1, Total: 100, Start: start}, at(100 * time.Millisecond), 80,
			"[>                             ]  1/100  1%"},
		{"done", State{Done: 100, Total: 100, Start: start}, at(20 * time.Second), 80,
			"[==============================]  100/100  100%  5.0/s"},
		{"no total", State{Done: 1234, Total: nan, Message: "rows", Start: start}, at(2 * time.Second), 80,
			"1234  617/s  rows"},
		{"rate from the first call", State{Done: 60, Total: 100, Start: start, StartDone: 50}, at(5 * time.Second), 80,
			"[==================>           ]  60/100  60%  2.0/s  ETA 20s"},
		{"fractions", State{Done: 0.25, Total: 1, Start: start}, at(time.Second), 60,
			"[=======>                     ]  0.25/1  25%  0.2/s  ETA 3s"},
		{"minutes", State{Done: 10, Total: 1000, Start: start}, at(10 * time.Second), 80,
			"[>                             ]  10/1000  1%  1.0/s  ETA 16m30s"},
		{"hours", State{Done: 1, Total: 1e6, Start: start}, at(time.Second), 80,
			"[>                             ]  1/1000000  0%  1.0/s  ETA >99h"},
		{"over the total", State{Done: 150, Total: 100, Start: start}, at(time.Second), 80,
			"[==============================]  150/100  100%  150/s"},
		{"backwards", State{Done: -5, Total: 100, Start: start}, at(time.Second), 80,
			"[>                             ]  -5/100  0%"},
		{"narrow: a shorter bar", State{Done: 50, Total: 100, Start: start}, at(0), 30,
			"[=======>      ]  50/100  50%"},
		{"too narrow for a bar", State{Done: 50, Total: 100, Message: "long message here", Start: start}, at(0), 20,
			"50/100  50%  long m"},
		{"control characters", State{Done: 1, Total: nan, Message: "a\x1b[2Jb\r\nc\x07", Start: start}, at(0), 40,
			`1  a\x1b[2Jb\r\nc\x07`},
		{"bidi override", State{Done: 1, Total: nan, Message: "a\u202eb", Start: start}, at(0), 40, `1  a\u202eb`},
		{"invalid UTF-8", State{Done: 1, Total: nan, Message: "a\xffb", Start: start}, at(0), 40, `1  a\xffb`},
		{"wide characters fit", State{Done: 1, Total: nan, Message: "日本語のテキスト", Start: start}, at(0), 12, "1  日本語の"},
	}
	for _, c := range cases {
		got := Render(c.state, c.now, c.cols)
		if got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
		if runeWidth(got) > c.cols-1 {
			t.Errorf("%s: %q is wider than %d columns", c.name, got, c.cols-1)
		}
		for _, r := range got {
			if termtext.Escapes(r) {
				t.Errorf("%s: %q holds a control character", c.name, got)
			}
		}
	}
}

// screen is a terminal stand-in that records what is written.
type screen struct {
	mu      sync.Mutex
	b       strings.Builder
	written chan struct{} // signalled on each write
}

func newScreen() *screen { return &screen{written: make(chan struct{}, 1)} }

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case s.written <- struct{}{}:
	default:
	}
	return s.b.Write(p)
}

// waitFor returns once what was written satisfies ok.
func (s *screen) waitFor(ok func(string) bool) {
	for !ok(s.String()) {
		<-s.written
	}
}

func (s *screen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestBar(t *testing.T) {
	// Time here is synctest's: the bar's interval and the elapsed time it
	// is checked against are exact, whatever the machine's load.
	synctest.Test(t, func(t *testing.T) {
		out := newScreen()
		bar := New(out, func() int { return 80 }, 20*time.Millisecond)
		total := 10.0
		start := time.Now()
		for i := 1; i <= 10000; i++ {
			bar.Update(float64(i), &total, "working")
		}
		bar.Update(math.NaN(), nil, "ignored")
		out.waitFor(func(s string) bool { return strings.Contains(s, "10000/10  100%") })
		bar.Print(func() { out.Write([]byte("a printed line\n")) })
		// The bar comes back after the line.
		out.waitFor(func(s string) bool {
			_, after, _ := strings.Cut(s, "a printed line\n")
			return strings.Contains(after, "\r[")
		})
		bar.Close()
		elapsed := time.Since(start)
		got := out.String()

		// At most one draw per interval (the first at once): a slower machine
		// only draws less.
		if draws, most := strings.Count(got, "\r["), int(elapsed/(20*time.Millisecond))+2; draws > most {
			t.Errorf("%d draws in %s, at most %d allowed", draws, elapsed, most)
		}
		// A print clears the bar first; the end clears it.
		if !strings.Contains(got, "\r\x1b[Ka printed line\n") || !strings.HasSuffix(got, "\r\x1b[K") {
			t.Errorf("screen %q", got)
		}
		if strings.Contains(got, "ignored") {
			t.Errorf("a NaN update was drawn: %q", got)
		}

		// A bar never updated draws and clears nothing.
		quiet := newScreen()
		New(quiet, func() int { return 80 }, 0).Close()
		if quiet.String() != "" {
			t.Errorf("an unused bar wrote %q", quiet.String())
		}
	})
}

func FuzzRender(f *testing.F) {
	f.Add(1.0, 2.0, "msg", 80)
	f.Add(math.NaN(), math.Inf(1), "\x1b]0;title\x07", 5)
	f.Add(-1e300, 1e-300, "日本", 0)
	f.Fuzz(func(t *testing.T, done, total float64, msg string, cols int) {
		cols = cols % 1000
		got := Render(State{Done: done, Total: total, Message: msg, Start: time.Unix(0, 0)}, time.Unix(3, 0), cols)
		if runeWidth(got) > max(cols-1, 0) {
			t.Errorf("%q is wider than %d columns", got, cols-1)
		}
		for _, r := range got {
			if termtext.Escapes(r) {
				t.Errorf("%q holds a control character", got)
			}
		}
	})
}
