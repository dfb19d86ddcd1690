package hosted

import (
	"container/list"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/toolscript/toolscript/host/serve/clientaddr"
	"github.com/toolscript/toolscript/host/serve/metrics"
)

// The caps on open connections (ServeConfig.MaxConnections and
// MaxConnectionsPerClient), by default. Each open connection holds a file
// descriptor: the total stays below the process's limit on them
// (DefaultMaxConnections), so that accept never fails for want of one, and
// no one client address can take more than a part of it.
const (
	// MaxConnectionsCeiling is the default cap on open connections where
	// the descriptor limit allows more.
	MaxConnectionsCeiling = 4096
	// DefaultMaxConnectionsPerClient is the default cap on the open
	// connections of one client address.
	DefaultMaxConnectionsPerClient = 256
	// descriptorReserve is what the default leaves of the descriptor limit
	// for everything but the clients' connections: the listener, the
	// upstream APIs' and MCP servers' connections, the scripts' files, the
	// logs. A quarter of the limit when that is more.
	descriptorReserve = 256
	// minDefaultConnections is the least default cap, however low the
	// descriptor limit.
	minDefaultConnections = 64
)

// The shedding of connections over a cap.
const (
	// shedWorkers bounds the connections being answered 503 at once;
	// beyond them a connection over a cap is closed without an answer.
	shedWorkers = 128
	// shedTimeout bounds the answer to one connection over a cap: the TLS
	// handshake and the 503.
	shedTimeout = time.Second
	// shedLinger bounds the wait, after the 503, for the client to close
	// (a client that does not is closed on).
	shedLinger = 250 * time.Millisecond
	// shedDrainBytes bounds what is read of a shed connection's request
	// (so that closing it does not reset it before the client reads the
	// 503).
	shedDrainBytes = 64 << 10
	// RetryAfterSeconds is the Retry-After of a 503 for too many
	// connections.
	RetryAfterSeconds = 1
)

// The limits a connection can be shed by (ServeConfig.OnShed), named as
// the metrics name them.
const (
	ShedConnections       = metrics.LimitConnections
	ShedClientConnections = metrics.LimitClientConnections
)

// shedResponse is the answer to a connection over a cap.
var shedResponse = func() []byte {
	body := "service unavailable: too many open connections; retry later\n"
	return []byte("HTTP/1.1 503 Service Unavailable\r\n" +
		"Content-Type: text/plain; charset=utf-8\r\n" +
		"Retry-After: " + strconv.Itoa(RetryAfterSeconds) + "\r\n" +
		"Connection: close\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
}()

// DefaultMaxConnections returns the default cap on open connections for
// a process that may open fileLimit descriptors (0: unknown):
// MaxConnectionsCeiling, or less to leave descriptorReserve (or a quarter
// of the limit) for the rest.
func DefaultMaxConnections(fileLimit uint64) int {
	if fileLimit == 0 {
		return MaxConnectionsCeiling
	}
	reserve := max(fileLimit/4, descriptorReserve)
	if fileLimit <= reserve+minDefaultConnections {
		return minDefaultConnections
	}
	return int(min(fileLimit-reserve, MaxConnectionsCeiling))
}

// limitListener caps the connections it has open, in all and per client
// address (clientaddr.Of). A connection over a cap takes the place of one that
// waits for a request, which is closed (as the server may close any
// connection that has no request in progress): first one that has not
// yet sent a whole request head (a fresh one: a silent or slow client's),
// then an idle keep-alive one; of each kind, the new connection's own
// client's oldest first, then, at the total cap, anyone's oldest. So a
// client that keeps opening silent connections takes the places of its
// own, and a new client's connection gets in whenever any connection
// waits. Failing that (every connection has a request in progress), it is
// not handed to the server: a worker of its own answers it 503 with
// Retry-After and closes it, so that the client learns to come back, and
// accept never fails for want of a descriptor. A connection counts until
// it is closed. The server tells which connections wait: a request's
// handler starts and ends (tracking), and a connection goes idle
// (connState).
type limitListener struct {
	net.Listener
	max, perClient int
	// tls, when set, is the server's TLS configuration: a shed connection
	// gets its 503 after the handshake (HTTP/1.1 only).
	tls *tls.Config
	// onShed, when set, is told of every shed connection and why.
	onShed func(limit string)

	mu       sync.Mutex
	open     int
	byClient map[string]int
	// fresh are the connections that have not sent a whole request head
	// yet, idle the keep-alive ones waiting for their next request; each
	// in the order they began to wait.
	fresh, idle connQueue
	shedding    chan struct{} // a slot per worker answering a shed connection
}

func newLimitListener(ln net.Listener, max, perClient int, tlsConfig *tls.Config, onShed func(string)) *limitListener {
	l := &limitListener{Listener: ln, max: max, perClient: perClient, onShed: onShed,
		byClient: map[string]int{}, shedding: make(chan struct{}, shedWorkers)}
	if tlsConfig != nil {
		l.tls = tlsConfig.Clone()
		l.tls.NextProtos = []string{"http/1.1"}
	}
	return l
}

// Accept returns the next connection within the caps, shedding those
// over them.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		counted, limit, evicted := l.admit(c)
		if evicted != nil {
			evicted.Conn.Close() // its place is already given
		}
		if limit != "" {
			l.shed(c, limit)
			continue
		}
		return counted, nil
	}
}

