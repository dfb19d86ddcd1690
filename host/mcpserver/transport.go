package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// lineWriter serialises whole-message writes to the protocol output. mcp-go
// writes each message with one Write call, and so does writeJSON.
//
// It also holds back the response to a request the client cancelled: the
// protocol says such a request gets no response, and clients report one
// for an id they no longer know as an error. mcp-go answers every request,
// so the response is dropped here.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
	// cancelled holds the ids (idKey) of cancelled requests whose response
	// has not been seen yet; order keeps them oldest first, to bound them.
	cancelled map[string]bool
	order     []string
}

// maxCancelled bounds the ids kept: a cancellation that crossed its
// request's response leaves an id that never matches.
const maxCancelled = 1024

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.cancelled) > 0 {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(p, &msg) == nil && msg.Method == "" {
			if key := idKey(msg.ID); l.cancelled[key] {
				delete(l.cancelled, key)
				return len(p), nil
			}
		}
	}
	return l.w.Write(p)
}

// cancel records that the client cancelled the request with this id.
func (l *lineWriter) cancel(id json.RawMessage) {
	key := idKey(id)
	if key == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cancelled == nil {
		l.cancelled = make(map[string]bool)
	}
	l.cancelled[key] = true
	l.order = append(l.order, key)
	if len(l.order) > maxCancelled {
		delete(l.cancelled, l.order[0])
		l.order = l.order[1:]
	}
}

// idKey writes a JSON-RPC id the way mcp-go writes it back (numbers go
// through float64), or "" if it is not a string or a number.
func idKey(id json.RawMessage) string {
	var v any
	if json.Unmarshal(id, &v) != nil {
		return ""
	}
	switch v.(type) {
	case string, float64:
		b, _ := json.Marshal(v)
		return string(b)
	}
	return ""
}

// writeJSON writes v as one line of JSON.
func (l *lineWriter) writeJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding a message: %w", err)
	}
	if _, err := l.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("writing a message: %w", err)
	}
	return nil
}

// requestReader hands the protocol input to mcp-go line by line, keeping
// host memory bounded: a line longer than max is never buffered whole but
// skipped while a small scanner looks for its JSON-RPC id, and refuse is
// called so that the client gets an error instead of silence. A last line
// without a newline gets one, so that it is not lost at end of input.
// onCancel sees the request id of every notifications/cancelled.
type requestReader struct {
	src      *bufio.Reader
	max      int
	refuse   func(id json.RawMessage, isRequest bool)
	onCancel func(id json.RawMessage)

	line []byte // the line being handed out
	off  int
	err  error // the input's error, returned once line is used up
}

func newRequestReader(src io.Reader, max int, refuse func(id json.RawMessage, isRequest bool), onCancel func(id json.RawMessage)) *requestReader {
	return &requestReader{src: bufio.NewReaderSize(src, 64<<10), max: max, refuse: refuse, onCancel: onCancel}
}

func (r *requestReader) Read(p []byte) (int, error) {
	for r.off >= len(r.line) {
		if r.err != nil {
			return 0, r.err
		}
		r.next()
	}
	n := copy(p, r.line[r.off:])
	r.off += n
	return n, nil
}

// next reads the next line of the input into r.line (empty if it was
// refused), or records the input's error.
func (r *requestReader) next() {
	r.line, r.off = r.line[:0], 0
	var finder *idFinder // set once the line is too long
	for {
		chunk, err := r.src.ReadSlice('\n')
		switch {
		case finder != nil:
			finder.write(chunk)
		case len(r.line)+len(chunk) > r.max:
			finder = &idFinder{}
			finder.write(r.line)
			finder.write(chunk)
			r.line = r.line[:0]
		default:
			r.line = append(r.line, chunk...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			r.err = err
			if finder == nil && len(r.line) > 0 {
				r.line = append(r.line, '\n')
			}
		}
		break
	}
	if finder != nil {
		id, isRequest := finder.result()
		r.refuse(id, isRequest)
		return
	}
	if r.onCancel != nil && bytes.Contains(r.line, []byte(mcp.MethodNotificationCancelled)) {
		var msg struct {
			Method string `json:"method"`
			Params struct {
				RequestID json.RawMessage `json:"requestId"`
			} `json:"params"`
		}
		if json.Unmarshal(r.line, &msg) == nil && msg.Method == string(mcp.MethodNotificationCancelled) {
			r.onCancel(msg.Params.RequestID)
		}
	}
}

// idFinder scans a JSON-RPC message byte by byte, without keeping it, for
// the value of its top-level "id" member.
type idFinder struct {
	depth    int
	inString bool
	escaped  bool
	started  bool
	object   bool // the message is a JSON object

	// Members of the top-level object.
	wantKey    bool // the next string is a member name
	readingKey bool
	key        []byte
	lastKey    string
	inID       bool // reading the value of "id"
	sawID      bool
	value      []byte
	valueLong  bool
	id         json.RawMessage
}

const maxIDBytes = 256

func (f *idFinder) write(b []byte) {
	for _, c := range b {
		f.scan(c)
	}
}

func (f *idFinder) scan(c byte) {
	if f.inString {
		switch {
		case f.escaped:
			f.escaped = false
		case c == '\\':
			f.escaped = true
		case c == '"':
			f.inString = false
			if f.readingKey {
				f.readingKey = false
				f.lastKey = string(f.key)
				return
			}
		}
		f.record(c)
		return
	}
	switch c {
	case ' ', '\t', '\r', '\n':
		return
	}
	if !f.started {
		f.started = true
		f.object = c == '{'
	}
	switch c {
	case '"':
		f.inString = true
		if f.depth == 1 && f.wantKey {
			f.wantKey, f.readingKey, f.key = false, true, f.key[:0]
			return
		}
		f.record(c)
	case '{', '[':
		if f.depth == 1 && f.inID {
			f.valueLong = true // an id is a string or a number
		}
		f.depth++
		if f.depth == 1 && c == '{' {
			f.wantKey = true
		}
	case '}', ']':
		if f.depth == 1 {
			f.endValue()
		}
		f.depth--
	case ':':
		if f.depth == 1 && f.lastKey == "id" {
			f.inID, f.sawID, f.value, f.valueLong = true, true, f.value[:0], false
		}
	case ',':
		if f.depth == 1 {
			f.endValue()
			f.wantKey = true
		}
	default:
		f.record(c)
	}
}

// record keeps a byte of a member name or of the id's value.
func (f *idFinder) record(c byte) {
	switch {
	case f.readingKey:
		if len(f.key) <= 8 { // longer names are kept cut, and match nothing
			f.key = append(f.key, c)
		}
	case f.inID && f.depth == 1:
		if len(f.value) < maxIDBytes {
			f.value = append(f.value, c)
		} else {
			f.valueLong = true
		}
	}
}

func (f *idFinder) endValue() {
	if !f.inID {
		return
	}
	f.inID = false
	if f.valueLong || len(f.value) == 0 || !json.Valid(f.value) {
		return
	}
	if c := f.value[0]; c == '"' || c == '-' || (c >= '0' && c <= '9') {
		f.id = append(json.RawMessage(nil), f.value...)
	}
}

// result returns the id found (nil if none could be read) and whether the
// message is a request, that is anything but an object without an id.
func (f *idFinder) result() (json.RawMessage, bool) {
	f.endValue()
	if f.object && !f.sawID {
		return nil, false
	}
	return f.id, true
}
