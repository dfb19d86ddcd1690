//go:build unix

package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolscript/toolscript/internal/syncbuf"
	"github.com/toolscript/toolscript/internal/testupstreams"
	"github.com/toolscript/toolscript/internal/testwait"
)

// recordSink keeps what reaches it.
type recordSink struct {
	lines []string
	notes []string
}

func (r *recordSink) line(text []byte) { r.lines = append(r.lines, string(text)) }
func (r *recordSink) note(text string) { r.notes = append(r.notes, text) }

func TestStderrLineBounded(t *testing.T) {
	// A 64 MiB line without a newline costs MaxStderrLine bytes of
	// memory, and comes out cut, saying how much was dropped.
	out := &recordSink{}
	w := newLineWriter(out)
	chunk := bytes.Repeat([]byte("x"), 1<<20)
	for range 64 {
		w.Write(chunk)
		if cap(w.buf) > MaxStderrLine+256 {
			t.Fatalf("the line buffer grew to %d bytes", cap(w.buf))
		}
	}
	w.Write([]byte("tail\nnext line\npartial"))
	w.flush()
	want := []string{
		strings.Repeat("x", MaxStderrLine) + "... (" + itoa(64<<20+4-MaxStderrLine) + " more bytes of this line dropped)",
		"next line", "partial",
	}
	if len(out.lines) != len(want) {
		t.Fatalf("%d lines", len(out.lines))
	}
	for i := range want {
		if out.lines[i] != want[i] {
			t.Errorf("line %d: %.80q... (%d bytes)", i, out.lines[i], len(out.lines[i]))
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func fmtSscanf(s string, lines, bytes *int) (int, error) {
	return fmt.Sscanf(s, "dropped %d lines (%d bytes)", lines, bytes)
}

func TestStderrRateBounded(t *testing.T) {
	// 32 MiB of lines written at once pass at most the burst and the rate
	// for the time it took; the rest is dropped and counted, and every
	// line is either passed or counted.
	out := &recordSink{}
	w := newLineWriter(out)
	line := bytes.Repeat([]byte("y"), 1023)
	line = append(line, '\n')
	const n = 32 << 10
	start := time.Now()
	for range n {
		w.Write(line)
	}
	w.flush()
	elapsed := time.Since(start)
	passed := 0
	for _, l := range out.lines {
		passed += len(l) + 1 + StderrLineCost
	}
	if bound := StderrBurst + int(float64(StderrRate)*elapsed.Seconds()) + len(line); passed > bound {
		t.Errorf("%d bytes passed in %s, more than %d", passed, elapsed, bound)
	}
	// Each run of drops is announced, then counted once a line passes
	// again (or at the end): lines may pass between runs while the
	// bucket refills.
	var dropped, runs int
	for i, note := range out.notes {
		if i%2 == 0 {
			if !strings.HasPrefix(note, "dropping lines") {
				t.Fatalf("note %d: %q", i, note)
			}
			runs++
			continue
		}
		var lines, bytes int
		if _, err := fmtSscanf(note, &lines, &bytes); err != nil || lines == 0 || bytes != lines*len(line) {
			t.Fatalf("note %d %q: %v", i, note, err)
		}
		dropped += lines
	}
	if runs == 0 || len(out.notes) != 2*runs || dropped+len(out.lines) != n {
		t.Errorf("%d notes: %d dropped + %d passed != %d", len(out.notes), dropped, len(out.lines), n)
	}
}

func TestStderrSinks(t *testing.T) {
	// A server's standard error is a JSON record naming it with a Logger,
	// lines of a file with stderr = <path>, and nothing with "discard".
	argv := testupstreams.Python(t)
	var logs syncbuf.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	file := filepath.Join(t.TempDir(), "py.log")
	var text syncbuf.Buffer
	logged := stdio("logged", argv)
	toFile := stdio("tofile", argv)
	toFile.Stderr = file
	quiet := stdio("quiet", argv)
	quiet.Stderr = StderrDiscard
	start(t, Options{Logger: logger}, logged)
	start(t, Options{Stderr: &text}, toFile, quiet)

	// The banner is written before the server answers, and read on a
	// goroutine of its own.
	banner := func() bool {
		for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			var rec map[string]any
			if err := json.Unmarshal([]byte(l), &rec); err != nil {
				t.Fatalf("not a JSON line: %q", l)
			}
			if rec["msg"] == "pyserver: ready" && rec["upstream"] == "logged" && rec["stream"] == "stderr" && rec["level"] == "INFO" {
				return true
			}
		}
		return false
	}
	testwait.Until(t, "a record of pyserver's banner", banner)
	testwait.Until(t, "the banner in the file", func() bool {
		b, _ := os.ReadFile(file)
		return strings.Contains(string(b), "pyserver: ready\n")
	})
	if strings.Contains(text.String(), "pyserver") {
		t.Errorf("toolscript's stderr has %q", text.String())
	}
}

func TestStderrLinesEscaped(t *testing.T) {
	// A server's standard error passed on as text reaches a person's
	// terminal: its escape sequences are shown, never run, and a carriage
	// return cannot overwrite the "[name] " that says whose line it is.
	argv := append([]string{"sh", "-c", `printf 'title \033]0;owned\007\rcr\n' >&2; exec "$0" "$@"`}, testupstreams.Python(t)...)
	var text syncbuf.Buffer
	start(t, Options{Stderr: &text}, stdio("evil", argv))
	testwait.Until(t, "the server's line", func() bool { return strings.Contains(text.String(), "pyserver: ready") })
	if got, want := text.String(), `[evil] title \x1b]0;owned\x07\rcr`+"\n"; !strings.HasPrefix(got, want) {
		t.Errorf("standard error has %q, want it to start with %q", got, want)
	}
}
