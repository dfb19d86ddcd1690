package upstream

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"sync/atomic"
)

// messageFactor and messageSlack size the cap on one message from an
// upstream: messageFactor × max_response_bytes + messageSlack. The exact
// check of a result against max_response_bytes happens after decoding
// (result); this cap only makes sure a larger message is never read
// whole, so it leaves room for what the wire adds to a result that fits:
// JSON escaping of the text, the JSON-RPC envelope, and the copy of
// structured content that servers also send as indented text (the
// official Python SDK does; measured at 2.1× to 2.9× the structured
// content for lists of records, numbers and strings).
const (
	messageFactor = 4
	messageSlack  = 1 << 20
)

// maxMessageBytes is the cap on one message from an upstream for a given
// max_response_bytes; 0 (no cap) for 0.
func maxMessageBytes(maxResponseBytes int64) int64 {
	if maxResponseBytes <= 0 {
		return 0
	}
	return messageFactor*maxResponseBytes + messageSlack
}

// framing says where a message of a stream ends.
type framing int

const (
	// lines: each line is a message (as on stdio, whose connections a
	// lineGuard reads instead: it skips an over-cap line and goes on).
	lines framing = iota
	// events: each server-sent event is a message; it ends at a blank line
	// (one of only '\r's), and mcp-go joins its data lines in memory.
	events
	// whole: the stream is one message (an application/json body).
	whole
)

// limitReader passes its reader's bytes through until one message is
// longer than max bytes (the newline that ends a message not counted):
// then it passes the bytes up to the cap and fails with trip's error,
// and keeps failing. Nothing past the cap is ever returned, so the
// reader above buffers at most max bytes of a message. With a scan, it
// also holds each message to the bounds a scan checks (maxDepth,
// maxBlocks: the JSON of a whole body, or the data lines of an event)
// and fails the same way, right after the byte that passes one.
type limitReader struct {
	r       io.Reader
	framing framing
	max     int64
	// trip is called once, when the cap or a bound is passed (why); its
	// error is what Read returns from then on.
	trip func(why overKind) error
	scan *scan // nil: sizes only
	// admit, when not nil (events, with a scan), decides whether a whole
	// event may end: the stream fails with overRequests at the end of one
	// it does not admit, which mcp-go then never handles.
	admit func(*scan) bool

	size  int64 // bytes of the current message so far
	dirty bool  // (events) the current line has a byte other than '\r'
	// (events, with a scan) how much of "data:" starts the current line,
	// and whether that was decided (data: it is a data line).
	linePos int
	decided bool
	data    bool
	err     error
}

func newLimitReader(r io.Reader, f framing, max int64, trip func(why overKind) error) *limitReader {
	return &limitReader{r: r, framing: f, max: max, trip: trip}
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	n, err := l.r.Read(p)
	for i := 0; i < n; {
		end := n // the end of this line's bytes in p, before its newline
		if l.framing != whole {
			if j := bytes.IndexByte(p[i:n], '\n'); j >= 0 {
				end = i + j
			}
		}
		if l.size+int64(end-i) > l.max {
			return l.fail(i+int(l.max-l.size), overSize)
		}
		if l.scan != nil {
			if k, why := l.inspect(p[i:end]); why != notOver {
				return l.fail(i+k, why)
			}
		}
		l.size += int64(end - i)
		if l.framing == events && !l.dirty && len(bytes.Trim(p[i:end], "\r")) > 0 {
			l.dirty = true
		}
		if end == n {
			break
		}
		// p[end] is a newline: the end of a message (a line, or the blank
		// line after an event), or a byte of the event.
		l.linePos, l.decided = 0, false
		if l.framing == lines || !l.dirty {
			if l.framing == events && l.admit != nil && l.scan != nil && !l.admit(l.scan) {
				return l.fail(end, overRequests)
			}
			l.size = 0
			if l.scan != nil {
				l.scan.reset()
			}
		} else {
			if l.size == l.max {
				return l.fail(end, overSize)
			}
			l.size++
		}
		l.dirty = false
		i = end + 1
	}
	return n, err
}

