package upstream

import (
	"bytes"
	"sync"
	"sync/atomic"
)

// maxServerRequests bounds the requests of a stdio server whose answers
// are not written yet.
const maxServerRequests = 256

// serverRequests bounds a stdio server's requests to its client
// (sampling, elicitation, roots, ping) that wait for their answers.
// mcp-go hands each request a server sends to a goroutine of its own,
// which holds it until its answer is written to the server's standard
// input: a server that sends request after request and reads none of the
// answers would make the host hold a goroutine for each. The connection's
// guard admits each request it passes (admit), its standard input counts
// each answer written (wrote); while maxServerRequests wait, a request is
// dropped unread, as a refused message is.
type serverRequests struct {
	waiting atomic.Int64
	// dropped is set at the first request dropped (which note reports).
	dropped atomic.Bool
	note    func()

	mu      sync.Mutex
	written scan // the message being written to the server
}

// admit reports whether the message s scanned (a whole line) may pass:
// anything but a request past the bound.
func (r *serverRequests) admit(s *scan) bool {
	if !s.request() {
		return true
	}
	if r.waiting.Add(1) <= maxServerRequests {
		return true
	}
	r.waiting.Add(-1)
	if !r.dropped.Swap(true) && r.note != nil {
		r.note()
	}
	return false
}

// wrote counts the answers among the messages p holds, written to the
// server (one message a line, in writes of any size).
func (r *serverRequests) wrote(p []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(p) > 0 {
		end := bytes.IndexByte(p, '\n')
		if end < 0 {
			r.written.feed(p, false)
			return
		}
		r.written.feed(p[:end], false)
		p = p[end+1:]
		if r.written.answer() {
			r.answered()
		}
		r.written.reset()
	}
}

// answered counts one request answered (never below none).
func (r *serverRequests) answered() {
	for {
		n := r.waiting.Load()
		if n <= 0 || r.waiting.CompareAndSwap(n, n-1) {
			return
		}
	}
}
