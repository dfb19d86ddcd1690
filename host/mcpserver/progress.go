package mcpserver

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// progressUpdate is one progress() call of a script.
type progressUpdate struct {
	Progress float64
	Total    *float64
	Message  string
}

// params returns the params of the notification of u.
func (u progressUpdate) params(token mcp.ProgressToken) map[string]any {
	p := map[string]any{"progressToken": token, "progress": u.Progress}
	if u.Total != nil {
		p["total"] = *u.Total
	}
	if u.Message != "" {
		p["message"] = u.Message
	}
	return p
}

// notifyProgress sends one notifications/progress message to the client of
// the call in ctx, through mcp-go's session, and counts it in d (which may
// be nil).
func (s *Server) notifyProgress(ctx context.Context, d *delivery, token mcp.ProgressToken, u progressUpdate) error {
	d.queued()
	if err := s.mcp.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), u.params(token)); err != nil {
		d.wrote() // it never will be
		return fmt.Errorf("progress notification: %w", err)
	}
	return nil
}

// progressMethod is how a progress notification names its method, as
// encoding/json writes it.
var progressMethod = []byte(`"method":"` + string(mcp.MethodNotificationProgress) + `"`)

// isProgress tells whether a message written to a client is a progress
// notification. mcp-go writes the method right after the version, so the
// start of the message is enough.
func isProgress(msg []byte) bool {
	return bytes.Contains(msg[:min(len(msg), 80)], progressMethod)
}

// deliveryWait bounds how long a call's response waits for its progress
// notifications to be written.
const deliveryWait = 2 * time.Second

// delivery counts the progress notifications queued for a client (mcp-go
// sends a session's notifications from a channel, on a goroutine of its
// own) and those written to it, so that a call's response can wait until
// its last notification is out: a notification that follows the response
// reaches a client that no longer knows its token. All methods do nothing
// on a nil *delivery.
type delivery struct {
	mu      sync.Mutex
	queue   int           // queued, all calls together
	done    int           // written, or failed
	changed chan struct{} // closed, and replaced, when done changes
}

// queued counts one notification handed to mcp-go.
func (d *delivery) queued() {
	if d == nil {
		return
	}
	d.mu.Lock()
	d.queue++
	d.mu.Unlock()
}

// wrote counts one notification written, or one that never will be.
func (d *delivery) wrote() {
	if d == nil {
		return
	}
	d.mu.Lock()
	d.done++
	if d.changed != nil {
		close(d.changed)
		d.changed = nil
	}
	d.mu.Unlock()
}

// flush waits until every notification queued so far is written, ctx ends
// or deliveryWait has passed.
func (d *delivery) flush(ctx context.Context) {
	if d == nil {
		return
	}
	timer := time.NewTimer(deliveryWait)
	defer timer.Stop()
	d.mu.Lock()
	target := d.queue
	for d.done < target {
		if d.changed == nil {
			d.changed = make(chan struct{})
		}
		changed := d.changed
		d.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return
		case <-timer.C:
			return
		}
		d.mu.Lock()
	}
	d.mu.Unlock()
}

// progressReporter turns a script's progress() calls into notifications:
// the first at once, then at most one per interval, and the last one
// always, when the execution ends. Progress must increase (the protocol
// requires it): a call that does not is skipped, as are NaN and infinities.
//
// The script never waits for the protocol output: report only records the
// update and a goroutine of the reporter writes it.
type progressReporter struct {
	send     func(progressUpdate)
	interval time.Duration

	mu       sync.Mutex
	pending  *progressUpdate // the latest update not yet sent
	accepted bool
	last     float64   // the progress of the latest accepted update
	sentAt   time.Time // when the latest notification was sent

	wake chan struct{}
	stop chan struct{}
	done chan struct{}
}

func newProgressReporter(interval time.Duration, send func(progressUpdate)) *progressReporter {
	p := &progressReporter{
		send:     send,
		interval: interval,
		wake:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	go p.run()
	return p
}

// report is luau.Script.OnProgress.
func (p *progressReporter) report(done float64, total *float64, message string) {
	if math.IsNaN(done) || math.IsInf(done, 0) {
		return
	}
	if total != nil && (math.IsNaN(*total) || math.IsInf(*total, 0)) {
		total = nil
	}
	if total != nil {
		t := *total
		total = &t
	}
	p.mu.Lock()
	if p.accepted && done <= p.last {
		p.mu.Unlock()
		return
	}
	p.accepted, p.last = true, done
	p.pending = &progressUpdate{Progress: done, Total: total, Message: message}
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *progressReporter) run() {
	defer close(p.done)
	var last time.Time
	for {
		select {
		case <-p.stop:
			return
		case <-p.wake:
		}
		if wait := p.interval - time.Since(last); wait > 0 {
			timer := time.NewTimer(wait)
			select {
			case <-p.stop:
				timer.Stop()
				return
			case <-timer.C:
			}
		}
		if u := p.take(); u != nil {
			p.send(*u)
			last = time.Now()
			p.mu.Lock()
			p.sentAt = last
			p.mu.Unlock()
		}
	}
}

func (p *progressReporter) take() *progressUpdate {
	p.mu.Lock()
	defer p.mu.Unlock()
	u := p.pending
	p.pending = nil
	return u
}

// finish sends the last update if it is still pending. Nothing is sent
// after finish returns. It returns when the latest notification was sent
// (zero if none was).
func (p *progressReporter) finish() time.Time {
	close(p.stop)
	<-p.done
	if u := p.take(); u != nil {
		p.send(*u)
		p.sentAt = time.Now()
	}
	return p.sentAt
}
