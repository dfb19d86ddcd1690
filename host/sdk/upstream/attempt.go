package upstream

import (
	"context"
	"fmt"
	"time"
)

// How a server is started and restarted: by attempts, each of which
// spawns (or connects to) the server, initializes a session and lists its
// tools. A caller that needs a server that is down starts an attempt at
// once, or joins the one another caller started; the backoff only paces
// the attempts made in the background, while no caller waits, after a
// death or a failed start. When a background attempt is in flight (one
// that may have started before the server was fixed, and may hang) a
// caller starts its own beside it: the first attempt that works becomes
// the connection, and the others are cancelled.

// attempt is one start of a server.
type attempt struct {
	done   chan struct{} // closed when it ended; err is set before
	err    error
	cancel context.CancelFunc
}

// backoff is the wait before background attempt number n (n consecutive
// deaths or failed starts): none for the first, then 1, 2, 4... units up
// to MaxBackoff (or one unit, when that is longer).
func backoff(n int, unit time.Duration) time.Duration {
	if n <= 1 {
		return 0
	}
	d := unit << min(n-2, 16)
	return min(d, max(MaxBackoff, unit))
}

// connection returns the live connection, starting the server at once
// when it has none, or waiting for the attempt another caller started;
// a failed attempt's error is the caller's.
func (s *server) connection(ctx context.Context) (*conn, error) {
	s.mu.Lock()
	for {
		if s.closed {
			s.mu.Unlock()
			return nil, fmt.Errorf("upstream MCP server %s is shut down", s.cfg.Name)
		}
		if c := s.conn; c != nil && !c.isDead() {
			s.mu.Unlock()
			return c, nil
		}
		a := s.callerAttempt
		if a == nil {
			a = s.begin(true)
		}
		up := s.up
		s.mu.Unlock()
		select {
		case <-a.done:
		case <-up:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		s.mu.Lock()
		if c := s.conn; c != nil && !c.isDead() {
			s.mu.Unlock()
			return c, nil
		}
		select {
		case <-a.done:
			if a.err != nil {
				s.mu.Unlock()
				return nil, a.err
			}
		default:
		}
		// The connection that came up died already: try again.
	}
}

// begin starts an attempt; s.mu is held.
func (s *server) begin(caller bool) *attempt {
	ctx, cancel := context.WithTimeout(s.set.ctx, StartTimeout)
	a := &attempt{done: make(chan struct{}), cancel: cancel}
	if caller {
		s.callerAttempt = a
	} else {
		s.bgAttempt = a
	}
	go func() {
		c, err := s.dial(ctx)
		if err == nil {
			if err = s.list(ctx, c); err != nil {
				c.stop()
			}
		}
		// What the attempt's error says reaches callers, the docs, the
		// probes and the logs: a transport's error may quote the URL.
		s.finish(a, c, s.set.opts.Redactor.Error(err))
		cancel()
	}()
	return a
}

// finish records how attempt a ended: the first that works becomes the
// connection (and cancels the others); a failure counts towards the
// backoff of the background attempts.
func (s *server) finish(a *attempt, c *conn, err error) {
	s.mu.Lock()
	if s.callerAttempt == a {
		s.callerAttempt = nil
	}
	if s.bgAttempt == a {
		s.bgAttempt = nil
	}
	changed := false
	switch {
	case err == nil && s.closed:
		go c.stop()
		err = fmt.Errorf("upstream MCP server %s is shut down", s.cfg.Name)
	case err == nil && s.conn != nil && !s.conn.isDead():
		go c.stop() // another attempt won
	case err == nil:
		s.conn = c
		close(s.up)
		s.up = make(chan struct{})
		s.failed = false // the tools it listed are the change (list)
		for _, other := range []*attempt{s.callerAttempt, s.bgAttempt} {
			if other != nil {
				other.cancel()
			}
		}
	case s.conn == nil || s.conn.isDead():
		s.deaths++
		s.lastWhy = "failed to start: " + err.Error()
		// A server whose tools were never listed shows it in its docs.
		changed = !s.failed && s.tools.Load() == nil && s.set.opts.background
		s.failed = true
		// Not at once after a failed start, as after a death.
		s.schedule(s.deaths + 1)
	}
	a.err = err
	close(a.done)
	s.mu.Unlock()
	if changed && s.set.opts.OnToolsChanged != nil {
		go s.set.opts.OnToolsChanged(s.cfg.Name)
	}
}

// schedule arms the next background attempt, after backoff n, unless one
// is due or in flight; s.mu is held.
func (s *server) schedule(n int) {
	if s.closed || s.retry != nil || s.bgAttempt != nil || s.callerAttempt != nil {
		return
	}
	s.retry = time.AfterFunc(backoff(n, s.set.opts.backoffUnit()), func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.retry = nil
		if s.closed || (s.conn != nil && !s.conn.isDead()) || s.bgAttempt != nil || s.callerAttempt != nil {
			return
		}
		s.begin(false)
	})
}

// died records that c ended (exited, hung, lost): it is stopped, and the
// server is started again in the background after the backoff, or at
// once by the next call.
func (s *server) died(c *conn, why string) {
	s.mu.Lock()
	if s.conn == c {
		s.conn = nil
		s.deaths++
		s.lastWhy = why
		s.schedule(s.deaths)
	}
	s.mu.Unlock()
	go c.stop()
}

// healthy resets the backoff after a call that worked.
func (s *server) healthy() {
	s.mu.Lock()
	s.deaths = 0
	s.mu.Unlock()
}

// state is the server's state for its docs while its tools are not
// known: "starting" until its first start ends, then "down".
func (s *server) state() (state, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed {
		return StateDown, s.lastWhy
	}
	return StateStarting, ""
}

func (s *server) close() {
	s.mu.Lock()
	s.closed = true
	c := s.conn
	s.conn = nil
	if s.retry != nil {
		s.retry.Stop()
		s.retry = nil
	}
	for _, a := range []*attempt{s.callerAttempt, s.bgAttempt} {
		if a != nil {
			a.cancel()
		}
	}
	s.mu.Unlock()
	if c != nil {
		c.stop()
	}
}
