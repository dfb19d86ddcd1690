package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Reader reads a trace, entry by entry, as untrusted input: each line is
// at most MaxLineBytes, the whole trace at most MaxBytes, and every entry
// is decoded strictly (unknown fields are refused) and checked. Every
// failure is an *Error with the line's number.
type Reader struct {
	r    *bufio.Reader
	line int
	read int64
	// maxLine and max are the bounds (MaxLineBytes, MaxBytes), smaller in
	// tests.
	maxLine, max int64
}

// NewReader reads and checks r's header.
func NewReader(r io.Reader) (*Reader, Header, error) {
	return newReader(r, MaxLineBytes, MaxBytes)
}

func newReader(r io.Reader, maxLine, max int64) (*Reader, Header, error) {
	tr := &Reader{r: bufio.NewReaderSize(r, 64<<10), maxLine: maxLine, max: max}
	var h Header
	line, err := tr.nextLine()
	if err == io.EOF {
		return nil, h, &Error{Line: 1, Reason: "the trace is empty (it has no header)"}
	}
	if err != nil {
		return nil, h, err
	}
	if err := strict(line, &h); err != nil {
		return nil, h, &Error{Line: 1, Reason: "not a trace header: " + err.Error()}
	}
	if h.Trace != Version {
		return nil, h, &Error{Line: 1, Reason: fmt.Sprintf("trace format %d, this toolscript reads format %d", h.Trace, Version)}
	}
	return tr, h, nil
}

// Line is the number of the line Next read last (1: the header).
func (r *Reader) Line() int { return r.line }

// Next reads the next entry; io.EOF at the end of the trace.
func (r *Reader) Next() (*Entry, error) {
	line, err := r.nextLine()
	if err != nil {
		return nil, err
	}
	e := &Entry{}
	if err := strict(line, e); err != nil {
		return nil, &Error{Line: r.line, Reason: "not a trace entry: " + err.Error()}
	}
	if err := e.check(); err != nil {
		return nil, &Error{Line: r.line, Reason: err.Error()}
	}
	return e, nil
}

// nextLine reads one line, without its newline, within the bounds. An
// empty line is an error; so is a last line without its newline (a trace
// cut short).
func (r *Reader) nextLine() ([]byte, error) {
	r.line++
	var line []byte
	for {
		chunk, err := r.r.ReadSlice('\n')
		r.read += int64(len(chunk))
		if r.read > r.max {
			return nil, &Error{Line: r.line, Reason: fmt.Sprintf("the trace is larger than %d bytes", r.max)}
		}
		if int64(len(line)+len(chunk)) > r.maxLine+1 {
			return nil, &Error{Line: r.line, Reason: fmt.Sprintf("the line is longer than %d bytes", r.maxLine)}
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			line = line[:len(line)-1]
			if len(bytes.TrimSpace(line)) == 0 {
				return nil, &Error{Line: r.line, Reason: "an empty line"}
			}
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF:
			if len(line) == 0 {
				r.line--
				return nil, io.EOF
			}
			return nil, &Error{Line: r.line, Reason: "the line has no end (the trace was cut short)"}
		default:
			return nil, &Error{Line: r.line, Reason: "reading: " + err.Error()}
		}
	}
}

// strict decodes one JSON value into v, refusing unknown fields and
// anything after the value.
func strict(line []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one JSON value on the line")
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("more than one JSON value on the line")
	}
	return nil
}
