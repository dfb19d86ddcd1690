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
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolscript/toolscript/host/contract/redact"
)

// The stdio transport: one client, on standard input and output. It
// frames messages (one a line) and hands them to the core; the core's
// request ids all live in one scope.

// maxPending is how many requests may await their response: reading the
// input waits beyond it, which bounds the request table and the goroutines
// of the requests.
const maxPending = 256

// Serve speaks MCP over in and out until in ends, ctx is cancelled (on
// SIGINT or SIGTERM, say) or the client is gone (out fails, or, for a
// pipe or a socket, its reader closed it). At the end of
// in, the requests already read run to their end and are answered first;
// otherwise the running scripts are cancelled. Serve returns once they have
// stopped; each way is a clean shutdown and returns nil.
func (s *Server) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	if err := s.setTransport(maxPending); err != nil {
		return err
	}
	w := &lineWriter{w: out, redact: s.cfg.Redactor, failed: func(err error) {
		s.log.Printf("the client is gone (writing to it failed: %v): stopping", err)
		stop()
	}}
	watchHangup(ctx, out, func() {
		s.log.Printf("the client is gone (its end of standard output is closed): stopping")
		stop()
	})
	// mcp-go tells the sessions it knows of changes (the sdk's tools and
	// resources, after SetSDKDocs): this connection is one.
	session := &stdioSession{notifications: make(chan mcp.JSONRPCNotification, 100)}
	if err := s.mcp.RegisterSession(ctx, session); err != nil {
		return fmt.Errorf("mcpserver: %w", err)
	}
	defer s.mcp.UnregisterSession(ctx, session.SessionID())
	go func() {
		for {
			select {
			case n := <-session.notifications:
				_ = w.write(n)
			case <-ctx.Done():
				return
			}
		}
	}()

	read := make(chan error, 1)
	// What the client declares at initialize holds for the connection.
	runners := &runners{run: s.run, calls: make(chan *call), done: ctx.Done()}
	go func() { read <- s.readLines(withPeer(s.mcp.WithContext(ctx, session), &peer{}), in, w, runners) }()
	select {
	case err := <-read:
		if errors.Is(err, io.EOF) || err == nil {
			if n, _ := s.table.len(); n > 0 {
				noun := map[bool]string{true: "request", false: "requests"}[n == 1]
				s.log.Printf("end of input: finishing %d %s", n, noun)
			}
			s.table.wait(ctx.Done())
		} else if ctx.Err() == nil {
			s.log.Printf("reading the input: %v", err)
		}
	case <-ctx.Done():
	}
	stop()
	s.table.wait(nil) // the requests still running stop, with ctx
	return nil
}

// readLines hands every line of in to the core until in ends or ctx is
// cancelled. It keeps host memory bounded: a line longer than
// MaxRequestBytes is never buffered whole but skipped while a small
// scanner looks for its JSON-RPC id (idFinder), and refused, so that the
// client gets an error instead of silence. A last line without a newline
// is read as well.
func (s *Server) readLines(ctx context.Context, in io.Reader, w *lineWriter, r *runners) error {
	src := bufio.NewReaderSize(in, 64<<10)
	max := int(s.MaxRequestBytes())
	var line []byte
	for ctx.Err() == nil {
		line = line[:0]
		var finder *idFinder // set once the line is too long
		var err error
		for {
			var chunk []byte
			chunk, err = src.ReadSlice('\n')
			switch {
			case finder != nil:
				finder.write(chunk)
			case len(line)+len(chunk) > max:
				finder = &idFinder{}
				finder.write(line)
				finder.write(chunk)
				line = line[:0]
			default:
				line = append(line, chunk...)
			}
			if err != bufio.ErrBufferFull {
				break
			}
		}
		if finder != nil {
			s.refuse(w, finder)
		} else if len(line) > 0 {
			s.handleLine(ctx, line, w, r)
		}
		if err != nil {
			return err
		}
	}
	return ctx.Err()
}

