package luau

import "fmt"

// logSink keeps a script's print() lines up to a count and a byte cap. Past
// either cap lines are counted, not kept, and the last entry says how many
// were dropped.
type logSink struct {
	maxLines, maxBytes int
	onLine             func(string)

	lines        []string
	bytes        int
	droppedLines int
	droppedBytes int
}

func (s *logSink) add(line []byte) {
	if s.droppedLines > 0 || len(s.lines) >= s.maxLines || s.bytes+len(line) > s.maxBytes {
		s.droppedLines++
		s.droppedBytes += len(line)
		return
	}
	text := string(line)
	s.lines = append(s.lines, text)
	s.bytes += len(line)
	if s.onLine != nil {
		s.onLine(text)
	}
}

// finish returns the kept lines, followed by a note if any were dropped.
func (s *logSink) finish() []string {
	if s.droppedLines == 0 {
		return s.lines
	}
	note := fmt.Sprintf("[toolscript: %d more log lines (%d bytes) dropped: logs are capped at %d lines and %d bytes]",
		s.droppedLines, s.droppedBytes, s.maxLines, s.maxBytes)
	if s.onLine != nil {
		s.onLine(note)
	}
	return append(s.lines, note)
}
