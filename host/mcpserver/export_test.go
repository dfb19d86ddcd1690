package mcpserver

// TrackedCalls returns how many tools/call handlers the HTTP transport
// tracks: those running, or waiting for a slot.
func (s *Server) TrackedCalls() int {
	h, ok := s.transport.(*httpTransport)
	if !ok {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, calls := range h.inflight {
		n += len(calls)
	}
	return n
}