// handleLine hands one line to the core; r runs the call it makes.
func (s *Server) handleLine(ctx context.Context, line []byte, w *lineWriter, r *runners) {
	// The line's buffer is reused for the next: the message is a copy.
	raw := append(json.RawMessage(nil), line...)
	var msg envelope
	if err := json.Unmarshal(raw, &msg); err != nil {
		switch {
		case isBlank(raw):
		case !json.Valid(raw):
			s.answer(w, rpcError(json.RawMessage("null"), mcp.PARSE_ERROR, "Parse error", nil))
		default: // not an object, or members of the wrong types: mcp-go answers
			s.answer(w, s.mcp.HandleMessage(ctx, raw))
		}
		return
	}
	if c := s.receive(incoming{ctx: ctx, msg: &msg, raw: raw, conn: w, done: ctx.Done()}); c != nil {
		r.start(c)
	}
}

// runners run the calls of one connection, each on a goroutine of its
// own. A goroutine whose call has ended waits for the next call rather
// than ending, so that the stack it grew on the way through mcp-go, the
// handler and the wasm runtime (tens of kilobytes) serves the next call
// instead of being grown again from a few kilobytes: about 2% of the
// server's CPU time per call. At most as many goroutines wait as calls
// ever ran at once (bounded by the request table); they end with the
// connection.
type runners struct {
	run   func(*call) // Server.run
	calls chan *call  // unbuffered: a send succeeds only when one waits
	done  <-chan struct{}
}

// start runs c on a waiting goroutine, or on a new one if none waits: a
// call never waits for another to end.
func (r *runners) start(c *call) {
	select {
	case r.calls <- c:
	default:
		go r.loop(c)
	}
}

func (r *runners) loop(c *call) {
	for {
		r.run(c)
		select {
		case c = <-r.calls:
		case <-r.done:
			return
		}
	}
}

func isBlank(line []byte) bool {
	for _, c := range line {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return false
		}
	}
	return true
}

// refuse answers a line too long to read: a request gets an Invalid
// Request error with its id (null when none could be read), a
// notification nothing.
func (s *Server) refuse(w *lineWriter, f *idFinder) {
	limit := s.MaxRequestBytes()
	s.log.Printf("refused a message of more than %d bytes", limit)
	id, isRequest := f.result()
	if !isRequest {
		return
	}
	if id == nil {
		id = json.RawMessage("null")
	}
	s.writeError(w, id, mcp.INVALID_REQUEST, fmt.Sprintf("request too large: more than %d bytes (a script may be at most %d bytes)",
		limit, s.cfg.MaxScriptBytes))
}

// lineWriter writes whole messages to the protocol output, one a line,
// one at a time. The first failed write (the client is gone) is reported
// to failed; nothing is written after it.
type lineWriter struct {
	mu     sync.Mutex
	w      io.Writer
	redact *redact.Redactor // of every message
	buf    []byte
	failed func(error)
	broken bool
}

var errBroken = errors.New("the protocol output failed before")

// write is conn.write.
func (l *lineWriter) write(msg any) error {
	b, err := encodeMessage(msg, l.redact)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.broken {
		return errBroken
	}
	l.buf = append(append(l.buf[:0], b...), '\n')
	if _, err := l.w.Write(l.buf); err != nil {
		l.broken = true
		if l.failed != nil {
			l.failed(err)
		}
		return fmt.Errorf("writing a message: %w", err)
	}
	return nil
}

// stdioSession is the stdio connection as mcp-go's server.ClientSession:
// mcp-go queues its notifications to the client (tools/list_changed) on
// it, and Serve writes them.
type stdioSession struct {
	notifications chan mcp.JSONRPCNotification
	initialized   atomic.Bool
}

func (s *stdioSession) SessionID() string { return "stdio" }
func (s *stdioSession) Initialize()       { s.initialized.Store(true) }
func (s *stdioSession) Initialized() bool { return s.initialized.Load() }
func (s *stdioSession) NotificationChannel() chan<- mcp.JSONRPCNotification {
	return s.notifications
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

// maxKeyBytes is the longest member name, as sent, the finder reads:
// "id" spelt with escapes ("\u0069\u0064") is 12 bytes.
const maxKeyBytes = 16

// memberName is the name of a member as sent between its quotes, its
// escapes decoded.
func memberName(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw)
	}
	var name string
	if json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &name) != nil {
		return ""
	}
	return name
}

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
				f.lastKey = memberName(f.key)
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
		if len(f.key) <= maxKeyBytes { // longer names are kept cut, and match nothing
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
