package trace

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/toolscript/toolscript/internal/syncbuf"
)

// ErrTooLarge is a recording that would grow past MaxBytes: the trace
// ends before it.
var ErrTooLarge = errors.New("trace: the recording grew past 256 MiB; the trace ends early")

// Writer streams a trace: the header, then entries in the order they were
// reserved. An entry can be reserved before it is known (an sdk call
// waiting for its response): it keeps its place, and the entries after it
// wait in memory until it is filled. Entries are encoded and written by a
// goroutine of the writer's own, off the path of the execution that gives
// them (which goes on at once unless maxQueued bytes of entries wait);
// writes are buffered and never synced; Close flushes. Its methods are
// safe for concurrent use.
type Writer struct {
	mu sync.Mutex
	// next is the number of the next reservation; written how many have
	// been handed to the encoder; waiting holds filled entries not yet
	// handed over, by number.
	next, written int
	waiting       map[int]*Entry
	// queue holds the entries handed over and not yet encoded, queued
	// about how many bytes; moved is signalled when the queue changes or
	// closing is set.
	queue   []*Entry
	queued  int
	moved   *sync.Cond
	closing bool
	// flush asks the encoder to take what is queued at once (Prefix).
	flush bool
	// done is closed when the encoder has written everything and flushed.
	done chan struct{}
	// closed: Close has returned; released: Release has.
	closed, released bool
	// mem is a memory recording's trace (NewMemoryWriter), nil for
	// another; encoded is how many entries the encoder has written to it,
	// ends where each of them ends in it (after headerEnd, the header's).
	mem       *syncbuf.Buffer
	encoded   int
	ends      []int64
	headerEnd int64
	// failed is the encoder's error as publish last saw it.
	failed error

	// The encoder's own until done is closed.
	buf *bufio.Writer
	enc *json.Encoder
	cw  *countingWriter
	err error
}

// maxQueued bounds the bytes of entries waiting for the encoder: past it,
// the execution waits for the encoder to catch up.
const maxQueued = 8 << 20

// The encoder is woken when this many bytes or entries are queued (or
// at Close).
const (
	wakeQueued  = 64 << 10
	wakeEntries = 256
)

// Slot is the place of a reserved entry.
type Slot int

// NewWriter writes h and returns the writer of the entries after it.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	return NewWriterWithin(w, h, nil, "")
}

// NewWriterWithin is NewWriter for a trace of user's in a record
// directory whose traces q bounds (nil: no bound but MaxBytes): each write
// takes its bytes from q, and past a bound of q the trace ends at its last
// whole line (Close returns a *QuotaError).
func NewWriterWithin(w io.Writer, h Header, q *Quota, user string) (*Writer, error) {
	cw := &countingWriter{w: w, quota: q, user: user}
	buf := bufio.NewWriterSize(cw, 64<<10)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	h.Trace = Version
	if err := enc.Encode(h); err != nil {
		return nil, fmt.Errorf("trace: writing the header: %w", err)
	}
	tw := &Writer{buf: buf, enc: enc, cw: cw, waiting: map[int]*Entry{}, done: make(chan struct{})}
	tw.moved = sync.NewCond(&tw.mu)
	if m, ok := w.(*syncbuf.Buffer); ok {
		tw.mem = m
		if err := buf.Flush(); err != nil { // only past a bound of q
			tw.err = traceError(err)
			tw.failed = tw.err
		}
		tw.headerEnd = cw.n
	}
	go tw.encode()
	return tw, nil
}

// NewMemoryWriter records a trace of header h to memory: Bytes reads it
// once closed, Prefix a consistent beginning of it at any time.
func NewMemoryWriter(h Header) *Writer {
	w, _ := NewWriter(&syncbuf.Buffer{}, h) // writing to memory does not fail
	return w
}

// Bytes is a memory recording's trace as written so far (all of it once
// Close returned); nil for a writer that is not one.
func (w *Writer) Bytes() []byte {
	if w.mem == nil {
		return nil
	}
	return w.mem.Bytes()
}

