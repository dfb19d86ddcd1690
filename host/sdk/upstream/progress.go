package upstream

import (
	"context"
	"math"
	"strconv"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolscript/toolscript/host/contract/sdkcall"
)

// Progress of upstream tools. When the execution runs for a client that
// asked for progress (sdkcall.Client.Progress), each tools/call carries a
// progress token of toolscript's own ("ts-progress-N", unique in the Set),
// and the server's notifications/progress with that token are handed to
// the client's Progress while the call is in flight: a token is forgotten
// when its call returns, and a notification naming no call in flight
// (a late one, or a token toolscript never gave) is dropped.

// maxProgressMessage bounds the message of an upstream's progress that
// is forwarded.
const maxProgressMessage = 1024

// progressRoutes are the progress tokens of a Set's calls in flight.
type progressRoutes struct {
	mu     sync.Mutex
	next   uint64
	routes map[string]func(progress float64, total *float64, message string)
}

// open gives a call a token whose notifications go to report, and returns
// it with the function that forgets it.
func (r *progressRoutes) open(report func(float64, *float64, string)) (token string, done func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next++
	token = "ts-progress-" + strconv.FormatUint(r.next, 10)
	if r.routes == nil {
		r.routes = map[string]func(float64, *float64, string){}
	}
	r.routes[token] = report
	return token, func() {
		r.mu.Lock()
		delete(r.routes, token)
		r.mu.Unlock()
	}
}

// deliver hands a notifications/progress to the call its token names.
func (r *progressRoutes) deliver(n mcp.JSONRPCNotification) {
	fields := n.Params.AdditionalFields
	token, ok := fields["progressToken"].(string)
	if !ok {
		return
	}
	r.mu.Lock()
	report := r.routes[token]
	r.mu.Unlock()
	if report == nil {
		return
	}
	progress, ok := number(fields["progress"])
	if !ok {
		return
	}
	var total *float64
	if t, ok := number(fields["total"]); ok {
		total = &t
	}
	message, _ := fields["message"].(string)
	report(progress, total, capText(message, maxProgressMessage))
}

// number reads a finite JSON number.
func number(v any) (float64, bool) {
	f, ok := v.(float64)
	return f, ok && !math.IsNaN(f) && !math.IsInf(f, 0)
}

// withProgress gives req a progress token of the Set's when the
// execution's client asked for progress, and returns the function to call
// when the call has returned.
func (s *Set) withProgress(ctx context.Context, req *mcp.CallToolRequest, name string) func() {
	client := sdkcall.ClientFrom(ctx)
	if client == nil || client.Progress == nil {
		return func() {}
	}
	token, done := s.progress.open(func(progress float64, total *float64, message string) {
		client.Progress(name, progress, total, message)
	})
	req.Params.Meta = &mcp.Meta{ProgressToken: token}
	return done
}
