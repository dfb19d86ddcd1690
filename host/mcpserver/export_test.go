package mcpserver

// TrackedCalls returns how many tools/call requests the core holds in its
// table: received and not yet answered (waiting for a slot, or running).
func (s *Server) TrackedCalls() int {
	if s.table == nil {
		return 0
	}
	_, calls := s.table.len()
	return calls
}
