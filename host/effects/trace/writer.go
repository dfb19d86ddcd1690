package trace

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// ErrTooLarge is a recording that would grow past MaxBytes: the trace
// ends before it.
var ErrTooLarge = errors.New("trace: the recording grew past 256 MiB; the trace ends early")

// Writer streams a trace: the header, then entries in the order they were
// reserved. An entry can be reserved before it is known (an sdk call
// waiting for its response): it keeps its place, and the entries after it
// wait in memory until it is filled. Writes are buffered and never
// synced; Close flushes. Its methods are safe for concurrent use.
type Writer struct {
	mu  sync.Mutex
	buf *bufio.Writer
	enc *json.Encoder
	cw  *countingWriter
	err error
	// closed: Close has closed the underlying writer.
	closed bool

	// next is the number of the next reservation; written how many have
	// been written; waiting holds filled entries not yet written, by
	// number.
	next, written int
	waiting       map[int]*Entry
}

// Slot is the place of a reserved entry.
type Slot int

// NewWriter writes h and returns the writer of the entries after it.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	cw := &countingWriter{w: w}
	buf := bufio.NewWriterSize(cw, 64<<10)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	h.Trace = Version
	if err := enc.Encode(h); err != nil {
		return nil, fmt.Errorf("trace: writing the header: %w", err)
	}
	return &Writer{buf: buf, enc: enc, cw: cw, waiting: map[int]*Entry{}}, nil
}

// Reserve keeps the next place in the trace for an entry given later
// (Fill).
func (w *Writer) Reserve() Slot {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := Slot(w.next)
	w.next++
	return s
}

// Fill gives the entry of slot s; it is written once every entry before
// it is.
func (w *Writer) Fill(s Slot, e *Entry) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.waiting[int(s)] = e
	w.drain()
}

// Add writes e after every entry reserved so far.
func (w *Writer) Add(e *Entry) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.waiting[w.next] = e
	w.next++
	w.drain()
}

// drain writes the filled entries that are next in order.
func (w *Writer) drain() {
	for {
		e, ok := w.waiting[w.written]
		if !ok {
			return
		}
		delete(w.waiting, w.written)
		w.written++
		w.write(e)
	}
}

func (w *Writer) write(e *Entry) {
	if w.err != nil || w.closed {
		return
	}
	if err := w.enc.Encode(e); err != nil {
		w.err = fmt.Errorf("trace: %w", err)
		return
	}
	if w.cw.n+int64(w.buf.Buffered()) > MaxBytes {
		w.err = ErrTooLarge
	}
}

// Err is why the trace stopped being written, nil while it is whole.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Close writes the filled entries still waiting, in order (a slot never
// filled is left out), flushes, and closes the underlying writer when it
// is an io.Closer. Later calls return the same error and do nothing.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return w.err
	}
	for ; w.written < w.next; w.written++ {
		if e, ok := w.waiting[w.written]; ok {
			delete(w.waiting, w.written)
			w.write(e)
		}
	}
	w.closed = true
	if err := w.buf.Flush(); err != nil && w.err == nil {
		w.err = fmt.Errorf("trace: %w", err)
	}
	if c, ok := w.cw.w.(io.Closer); ok {
		if err := c.Close(); err != nil && w.err == nil {
			w.err = fmt.Errorf("trace: %w", err)
		}
	}
	return w.err
}

// countingWriter counts the bytes written through it, and stops at
// MaxBytes.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	if c.n+int64(len(p)) > MaxBytes {
		return 0, ErrTooLarge
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
