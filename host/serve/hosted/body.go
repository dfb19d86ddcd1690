package hosted

import (
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// bounded bounds the reading of every request body: the body must arrive
// within timeout of the handler's start, whoever reads it (the handler,
// or net/http discarding what the handler left unread, which without a
// deadline would wait for a slow client for ever, the response held back
// until it is done). A response written before the body was read to its
// end says "Connection: close" over HTTP/1, so that net/http sends it at
// once and closes the connection rather than read the rest first. Once
// the body is read to its end the deadline is lifted, so that a long
// response (a running script) keeps its connection.
//
// HTTP/2 streams get the deadline too, but no "Connection: close": a
// stream's unread body is reset on its own, and the connection is
// other requests'.
func bounded(timeout time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		// Fails only on writers without a connection (tests).
		_ = rc.SetReadDeadline(time.Now().Add(timeout))
		body := &watchedBody{ReadCloser: r.Body, rc: rc}
		r.Body = body
		cw := &closingWriter{ResponseWriter: w, body: body, http1: r.ProtoMajor < 2}
		next.ServeHTTP(cw, r)
		// A handler that wrote nothing: net/http writes the response now,
		// after discarding the body, unless told to close.
		cw.header()
		if cw.closing {
			// net/http still reads up to 256 KiB of the body before it
			// closes the connection; nothing more is wanted of it.
			_ = rc.SetReadDeadline(time.Now())
		}
	})
}

// watchedBody is a request body that tells when it was read to its end,
// and then lifts the read deadline.
type watchedBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done atomic.Bool
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.done.Swap(true) {
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// closingWriter adds "Connection: close" to a response begun before its
// request's body was read to its end.
type closingWriter struct {
	http.ResponseWriter
	body    *watchedBody
	http1   bool
	started bool
	closing bool // the response says Connection: close
}

// header decides on "Connection: close", once, before the response's
// header goes out.
func (w *closingWriter) header() {
	if w.started {
		return
	}
	w.started = true
	if w.http1 && !w.body.done.Load() {
		w.Header().Set("Connection", "close")
		w.closing = true
	}
}

func (w *closingWriter) WriteHeader(status int) {
	if status >= 200 { // 1xx responses are not the response
		w.header()
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *closingWriter) Write(p []byte) (int, error) {
	w.header()
	return w.ResponseWriter.Write(p)
}

func (w *closingWriter) Flush() {
	w.header()
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *closingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
