package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The stdio transport: one client, on standard input and output.

// maxWorkers is the number of mcp-go stdio workers: tools/call requests
// beyond it wait in mcp-go's queue, where a cancellation cannot reach them
// yet. Executions are limited by Config.MaxConcurrent, not by this.
const maxWorkers = 100

// stdio is the Server on one stdio connection.
type stdio struct {
	*Server
	// requests are the requests read and not yet answered (requests.go).
	requests *requests
	// out is the protocol output, shared with mcp-go so that the messages
	// the server writes itself (errors) never interleave with mcp-go's.
	out *lineWriter
	// done is closed when Serve's context is: a signal, or the client gone.
	done <-chan struct{}
}

// Serve speaks MCP over in and out until in ends, ctx is cancelled (on
// SIGINT or SIGTERM, say) or out fails (the client is gone). At the end of
// in, the requests already read run to their end and are answered first;
// otherwise the running scripts are cancelled. Serve returns once they have
// stopped; each way is a clean shutdown and returns nil. mcp-go keeps its
// stdio session in a package variable, so a process serves one connection
// at a time.
func (s *Server) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	t := &stdio{Server: s, requests: newRequests(maxPending), done: ctx.Done()}
	t.out = &lineWriter{w: out, requests: t.requests, progress: &delivery{}, failed: func(err error) {
		s.log.Printf("writing to the client failed (%v): stopping", err)
		stop()
	}}
	if err := s.setTransport(t); err != nil {
		return err
	}
	srv := server.NewStdioServer(s.mcp)
	srv.SetErrorLogger(s.log)
	server.WithWorkerPoolSize(maxWorkers)(srv)
	server.WithQueueSize(10 * maxWorkers)(srv)

	err := srv.Listen(ctx, newRequestReader(in, int(s.MaxRequestBytes()), t), t.out)
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("mcpserver: %w", err)
	}
	return nil
}

// track is transport.track: the request is found by the id the hook put
// in its header (requestKeyHeader).
func (t *stdio) track(_ context.Context, req mcp.CallToolRequest, stop context.CancelFunc) (func(), bool) {
	key := req.Header.Get(requestKeyHeader)
	c, ok := t.requests.start(key, stop)
	if !ok {
		return nil, false
	}
	return func() { t.requests.end(key, c) }, true
}

// delivery is transport.delivery: the one output's.
func (t *stdio) delivery(context.Context) *delivery { return t.out.progress }

// lineWriter serialises whole-message writes to the protocol output. mcp-go
// writes each message with one Write call, and so does writeJSON.
//
// Every response passes through requests.answer on its way out: the
// response to a request the client cancelled is dropped (the protocol says
// such a request gets none, and clients report one for an id they no longer
// know as an error; mcp-go answers every request), and the id is forgotten.
// The first failed write (the client is gone) is reported to failed. The
// progress notifications written are counted in progress.
type lineWriter struct {
	mu       sync.Mutex
	w        io.Writer
	requests *requests
	progress *delivery
	failed   func(error)
	broken   bool
}

func (l *lineWriter) Write(p []byte) (int, error) {
	n := len(p)
	if isProgress(p) {
		defer l.progress.wrote()
	} else if id, ok := responseID(p); ok {
		drop, unknownURI := l.requests.answer(idKey(id))
		if drop {
			return n, nil
		}
		if unknownURI != "" {
			p = resourceNotFound(p, unknownURI)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.w.Write(p); err != nil {
		if !l.broken && l.failed != nil {
			l.broken = true
			l.failed(err)
		}
		return 0, err
	}
	return n, nil
}

// responseID returns the id of a JSON-RPC response, a message with an id
// and a result or an error but no method. It reads no further into the
// message than the members before the result when, as mcp-go writes them,
// the id comes first.
func responseID(msg []byte) (json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(msg))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	var id json.RawMessage
	answered := false
	for dec.More() {
		t, err := dec.Token()
		name, ok := t.(string)
		if err != nil || !ok {
			return nil, false
		}
		switch name {
		case "method":
			return nil, false
		case "id":
			if dec.Decode(&id) != nil {
				return nil, false
			}
			if answered {
				return id, true
			}
		case "result", "error":
			if id != nil {
				return id, true
			}
			answered = true
			fallthrough
		default:
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return nil, false
			}
		}
	}
	return nil, false
}

// idKey writes a JSON-RPC id the way mcp-go writes it back (numbers go
// through float64), or "" if it is not a string or a number.
func idKey(id json.RawMessage) string {
	var v any
	if json.Unmarshal(id, &v) != nil {
		return ""
	}
	return keyOf(v)
}

// keyOf is idKey for an id mcp-go has decoded.
func keyOf(id any) string {
	switch id.(type) {
	case string, float64:
		b, _ := json.Marshal(id)
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

// lineHandler is what a requestReader hands lines to.
type lineHandler interface {
	// admit sees every line of the input that is not too long and returns
	// what mcp-go is to read for it: the line, another, or nil for nothing.
	admit(line []byte) []byte
	// refuse sees each line too long to read, with the id found in it
	// (nil if none could be read) and whether it is a request.
	refuse(id json.RawMessage, isRequest bool)
	// drain is called at the end of the input, before mcp-go reads it.
	drain()
}

// requestReader hands the protocol input to mcp-go line by line, keeping
// host memory bounded: a line longer than max is never buffered whole but
// skipped while a small scanner looks for its JSON-RPC id, and refused, so
// that the client gets an error instead of silence. Every other line goes
// through the handler's admit. A last line without a newline gets one, so
// that it is not lost at end of input, and the end of input waits for the
// handler's drain.
type requestReader struct {
	src     *bufio.Reader
	max     int
	handler lineHandler

	line    []byte // the line being handed out
	off     int
	err     error // the input's error, returned once line is used up
	drained bool
}

func newRequestReader(src io.Reader, max int, handler lineHandler) *requestReader {
	return &requestReader{src: bufio.NewReaderSize(src, 64<<10), max: max, handler: handler}
}

func (r *requestReader) Read(p []byte) (int, error) {
	for r.off >= len(r.line) {
		if r.err != nil {
			if r.err == io.EOF && !r.drained {
				r.drained = true
				r.handler.drain()
			}
			return 0, r.err
		}
		r.next()
	}
	n := copy(p, r.line[r.off:])
	r.off += n
	return n, nil
}

// next reads the next line of the input into r.line (empty if it was
// refused or the handler kept it), or records the input's error.
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
		r.handler.refuse(id, isRequest)
		return
	}
	if len(r.line) > 0 {
		r.line = r.handler.admit(r.line)
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
