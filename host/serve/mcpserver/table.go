package mcpserver

import (
	"slices"
	"sync"
)

// table is the core's record of the requests received and not yet
// answered, by scope and id: the scope is the transport's (the one stdio
// connection; over HTTP a user and their session, or the user alone), so
// that a cancellation reaches only its own sender's requests. Calls are
// added when their message is read, before anything runs, and removed when
// their response is written or dropped, which makes cancellation and the
// end of input exact:
//
//   - A notifications/cancelled marks the requests with its id that are
//     owed a response, whether or not they run yet: one that has not
//     started never does, one that runs is stopped (its context is
//     cancelled), and the response is dropped, as the protocol says a
//     cancelled request gets none.
//   - An id is forgotten once its response is written or dropped, so a
//     cancellation that crosses its response, or names an id never used,
//     leaves nothing behind, and a later request reusing the id is answered,
//     even while the cancelled one is still stopping.
//   - A client may send a second request with the id of one still running:
//     both are counted, and a cancellation reaches both.
//   - At most max requests await their response (stdio; 0 for no bound):
//     add waits beyond that, and so does the reading of the input.
//
// It is safe for concurrent use.
type table struct {
	max int

	mu    sync.Mutex
	byKey map[tableKey][]*call
	owed  int           // responses owed, all keys together
	freed chan struct{} // closed, and replaced, when owed decreases while waited for
	// waited is set while add or wait waits for freed.
	waited bool
	// changed is closed, and replaced, at each add and release while
	// watched (watch): what waits for a count to change waits on it.
	changed chan struct{}
	watched bool
}

// tableKey names a request: the scope of its id, and the id (idKey).
type tableKey struct{ scope, id string }

func newTable(max int) *table {
	return &table{max: max, byKey: map[tableKey][]*call{}, freed: make(chan struct{}), changed: make(chan struct{})}
}

// add records a call received. While max requests are owed a response it
// waits; it returns false if done is closed first, and the call is then
// not recorded.
func (t *table) add(c *call, done <-chan struct{}) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for t.max > 0 && t.owed >= t.max {
		freed := t.freed
		t.waited = true
		t.mu.Unlock()
		select {
		case <-freed:
		case <-done:
			t.mu.Lock()
			return false
		}
		t.mu.Lock()
	}
	t.byKey[c.key] = append(t.byKey[c.key], c)
	t.owed++
	t.notify()
	return true
}

// cancel marks the requests with this key cancelled and stops them. A key
// that is owed no response is ignored: its response was already written,
// or it was never used.
func (t *table) cancel(k tableKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range t.byKey[k] {
		c.cancelled = true
		c.cancel()
	}
}

// answer is called when the response of c is ready. It says whether to
// drop it (its request was cancelled) and forgets c. The caller then
// writes the response, if any, and calls release.
func (t *table) answer(c *call) (drop bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	calls := slices.DeleteFunc(t.byKey[c.key], func(other *call) bool { return other == c })
	if len(calls) == 0 {
		delete(t.byKey, c.key)
	} else {
		t.byKey[c.key] = calls
	}
	return c.cancelled
}

// release counts one response written or dropped.
func (t *table) release() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.owed--
	if t.waited {
		close(t.freed)
		t.freed, t.waited = make(chan struct{}), false
	}
	t.notify()
}

// notify wakes what watches the table; t.mu is held.
func (t *table) notify() {
	if t.watched {
		close(t.changed)
		t.changed, t.watched = make(chan struct{}), false
	}
}

// watch returns the number of tools/call requests held and a channel
// closed at the next change (a request added, or one answered).
func (t *table) watch() (calls int, changed <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.watched = true
	return t.calls(), t.changed
}

// wait returns once no request is owed a response, or when done is closed.
func (t *table) wait(done <-chan struct{}) {
	for {
		t.mu.Lock()
		owed, freed := t.owed, t.freed
		t.waited = true
		t.mu.Unlock()
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

// len returns the number of requests owed a response, and of those the
// tools/call ones.
func (t *table) len() (owed, calls int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.owed, t.calls()
}

// calls counts the tools/call requests held; t.mu is held.
func (t *table) calls() int {
	n := 0
	for _, same := range t.byKey {
		for _, c := range same {
			if c.method == "tools/call" {
				n++
			}
		}
	}
	return n
}
