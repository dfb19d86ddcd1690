package trace

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Reader reads a trace, entry by entry, as untrusted input: each line is
// at most the reader's line bound (NewReader), the whole trace at most
// MaxBytes, and every entry is decoded strictly (unknown fields are
// refused) and checked. A line is decoded as it is read, and one longer
// than the bound is refused as soon as it passes it: no more of it is
// read, and the reader never holds more than about the bound. Every
// failure is an *Error with the line's number.
type Reader struct {
	r    *bufio.Reader
	line int
	read int64
	// maxLine and max are the bounds (NewReader's maxLine, MaxBytes;
	// smaller in tests).
	maxLine, max int64
}

// NewReader reads and checks r's header. maxLine bounds each line (its
// newline left out): LineBytesFor gives the longest line a configuration
// can record; 0, or more than MaxLineBytes, is MaxLineBytes.
func NewReader(r io.Reader, maxLine int64) (*Reader, Header, error) {
	if maxLine <= 0 || maxLine > MaxLineBytes {
		maxLine = MaxLineBytes
	}
	return newReader(r, maxLine, MaxBytes)
}

// LineBytesFor is the longest line a trace can hold when the largest
// payload of one entry (a response with its headers: max_response_bytes;
// the bytes of one io read: at most the script's heap) is payload bytes:
// the payload as base64 (Bytes are never written larger), and room for
// the rest of the entry (headers, a message, a request's URL and body,
// escaped). It is at most MaxLineBytes.
func LineBytesFor(payload int64) int64 {
	const rest = 8 << 20
	if payload <= 0 || payload > MaxLineBytes {
		return MaxLineBytes
	}
	return min(MaxLineBytes, base64Len(payload)+rest)
}

func newReader(r io.Reader, maxLine, max int64) (*Reader, Header, error) {
	tr := &Reader{r: bufio.NewReaderSize(r, 64<<10), maxLine: maxLine, max: max}
	var h Header
	if err := tr.decodeLine(&h); err != nil {
		var te *Error
		switch {
		case err == io.EOF:
			return nil, h, &Error{Line: 1, Reason: "the trace is empty (it has no header)"}
		case errors.As(err, &te) && te.Reason == "":
			te.Reason = "not a trace header: " + te.cause.Error()
		}
		return nil, h, err
	}
	if h.Trace < MinVersion || h.Trace > Version {
		return nil, h, &Error{Line: 1, Reason: fmt.Sprintf("trace format %d, this toolscript reads formats %d to %d", h.Trace, MinVersion, Version)}
	}
	if h.Mode != "" && h.Mode != ModeDryRun && h.Mode != ModePlan {
		return nil, h, &Error{Line: 1, Reason: fmt.Sprintf("unknown mode %q (%s or %s, or none for a real run)", h.Mode, ModeDryRun, ModePlan)}
	}
	return tr, h, nil
}

// Line is the number of the line Next read last (1: the header).
func (r *Reader) Line() int { return r.line }

// Next reads the next entry; io.EOF at the end of the trace.
func (r *Reader) Next() (*Entry, error) {
	e := &Entry{}
	if err := r.decodeLine(e); err != nil {
		var te *Error
		if errors.As(err, &te) && te.Reason == "" {
			te.Reason = "not a trace entry: " + te.cause.Error()
		}
		return nil, err
	}
	if err := e.check(); err != nil {
		return nil, &Error{Line: r.line, Reason: err.Error()}
	}
	return e, nil
}

// decodeLine decodes the next line into v, strictly: one JSON value, no
// unknown field, then the line's end. It returns io.EOF at the end of the
// trace; an *Error whose Reason is empty is the value's own fault (its
// cause says what), for the caller to name what was wanted.
func (r *Reader) decodeLine(v any) error {
	r.line++
	lr := &lineReader{r: r.r, left: r.maxLine + 1, trace: r}
	dec := json.NewDecoder(lr)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		// Only white space may follow the value on its line.
		if _, terr := dec.Token(); terr != io.EOF {
			err = errors.New("more than one JSON value on the line")
		}
	}
	switch {
	case lr.err != nil:
		return &Error{Line: r.line, Reason: lr.err.Error()}
	case err == io.EOF && lr.n == 0:
		r.line--
		return io.EOF
	case err == io.EOF && lr.ended:
		return &Error{Line: r.line, Reason: "an empty line"}
	case !lr.ended && (err == nil || err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF)):
		return &Error{Line: r.line, Reason: "the line has no end (the trace was cut short)"}
	case err != nil:
		return &Error{Line: r.line, cause: err}
	}
	return nil
}

// lineReader reads one line of a trace, its newline included, then
// io.EOF; past the line's bound (left) or the trace's, it fails (err)
// without reading further.
type lineReader struct {
	r     *bufio.Reader
	trace *Reader
	// left is how many more bytes the line may take, its newline
	// included; n how many it took.
	left, n int64
	// pending is the rest of a chunk of the line the last Read could not
	// take (bufio's, valid until its next read).
	pending []byte
	ended   bool
	err     error
}

func (l *lineReader) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	if len(l.pending) == 0 {
		if l.ended {
			return 0, io.EOF
		}
		chunk, err := l.r.ReadSlice('\n')
		switch {
		case err == nil:
			l.ended = true
		case errors.Is(err, bufio.ErrBufferFull):
		case err == io.EOF && len(chunk) == 0:
			return 0, io.EOF
		case err != io.EOF:
			l.err = fmt.Errorf("reading: %w", err)
			return 0, l.err
		}
		l.n += int64(len(chunk))
		l.left -= int64(len(chunk))
		l.trace.read += int64(len(chunk))
		if l.trace.read > l.trace.max {
			l.err = fmt.Errorf("the trace is larger than %d bytes", l.trace.max)
			return 0, l.err
		}
		if l.left < 0 {
			l.err = fmt.Errorf("the line is longer than %d bytes", l.trace.maxLine)
			return 0, l.err
		}
		l.pending = chunk
	}
	n := copy(p, l.pending)
	l.pending = l.pending[n:]
	return n, nil
}
