package upstream

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/toolscript/toolscript/host/contract/redact"
	"github.com/toolscript/toolscript/host/platform/termtext"
)

// Where a server's standard error goes ([mcp_servers.NAME] stderr): the
// empty string is StderrInherit.
const (
	// StderrInherit passes each line to toolscript's standard error:
	// prefixed with "[name] " as text, or as a JSON record with the
	// server's name when Options.Logger is set (the hosted mode).
	StderrInherit = "inherit"
	// StderrDiscard drops it.
	StderrDiscard = "discard"
	// Anything else is the path of a file the lines are appended to, as
	// they are (rotated at MaxStderrFileBytes).
)

// The bounds of what a server's standard error costs the host, whatever
// it writes: the memory of one line, the rate of lines passed on, and the
// size of a file.
const (
	// MaxStderrLine is the longest line passed on; the rest of a longer
	// line is dropped (and the line says how many bytes were).
	MaxStderrLine = 16 << 10
	// StderrRate and StderrBurst bound the bytes per second passed on
	// from one server, each line counting StderrLineCost bytes more than
	// its text (what a JSON record adds to it); past them lines are
	// dropped, and a line then says how many were.
	StderrRate     = 64 << 10
	StderrBurst    = 1 << 20
	StderrLineCost = 128
	// MaxStderrFileBytes is the size past which a stderr file is renamed
	// to its name with ".1" appended (replacing the previous one) and
	// started again.
	MaxStderrFileBytes = 16 << 20
)

// lockedWriter serialises writes of several servers to one stream.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// sink receives whole lines (without their newline) of one server.
type sink interface {
	line(text []byte)
	// note is toolscript's own line about the server (a warning).
	note(text string)
}

// textSink writes lines to a shared stream, prefixed with "[name] ", for a
// person's terminal: each line escaped as one line by host/platform/termtext, so
// that the server's text cannot act on the terminal or hide whose it is.
type textSink struct {
	prefix string
	out    io.Writer
}

// line writes one line; a failing stream loses the server's stderr, never
// the server.
func (t textSink) line(text []byte) {
	shown := termtext.Line(string(text))
	out := make([]byte, 0, len(t.prefix)+len(shown)+1)
	out = append(append(append(out, t.prefix...), shown...), '\n')
	_, _ = t.out.Write(out)
}

func (t textSink) note(text string) { t.line([]byte("toolscript: " + text)) }

// logSink makes each line a JSON record naming the server.
type logSink struct {
	log  *slog.Logger
	name string
}

func (l logSink) line(text []byte) {
	l.log.Info(string(bytes.ToValidUTF8(text, []byte("\uFFFD"))), "upstream", l.name, "stream", "stderr")
}

func (l logSink) note(text string) { l.log.Warn(text, "upstream", l.name) }

// redactedSink redacts the configuration's secrets from lines and notes
// (a server may print its command line or environment).
type redactedSink struct {
	r *redact.Redactor
	sink
}

func (s redactedSink) line(text []byte) { s.sink.line(s.r.Bytes(text)) }
func (s redactedSink) note(text string) { s.sink.note(s.r.String(text)) }

// fileSink appends lines to a file, rotated at MaxStderrFileBytes; notes
// go to the server's inherited sink too.
type fileSink struct {
	mu   sync.Mutex
	path string
	f    *os.File
	size int64
	also sink
}

func openFileSink(path string, also sink) (*fileSink, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &fileSink{path: path, f: f, size: st.Size(), also: also}, nil
}

func (s *fileSink) line(text []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return
	}
	if s.size+int64(len(text))+1 > MaxStderrFileBytes && s.size > 0 {
		_ = s.f.Close()
		_ = os.Rename(s.path, s.path+".1")
		f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_TRUNC, 0o600)
		s.f, s.size = f, 0
		if err != nil {
			s.f = nil
			s.also.note(fmt.Sprintf("its standard error file %s could not be started again (its lines are dropped from now on): %v", s.path, err))
			return
		}
	}
	n, _ := s.f.Write(append(text, '\n'))
	s.size += int64(n)
}

func (s *fileSink) note(text string) {
	s.line([]byte("toolscript: " + text))
	s.also.note(text)
}

func (s *fileSink) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil {
		_ = s.f.Close()
		s.f = nil
	}
}

// lineWriter cuts a server's standard error into lines for a sink, within
// the bounds above: it holds at most MaxStderrLine bytes, and passes on at
// most StderrRate bytes a second.
type lineWriter struct {
	mu      sync.Mutex
	out     sink
	buf     []byte
	cut     int64 // bytes of the current line past MaxStderrLine, dropped
	limit   *rate.Limiter
	dropped int   // lines dropped by the rate limit, not said yet
	dropB   int64 // and their bytes
}

func newLineWriter(out sink) *lineWriter {
	return &lineWriter{out: out, limit: rate.NewLimiter(StderrRate, StderrBurst)}
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		room := MaxStderrLine - len(l.buf)
		if len(chunk) > room {
			l.cut += int64(len(chunk) - room)
			chunk = chunk[:room]
		}
		l.buf = append(l.buf, chunk...)
		if i < 0 {
			break
		}
		l.emit()
		p = p[i+1:]
	}
	return n, nil
}

// flush passes on a last line without its newline (the process ended).
func (l *lineWriter) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 || l.cut > 0 {
		l.emit()
	}
	l.sayDropped()
}

// emit passes on the line held, unless the rate limit drops it.
func (l *lineWriter) emit() {
	line := l.buf
	if l.cut > 0 {
		line = fmt.Appendf(line, "... (%d more bytes of this line dropped)", l.cut)
	}
	size := len(line) + 1 + StderrLineCost
	if !l.limit.AllowN(time.Now(), size) {
		if l.dropped == 0 {
			l.out.note(fmt.Sprintf("dropping lines of its standard error: more than %d bytes a second (how many follows)", StderrRate))
		}
		l.dropped++
		l.dropB += int64(len(line) + 1)
	} else {
		l.sayDropped()
		l.out.line(line)
	}
	l.buf = l.buf[:0]
	if cap(l.buf) > MaxStderrLine+256 {
		l.buf = nil
	}
	l.cut = 0
}

func (l *lineWriter) sayDropped() {
	if l.dropped > 0 {
		l.out.note(fmt.Sprintf("dropped %d lines (%d bytes) of its standard error: more than %d bytes a second", l.dropped, l.dropB, StderrRate))
		l.dropped, l.dropB = 0, 0
	}
}

// note writes toolscript's own line about the server.
func (s *server) note(text string) { s.notes.note(text) }

// noteHandler passes the warnings and errors of an HTTP server's
// transport (mcp-go's logger) on as notes about the server.
type noteHandler struct {
	s     *server
	attrs []slog.Attr
}

func (h noteHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h noteHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	add := func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	h.s.note(b.String())
	return nil
}

func (h noteHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return noteHandler{s: h.s, attrs: append(slices.Clip(h.attrs), attrs...)}
}

func (h noteHandler) WithGroup(string) slog.Handler { return h }
