package mcpserver

import (
	"context"
	"sync"
)

// requests tracks, for the stdio transport, by id, the requests read from
// the client that are still owed a response. Entries are made when a
// request is read, before mcp-go sees it, and removed when its response is
// written or dropped, which makes cancellation and the end of input exact:
//
//   - A notifications/cancelled marks its request whether or not a handler
//     has started for it yet: a handler that starts later does not run, and
//     one that is running is stopped. The response is dropped, as the
//     protocol says a cancelled request gets none.
//   - An id is forgotten once its response is written or dropped, so a
//     cancellation that crosses its response, or names an id never used,
//     leaves nothing behind, and a later request reusing the id is answered.
//   - At end of input, Serve waits until every request read is answered.
//   - At most max requests await their response; reading waits beyond that,
//     which bounds this table and the messages mcp-go holds in its queue.
//
// It is safe for concurrent use.
type requests struct {
	max int

	mu    sync.Mutex
	byID  map[string]*pending
	owed  int           // responses owed, all ids together
	freed chan struct{} // closed, and replaced, whenever owed decreases
}

// pending is what is known of the requests with one id.
type pending struct {
	// owed counts the responses owed for this id: a client may send a
	// second request with an id whose first is still running.
	owed      int
	cancelled bool
	calls     []*call
	// unknownURI is set for a resources/read of a URI the server does not
	// have: its error response is worded in the protocol's terms.
	unknownURI string
}

// call is one running tools/call handler.
type call struct{ stop context.CancelFunc }

func newRequests(max int) *requests {
	return &requests{max: max, byID: map[string]*pending{}, freed: make(chan struct{})}
}

// add records a request read from the client, with key its id (idKey).
// While max requests are owed a response it waits; it returns false if
// done is closed first, and the request is then not recorded.
func (r *requests) add(key, unknownURI string, done <-chan struct{}) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.owed >= r.max {
		freed := r.freed
		r.mu.Unlock()
		select {
		case <-freed:
		case <-done:
			r.mu.Lock()
			return false
		}
		r.mu.Lock()
	}
	p := r.byID[key]
	if p == nil {
		p = &pending{}
		r.byID[key] = p
	}
	p.owed++
	p.unknownURI = unknownURI
	r.owed++
	return true
}

// cancel marks the requests with this id cancelled and stops their running
// handlers. An id that is owed no response is ignored: its response was
// already written, or it was never used.
func (r *requests) cancel(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.byID[key]
	if p == nil {
		return
	}
	p.cancelled = true
	for _, c := range p.calls {
		c.stop()
	}
}

// start registers the handler of the request with this id, which stop
// stops. It returns false if the request was cancelled already: the handler
// must not run. A key the table does not hold (a call made in-process)
// runs untracked.
func (r *requests) start(key string, stop context.CancelFunc) (*call, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.byID[key]
	if p == nil {
		return nil, true
	}
	if p.cancelled {
		return nil, false
	}
	c := &call{stop: stop}
	p.calls = append(p.calls, c)
	return c, true
}

// end unregisters a handler registered by start.
func (r *requests) end(key string, c *call) {
	if c == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.byID[key]
	if p == nil {
		return
	}
	for i, other := range p.calls {
		if other == c {
			p.calls = append(p.calls[:i], p.calls[i+1:]...)
			break
		}
	}
}

// answer is called for every response about to be written, with key its
// id. It says whether to drop the response (its request was cancelled) and
// the URI a resources/read asked for if the server does not have it, and
// forgets one request with that id.
func (r *requests) answer(key string) (drop bool, unknownURI string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.byID[key]
	if p == nil {
		return false, ""
	}
	drop, unknownURI = p.cancelled, p.unknownURI
	p.owed--
	if p.owed == 0 {
		delete(r.byID, key)
	}
	r.owed--
	close(r.freed)
	r.freed = make(chan struct{})
	return drop, unknownURI
}

// wait returns once no request is owed a response, or when done is closed.
func (r *requests) wait(done <-chan struct{}) {
	for {
		r.mu.Lock()
		owed, freed := r.owed, r.freed
		r.mu.Unlock()
		if owed == 0 {
			return
		}
		select {
		case <-freed:
		case <-done:
			return
		}
	}
}

// len returns the number of requests owed a response.
func (r *requests) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.owed
}
