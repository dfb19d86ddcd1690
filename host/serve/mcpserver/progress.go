package mcpserver

import (
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/toolscript/toolscript/host/platform/pacer"
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

// progressReporter turns a script's progress() calls into notifications:
// the first at once, then at most one per interval, and the last one
// always, when the execution ends. Progress must increase (the protocol
// requires it): a call that does not is skipped, as are NaN and infinities.
//
// The script never waits for the protocol output: report only records the
// update and a goroutine of the reporter writes it.
type progressReporter struct {
	send func(progressUpdate)
	pace *pacer.Pacer // the notifications

	mu       sync.Mutex
	pending  *progressUpdate // the latest update not yet sent
	accepted bool
	last     float64   // the progress of the latest accepted update
	total    *float64  // the total of the script's latest accepted update
	sentAt   time.Time // when the latest notification was sent
}

func newProgressReporter(interval time.Duration, send func(progressUpdate)) *progressReporter {
	p := &progressReporter{send: send}
	p.pace = pacer.Start(interval, p.flush)
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
	p.accepted, p.last, p.total = true, done, total
	p.pending = &progressUpdate{Progress: done, Total: total, Message: message}
	p.mu.Unlock()
	p.pace.Wake()
}

// upstream records the progress of an upstream tool the script called
// (name: "sdk.ev.long_op"). The call's progress stays the script's own: the
// update carries the script's latest progress and total, moved up by the
// least step a float64 takes so that it still increases (0 while the script
// reported none), and a message saying what the upstream reported:
// "sdk.ev.long_op: 2/5" or "sdk.ev.long_op: <its message> (2/5)". It goes
// through the same rate limit as the script's own updates.
func (p *progressReporter) upstream(name string, progress float64, total *float64, message string) {
	what := strconv.FormatFloat(progress, 'g', -1, 64)
	if total != nil {
		what += "/" + strconv.FormatFloat(*total, 'g', -1, 64)
	}
	if message != "" {
		what = message + " (" + what + ")"
	}
	p.mu.Lock()
	done := 0.0
	if p.accepted {
		done = math.Nextafter(p.last, math.Inf(1))
	}
	p.accepted, p.last = true, done
	p.pending = &progressUpdate{Progress: done, Total: p.total, Message: name + ": " + what}
	p.mu.Unlock()
	p.pace.Wake()
}

// flush sends the pending update, if any, and reports whether it sent.
func (p *progressReporter) flush() bool {
	u := p.take()
	if u == nil {
		return false
	}
	p.send(*u)
	p.mu.Lock()
	p.sentAt = time.Now()
	p.mu.Unlock()
	return true
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
	p.pace.Stop()
	p.flush()
	return p.sentAt
}
