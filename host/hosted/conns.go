package hosted

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/toolscript/toolscript/host/metrics"
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
// address (clientKey). A connection over a cap first takes the place of
// an idle one (a keep-alive connection waiting for its next request,
// which the server reports through connState): of the same client when
// that client is at its cap, of any client when the total is reached;
// the idle one is closed, as the server may close any idle connection.
// Failing that, it is not handed to the server: a worker of its own
// answers it 503 with Retry-After and closes it, so that the client
// learns to come back, and accept never fails for want of a descriptor.
// A connection counts until it is closed.
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
	// idle are the idle connections, by client.
	idle     map[string]map[*countedConn]struct{}
	shedding chan struct{} // a slot per worker answering a shed connection
}

func newLimitListener(ln net.Listener, max, perClient int, tlsConfig *tls.Config, onShed func(string)) *limitListener {
	l := &limitListener{Listener: ln, max: max, perClient: perClient, onShed: onShed,
		byClient: map[string]int{}, idle: map[string]map[*countedConn]struct{}{},
		shedding: make(chan struct{}, shedWorkers)}
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
		client := clientKey(c.RemoteAddr())
		limit, evicted := l.admit(client)
		if evicted != nil {
			evicted.Conn.Close() // its place is already given
		}
		if limit != "" {
			l.shed(c, limit)
			continue
		}
		return &countedConn{Conn: c, l: l, client: client}, nil
	}
}

// admit counts a connection of client in, in the place of an idle one
// (evicted, to be closed) when at a cap, or returns the cap it is over.
func (l *limitListener) admit(client string) (over string, evicted *countedConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.byClient[client] >= l.perClient:
		over = ShedClientConnections
		evicted = anyOf(l.idle[client])
	case l.open >= l.max:
		over = ShedConnections
		evicted = anyOf(l.idle[client])
		for _, conns := range l.idle {
			if evicted != nil {
				break
			}
			evicted = anyOf(conns)
		}
	}
	if over != "" {
		if evicted == nil {
			return over, nil
		}
		l.releaseLocked(evicted)
	}
	l.open++
	l.byClient[client]++
	return "", evicted
}

// anyOf returns one of conns, or nil.
func anyOf(conns map[*countedConn]struct{}) *countedConn {
	for c := range conns {
		return c
	}
	return nil
}

// releaseLocked counts c out, once. l.mu is held.
func (l *limitListener) releaseLocked(c *countedConn) {
	if c.released {
		return
	}
	c.released = true
	l.setIdleLocked(c, false)
	l.open--
	if l.byClient[c.client]--; l.byClient[c.client] <= 0 {
		delete(l.byClient, c.client)
	}
}

func (l *limitListener) setIdleLocked(c *countedConn, idle bool) {
	conns := l.idle[c.client]
	switch {
	case idle && !c.released:
		if conns == nil {
			conns = map[*countedConn]struct{}{}
			l.idle[c.client] = conns
		}
		conns[c] = struct{}{}
	case conns != nil:
		delete(conns, c)
		if len(conns) == 0 {
			delete(l.idle, c.client)
		}
	}
}

// connState is the server's http.Server.ConnState: it tells which
// connections are idle.
func (l *limitListener) connState(c net.Conn, state http.ConnState) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	cc, ok := c.(*countedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.setIdleLocked(cc, state == http.StateIdle)
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

// clientKey names the client of a connection for its cap: its IP address,
// or for IPv6 its /64 network, which one client commonly has whole. Never
// a header (X-Forwarded-For): behind a proxy every connection is the
// proxy's, and the per-client cap should be raised to the total.
func clientKey(addr net.Addr) string {
	var ip net.IP
	switch a := addr.(type) {
	case *net.TCPAddr:
		ip = a.IP
	default:
		host, _, err := net.SplitHostPort(addr.String())
		if err != nil {
			return addr.String()
		}
		ip = net.ParseIP(host)
		if ip == nil {
			return host
		}
	}
	if ip4 := ip.To4(); ip4 != nil {
		return ip4.String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// countedConn is a connection within the caps: it counts until closed.
type countedConn struct {
	net.Conn
	l      *limitListener
	client string
	// released is set, under l.mu, once the connection no longer counts.
	released bool
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
