package upstream

import (
	"bytes"
	"io"
	"sync"
)

// maxLine is the longest stderr line kept whole; longer ones are written
// in pieces of this size, each prefixed.
const maxLine = 64 << 10

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

// lineWriter writes each line of a server's standard error to out with a
// prefix naming the server.
type lineWriter struct {
	mu     sync.Mutex
	prefix []byte
	out    io.Writer
	buf    []byte
}

func newLineWriter(prefix string, out io.Writer) *lineWriter {
	return &lineWriter{prefix: []byte(prefix), out: out}
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			l.buf = append(l.buf, p...)
			if len(l.buf) >= maxLine {
				l.emit(l.buf[:maxLine])
				l.buf = append(l.buf[:0], l.buf[maxLine:]...)
			}
			break
		}
		l.buf = append(l.buf, p[:i]...)
		l.emit(l.buf)
		l.buf = l.buf[:0]
		p = p[i+1:]
	}
	return n, nil
}

// emit writes one line; a failing stream loses the server's stderr, never
// the server.
func (l *lineWriter) emit(line []byte) {
	out := make([]byte, 0, len(l.prefix)+len(line)+1)
	out = append(append(append(out, l.prefix...), line...), '\n')
	_, _ = l.out.Write(out)
}
