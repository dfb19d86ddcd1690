package mcpserver

import (
	"context"
	"fmt"
)

// WaitTrackedCalls returns once the number of tools/call requests the core
// holds satisfies done, or with ctx's error. It wakes at each change of
// the table: no polling.
func (s *Server) WaitTrackedCalls(ctx context.Context, done func(calls int) bool) error {
	if s.table == nil {
		if done(0) {
			return nil
		}
		<-ctx.Done()
		return ctx.Err()
	}
	for {
		calls, changed := s.table.watch()
		if done(calls) {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("%w (the core holds %d calls)", ctx.Err(), calls)
		}
	}
}
