package config

import (
	"fmt"
	"time"
)

// Server is the [server] section: the limits of `toolscript serve`.
type Server struct {
	// MaxConcurrent is how many scripts run at once; later calls wait.
	MaxConcurrent int `toml:"max_concurrent"`
	// MaxTimeout caps the timeout_ms a client may ask for, and the default
	// timeout too.
	MaxTimeout string `toml:"max_timeout"`
	// MaxScriptBytes caps the size of a script's source.
	MaxScriptBytes int64 `toml:"max_script_bytes"`
}

// The defaults of the [server] section.
const (
	DefaultMaxConcurrent  = 4
	DefaultMaxTimeout     = 5 * time.Minute
	DefaultMaxScriptBytes = 1 << 20
)

func (s Server) check() error {
	if s.MaxTimeout != "" {
		d, err := time.ParseDuration(s.MaxTimeout)
		if err != nil || d <= 0 {
			return fmt.Errorf("server.max_timeout: %q is not a positive duration such as \"5m\"", s.MaxTimeout)
		}
	}
	if s.MaxConcurrent < 0 {
		return fmt.Errorf("server.max_concurrent: must not be negative (got %d)", s.MaxConcurrent)
	}
	if s.MaxScriptBytes < 0 {
		return fmt.Errorf("server.max_script_bytes: must not be negative (got %d)", s.MaxScriptBytes)
	}
	return nil
}

// ServerFlags are the command-line flags of serve's own limits. Zero values
// mean "not given".
type ServerFlags struct {
	MaxConcurrent  int
	MaxTimeout     time.Duration
	MaxScriptBytes int64
}

// ServerSettings are the limits serve runs with, every field set.
type ServerSettings struct {
	MaxConcurrent  int
	MaxTimeout     time.Duration
	MaxScriptBytes int64
}

// ResolveServer combines the [server] section with the flags (which win)
// and fills in the defaults.
func ResolveServer(f *File, flags ServerFlags) (ServerSettings, error) {
	if f == nil {
		f = &File{}
	}
	s := ServerSettings{
		MaxConcurrent:  DefaultMaxConcurrent,
		MaxTimeout:     DefaultMaxTimeout,
		MaxScriptBytes: DefaultMaxScriptBytes,
	}
	if f.Server.MaxConcurrent > 0 {
		s.MaxConcurrent = f.Server.MaxConcurrent
	}
	if f.Server.MaxTimeout != "" {
		s.MaxTimeout, _ = time.ParseDuration(f.Server.MaxTimeout) // checked by Load
	}
	if f.Server.MaxScriptBytes > 0 {
		s.MaxScriptBytes = f.Server.MaxScriptBytes
	}
	switch {
	case flags.MaxConcurrent < 0:
		return s, fmt.Errorf("--max-concurrent must be positive (got %d)", flags.MaxConcurrent)
	case flags.MaxTimeout < 0:
		return s, fmt.Errorf("--max-timeout must be positive (got %s)", flags.MaxTimeout)
	case flags.MaxScriptBytes < 0:
		return s, fmt.Errorf("--max-script-bytes must be positive (got %d)", flags.MaxScriptBytes)
	}
	if flags.MaxConcurrent > 0 {
		s.MaxConcurrent = flags.MaxConcurrent
	}
	if flags.MaxTimeout > 0 {
		s.MaxTimeout = flags.MaxTimeout
	}
	if flags.MaxScriptBytes > 0 {
		s.MaxScriptBytes = flags.MaxScriptBytes
	}
	return s, nil
}