// admit counts c in, as a fresh connection, in the place of a waiting one
// (evicted, to be closed) when at a cap, or returns the cap it is over.
func (l *limitListener) admit(c net.Conn) (counted *countedConn, over string, evicted *countedConn) {
	client := clientaddr.Of(c.RemoteAddr())
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.byClient[client] >= l.perClient:
		over = ShedClientConnections
		evicted = firstOf(l.fresh.oldest(client), l.idle.oldest(client))
	case l.open >= l.max:
		over = ShedConnections
		evicted = firstOf(l.fresh.oldest(client), l.fresh.oldest(""), l.idle.oldest(client), l.idle.oldest(""))
	}
	if over != "" {
		if evicted == nil {
			return nil, over, nil
		}
		l.releaseLocked(evicted)
	}
	l.open++
	l.byClient[client]++
	counted = &countedConn{Conn: c, l: l, client: client}
	l.fresh.push(counted)
	return counted, "", evicted
}

// firstOf returns the first of conns that is not nil, or nil.
func firstOf(conns ...*countedConn) *countedConn {
	for _, c := range conns {
		if c != nil {
			return c
		}
	}
	return nil
}

// releaseLocked counts c out, once. l.mu is held.
func (l *limitListener) releaseLocked(c *countedConn) {
	if c.released {
		return
	}
	c.released = true
	c.queue.remove(c)
	l.open--
	if l.byClient[c.client]--; l.byClient[c.client] <= 0 {
		delete(l.byClient, c.client)
	}
}

// connState is the server's http.Server.ConnState: it tells which
// connections are idle.
func (l *limitListener) connState(c net.Conn, state http.ConnState) {
	cc := counted(c)
	if cc == nil || state != http.StateIdle {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !cc.released && cc.running == 0 {
		cc.queue.remove(cc)
		l.idle.push(cc)
	}
}

// connContext is the server's http.Server.ConnContext: it lets tracking
// find the connection of a request.
func (l *limitListener) connContext(ctx context.Context, c net.Conn) context.Context {
	if cc := counted(c); cc != nil {
		return context.WithValue(ctx, connKey{}, cc)
	}
	return ctx
}

// connKey is the context key of a request's *countedConn.
type connKey struct{}

// counted returns the countedConn c is, or is TLS over; nil otherwise.
func counted(c net.Conn) *countedConn {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	cc, _ := c.(*countedConn)
	return cc
}

// tracking tells l when a request's handler starts and ends: its
// connection has sent a whole request head, and no longer waits (is not
// to be closed for another's place) until it goes idle.
func (l *limitListener) tracking(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cc, _ := r.Context().Value(connKey{}).(*countedConn)
		if cc == nil {
			next.ServeHTTP(w, r)
			return
		}
		l.mu.Lock()
		cc.running++
		cc.queue.remove(cc)
		l.mu.Unlock()
		defer func() {
			l.mu.Lock()
			cc.running--
			l.mu.Unlock()
		}()
		next.ServeHTTP(w, r)
	})
}