// inspect scans seg, bytes of the current line (or of the whole body): a
// line of an event only after "data:" and its optional space. It returns
// how many bytes it scanned, and the bound passed, if one was.
func (l *limitReader) inspect(seg []byte) (int, overKind) {
	if l.framing != events {
		return l.scan.feed(seg, true)
	}
	i := 0
	for !l.decided && i < len(seg) {
		if l.linePos < len("data:") {
			if seg[i] != "data:"[l.linePos] {
				l.decided, l.data = true, false
				break
			}
			l.linePos++
			i++
			continue
		}
		l.decided, l.data = true, true
		if seg[i] == ' ' {
			i++
		}
	}
	if !l.decided || !l.data {
		return len(seg), notOver
	}
	k, why := l.scan.feed(seg[i:], true)
	return i + k, why
}

// fail ends the stream: p's first n bytes are the last passed.
func (l *limitReader) fail(n int, why overKind) (int, error) {
	l.err = l.trip(why)
	return n, l.err
}

// refusedRead is the error of a response cut off at the cap or at a
// bound of a scan.
type refusedRead struct {
	why overKind
	max int64
}

func (e *refusedRead) Error() string {
	switch e.why {
	case overDepth:
		return fmt.Sprintf("a message nested more than %d levels deep", maxDepth)
	case overBlocks:
		return fmt.Sprintf("a result of more than %d content blocks", maxBlocks)
	case overRequests:
		return fmt.Sprintf("a request while %d of its requests wait for their answers", maxServerRequests)
	}
	return fmt.Sprintf("a message larger than %d bytes", e.max)
}

// oversize records why a message was cut off for one call over HTTP (its
// mark travels in the request's context); notOver while none was.
type oversize struct{ why atomic.Int32 }

type oversizeKey struct{}

// markCalls returns ctx carrying a fresh mark for the HTTP responses of
// the requests made under it.
func markCalls(ctx context.Context) (context.Context, *oversize) {
	o := &oversize{}
	return context.WithValue(ctx, oversizeKey{}, o), o
}

// limitedTransport caps the messages of every HTTP response, and holds
// them to the bounds of a scan: one server-sent event of a
// text/event-stream body, or the whole of any other body (mcp-go reads
// those whole). A response cut off marks the call it answers (see
// markCalls).
//
// With requests, it also bounds the server's requests that wait for their
// answers: an answer counts once its POST has been made, and a stream
// that carries a request past the bound is ended.
type limitedTransport struct {
	base     http.RoundTripper
	max      int64
	requests *serverRequests
}

func (t limitedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.requests != nil && req.Method == http.MethodPost && isAnswer(req) {
		defer t.requests.answered()
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	f := whole
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" {
		f = events
	}
	mark, _ := req.Context().Value(oversizeKey{}).(*oversize)
	body := resp.Body
	max := t.max
	if max <= 0 { // no cap
		max = math.MaxInt64
	}
	lr := newLimitReader(body, f, max, func(why overKind) error {
		if mark != nil {
			mark.why.Store(int32(why))
		}
		return &refusedRead{why: why, max: max}
	})
	lr.scan = &scan{}
	if t.requests != nil && f == events {
		lr.admit = t.requests.admit
	}
	resp.Body = struct {
		io.Reader
		io.Closer
	}{lr, body}
	// The length no longer holds for what the reader passes.
	resp.ContentLength = -1
	return resp, nil
}

// isAnswer reports whether req's body (read again through GetBody) is the
// answer to a request of the server.
func isAnswer(req *http.Request) bool {
	if req.GetBody == nil {
		return false
	}
	body, err := req.GetBody()
	if err != nil {
		return false
	}
	defer body.Close()
	var s scan
	buf := make([]byte, 4096)
	for {
		n, err := body.Read(buf)
		s.feed(buf[:n], false)
		if err != nil {
			return s.answer()
		}
	}
}