// Held is how many bytes a memory recording holds: the trace encoded so
// far and the entries queued for the encoder; 0 for a writer that is not
// one, and for a nil writer.
func (w *Writer) Held() int64 {
	if w == nil {
		return 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.mem == nil {
		return 0
	}
	end := w.headerEnd
	if len(w.ends) > 0 {
		end = w.ends[len(w.ends)-1]
	}
	return end + int64(w.queued)
}

// Release gives back to the writer's Quota the bytes it wrote: for a
// memory recording, once it is dropped. It waits for Close; later calls
// do nothing.
func (w *Writer) Release() {
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cw.quota != nil && !w.released {
		w.cw.quota.Remove(w.cw.user, w.cw.n)
	}
	w.released = true
}

// Prefix is a memory recording's header and first n entries, each whole:
// it waits until every one of them is filled (a call's response has
// come) and written, or until ctx is done (an error saying how many are
// still waiting). Entries after them may still come.
func (w *Writer) Prefix(ctx context.Context, n int) ([]byte, error) {
	if w.mem == nil {
		return nil, errors.New("trace: only a memory recording gives a prefix")
	}
	stop := context.AfterFunc(ctx, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.moved.Broadcast()
	})
	defer stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.encoded < n {
		switch {
		case w.failed != nil:
			return nil, w.failed
		case w.closing:
			return nil, fmt.Errorf("trace: the recording has %d entries, not %d", w.encoded, n)
		case ctx.Err() != nil:
			return nil, fmt.Errorf("trace: %d of the prefix's %d entries are still waiting (calls in flight): %w", n-w.written, n, ctx.Err())
		}
		w.flush = true
		w.moved.Broadcast() // wakes the encoder for what is queued
		w.moved.Wait()
	}
	end := w.headerEnd
	if n > 0 {
		end = w.ends[n-1]
	}
	return w.mem.Bytes()[:end], nil
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

// Reserved is how many places the writer has given (Reserve, Add): the
// number of the next.
func (w *Writer) Reserved() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.next
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

// drain hands the filled entries that are next in order to the encoder,
// waiting while too many bytes of them are queued. w.mu is held.
func (w *Writer) drain() {
	for {
		e, ok := w.waiting[w.written]
		if !ok || w.closing {
			return
		}
		delete(w.waiting, w.written)
		w.written++
		for w.queued > maxQueued && !w.closing {
			w.moved.Wait()
		}
		w.queue = append(w.queue, e)
		w.queued += e.size()
		// The encoder is woken for a batch, not for each entry: waking a
		// goroutine costs about what encoding a small entry does (or when
		// a Prefix waits).
		if w.queued >= wakeQueued || len(w.queue) >= wakeEntries || w.flush {
			w.moved.Broadcast()
		}
	}
}

// encode is the encoder: it writes the queued entries until Close, then
// flushes.
func (w *Writer) encode() {
	defer close(w.done)
	for {
		w.mu.Lock()
		for len(w.queue) == 0 && !w.closing {
			w.moved.Wait()
		}
		batch, closing := w.queue, w.closing
		w.queue, w.queued, w.flush = nil, 0, false
		w.moved.Broadcast()
		w.mu.Unlock()
		var ends []int64
		for _, e := range batch {
			w.write(e)
			if w.mem != nil && w.err == nil {
				ends = append(ends, w.cw.n+int64(w.buf.Buffered()))
			}
		}
		if w.mem != nil && len(batch) > 0 {
			w.publish(ends)
		}
		if closing && len(batch) == 0 {
			break
		}
	}
	if err := w.buf.Flush(); err != nil && w.err == nil {
		w.err = traceError(err)
	}
}

// publish flushes a memory recording's batch and counts its entries
// written, for Prefix.
func (w *Writer) publish(ends []int64) {
	if err := w.buf.Flush(); err != nil && w.err == nil {
		w.err = traceError(err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ends = append(w.ends, ends...)
	w.encoded = len(w.ends)
	w.failed = w.err
	w.moved.Broadcast()
}

func (w *Writer) write(e *Entry) {
	if w.err != nil {
		return
	}
	if err := w.enc.Encode(e); err != nil {
		w.err = traceError(err)
		return
	}
	if w.cw.n+int64(w.buf.Buffered()) > MaxBytes {
		w.err = ErrTooLarge
	}
}

// Close hands over the filled entries still waiting, in order (a slot
// never filled is left out), waits until the encoder has written and
// flushed them, and closes the underlying writer when it is an
// io.Closer. It returns why the trace is not whole, nil when it is; later
// calls return the same and do nothing.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return w.err
	}
	for ; w.written < w.next; w.written++ {
		if e, ok := w.waiting[w.written]; ok {
			delete(w.waiting, w.written)
			w.queue = append(w.queue, e)
		}
	}
	w.closing = true
	w.moved.Broadcast()
	w.mu.Unlock()
	<-w.done
	if c, ok := w.cw.w.(io.Closer); ok {
		if err := c.Close(); err != nil && w.err == nil {
			w.err = fmt.Errorf("trace: %w", err)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	return w.err
}

// size is about how many bytes e holds: what the encoder's queue counts.
func (e *Entry) size() int {
	n := 128 + len(e.URL) + len(e.Body) + len(e.Files)
	for k, v := range e.Headers {
		n += len(k) + len(v)
	}
	if r := e.Response; r != nil {
		n += len(r.Message) + len(r.JSON) + len(r.Text) + len(r.Content)
		for k, v := range r.Headers {
			n += len(k) + len(v)
		}
	}
	if o := e.IO; o != nil {
		n += len(o.Path) + len(o.Pending) + len(o.Data)
	}
	return n
}

// traceError is err as the trace's: a cut as it is, any other error
// wrapped.
func traceError(err error) error {
	if IsCut(err) {
		return err
	}
	return fmt.Errorf("trace: %w", err)
}

// countingWriter counts the bytes written through it, and stops at
// MaxBytes and at its quota's bounds: a write that would pass one is cut
// at its last whole line, and returns why.
type countingWriter struct {
	w     io.Writer
	n     int64
	quota *Quota
	user  string
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n := int64(len(p))
	var cut error
	if c.n+n > MaxBytes {
		n, cut = MaxBytes-c.n, ErrTooLarge
	}
	if c.quota != nil {
		granted, err := c.quota.take(c.user, n)
		if err != nil {
			n, cut = granted, err
		}
	}
	if cut != nil {
		whole := int64(bytes.LastIndexByte(p[:n], '\n') + 1)
		c.giveBack(n - whole)
		n = whole
	}
	written := 0
	var err error
	if n > 0 {
		written, err = c.w.Write(p[:n])
	}
	c.n += int64(written)
	c.giveBack(n - int64(written))
	if err == nil {
		err = cut
	}
	return written, err
}

// giveBack returns n bytes taken from the quota and not written.
func (c *countingWriter) giveBack(n int64) {
	if c.quota != nil {
		c.quota.give(c.user, n)
	}
}
