package mcpserver

import (
	"context"

	"github.com/toolscript/toolscript/host/sdkcall"
)

// The gateway: what the upstream MCP servers a script calls reach of the
// client whose execute_script call runs it. host/upstream finds it in the
// context of the script's sdk calls (sdkcall.ClientFrom).

// gateway returns what upstreams reach of the client of the call whose
// context is ctx: progress goes to progress (nil when the client asked
// for none).
func (s *Server) gateway(ctx context.Context, progress *progressReporter) *sdkcall.Client {
	g := &sdkcall.Client{}
	if progress != nil {
		g.Progress = progress.upstream
	}
	return g
}
