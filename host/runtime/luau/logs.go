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
	note := fmt.Sprintf("[toolscript: %s (%s) dropped: logs are capped at %s and %s]",
		count(s.droppedLines, "more log line"), count(s.droppedBytes, "byte"), count(s.maxLines, "line"), count(s.maxBytes, "byte"))
	if s.onLine != nil {
		s.onLine(note)
	}
	return append(s.lines, note)
}

// count writes n and a noun, plural unless n is 1: "1 line", "2 lines".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
