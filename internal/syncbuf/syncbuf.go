// Package syncbuf provides a bytes.Buffer safe for concurrent use: what
// tests hand a server as its log or standard error, and read while it
// writes; and where a trace recorded to memory is written
// (host/contract/effects/trace).
package syncbuf

import (
	"bytes"
	"strings"
	"sync"
)

// Buffer is a bytes.Buffer behind a mutex. The zero value is empty and
// ready to use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Bytes returns a copy of what was written so far.
func (s *Buffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}

// Lines returns what was written so far as lines, without the white
// space around it; nil when that is nothing.
func (s *Buffer) Lines() []string {
	text := strings.TrimSpace(s.String())
	if text == "" {
		return nil
	}
	return strings.Split(text, "\n")
}

// Reset empties the buffer.
func (s *Buffer) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Reset()
}