// connQueue holds connections in the order they joined it, in all and by
// client, so that the oldest of either is found at once.
type connQueue struct {
	all      list.List
	byClient map[string]*list.List
}

// push adds c, which is in no queue, at the end.
func (q *connQueue) push(c *countedConn) {
	if q.byClient == nil {
		q.byClient = map[string]*list.List{}
	}
	mine := q.byClient[c.client]
	if mine == nil {
		mine = list.New()
		q.byClient[c.client] = mine
	}
	c.queue, c.inAll, c.inClient = q, q.all.PushBack(c), mine.PushBack(c)
}

// remove takes c out of q, which may be nil (c is in no queue).
func (q *connQueue) remove(c *countedConn) {
	if q == nil || c.queue != q {
		return
	}
	q.all.Remove(c.inAll)
	mine := q.byClient[c.client]
	mine.Remove(c.inClient)
	if mine.Len() == 0 {
		delete(q.byClient, c.client)
	}
	c.queue, c.inAll, c.inClient = nil, nil, nil
}

// oldest returns the connection of client that joined first, or of any
// client when client is "", or nil.
func (q *connQueue) oldest(client string) *countedConn {
	l := &q.all
	if client != "" {
		if l = q.byClient[client]; l == nil {
			return nil
		}
	}
	if e := l.Front(); e != nil {
		return e.Value.(*countedConn)
	}
	return nil
}

// shed answers c with 503 on a worker, or closes it when all are busy.
func (l *limitListener) shed(c net.Conn, limit string) {
	if l.onShed != nil {
		l.onShed(limit)
	}
	select {
	case l.shedding <- struct{}{}:
	default:
		c.Close()
		return
	}
	go func() {
		defer func() { <-l.shedding }()
		answerBusy(c, l.tls)
	}()
}

// answerBusy writes the 503 to c (after a TLS handshake when tlsConfig is
// set, and once the request has begun or shedLinger passed), half-closes
// it, reads what the client sent until it closes too
// (so that the close resets nothing the client has yet to read), and
// closes it, all within shedTimeout and shedLinger.
func answerBusy(c net.Conn, tlsConfig *tls.Config) {
	defer c.Close()
	deadline := time.Now().Add(shedTimeout)
	_ = c.SetDeadline(deadline)
	conn := c
	if tlsConfig != nil {
		tc := tls.Server(c, tlsConfig)
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		err := tc.HandshakeContext(ctx)
		cancel()
		if err != nil {
			return
		}
		conn = tc
	}
	// The 503 answers the request, not ahead of it: a client whose
	// request is not yet written when a response arrives takes the
	// connection for broken (Go's transport: "unsolicited response"). The
	// request's first bytes are waited for, briefly.
	_ = conn.SetReadDeadline(time.Now().Add(shedLinger))
	var first [1]byte
	_, _ = conn.Read(first[:])
	_ = conn.SetReadDeadline(deadline)
	if _, err := conn.Write(shedResponse); err != nil {
		return
	}
	if tc, ok := conn.(*tls.Conn); ok {
		_ = tc.CloseWrite()
	}
	if tcp, ok := c.(interface{ CloseWrite() error }); ok {
		_ = tcp.CloseWrite()
	}
	_ = c.SetReadDeadline(time.Now().Add(shedLinger))
	_, _ = io.Copy(io.Discard, io.LimitReader(conn, shedDrainBytes))
}

// countedConn is a connection within the caps: it counts until closed.
type countedConn struct {
	net.Conn
	l      *limitListener
	client string
	// The rest is l's, under l.mu. released is set once the connection
	// no longer counts; running is how many of its requests' handlers
	// run; queue is the queue it waits in (nil: none), and inAll and
	// inClient its places there.
	released        bool
	running         int
	queue           *connQueue
	inAll, inClient *list.Element
}

// Close releases the connection's place before it closes, so that a
// client that sees it closed finds the place free.
func (c *countedConn) Close() error {
	c.l.mu.Lock()
	c.l.releaseLocked(c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

// CloseWrite half-closes the connection, as net/http does before it
// closes one with a request body unread.
func (c *countedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
