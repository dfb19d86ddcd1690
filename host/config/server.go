package config

import (
	"fmt"
	"time"
)

// Server is the [server] section: the limits of `toolscript serve`, and
// the hosted mode (hosted.go).
type Server struct {
	// MaxConcurrent is how many scripts run at once; later calls wait.
	MaxConcurrent int `toml:"max_concurrent"`
	// MaxTimeout caps the timeout_ms a client may ask for, and the default
	// timeout too.
	MaxTimeout string `toml:"max_timeout" kind:"duration"`
	// MaxScriptBytes caps the size of a script's source.
	MaxScriptBytes int64 `toml:"max_script_bytes"`
	// QueueWait bounds how long a call waits for a slot.
	QueueWait string `toml:"queue_wait" kind:"duration"`

	// HTTP is the address of the hosted mode; empty serves stdio.
	HTTP string `toml:"http"`
	// Stateless issues no MCP sessions.
	Stateless bool `toml:"stateless"`
	// MaxConcurrentPerUser is how many scripts one user runs at once.
	MaxConcurrentPerUser int `toml:"max_concurrent_per_user"`
	// RateLimit is how many executions a user may start a minute; 0 is no
	// limit.
	RateLimit int `toml:"rate_limit"`
	// AllowedOrigins are the web origins whose pages may call the server.
	AllowedOrigins []string `toml:"allowed_origins"`
	// TLSCert and TLSKey are PEM files that turn on HTTPS.
	TLSCert string `toml:"tls_cert"`
	TLSKey  string `toml:"tls_key"`
	// ShutdownGrace is how long running scripts may finish after a signal.
	ShutdownGrace string `toml:"shutdown_grace" kind:"duration"`
	// MaxConnections caps the open connections; those over it get 503.
	// 0 is the default, sized to the descriptor limit.
	MaxConnections int `toml:"max_connections"`
	// MaxConnectionsPerClient caps the open connections of one client
	// address. 0 is the default.
	MaxConnectionsPerClient int `toml:"max_connections_per_client"`
	// AuthFailuresPerMinute bounds the failed authentications of one
	// client address a minute. 0 is the default.
	AuthFailuresPerMinute int `toml:"auth_failures_per_minute"`
	// BodyTimeout bounds the time a client takes to send a request body.
	BodyTimeout string `toml:"body_timeout" kind:"duration"`
	// WriteTimeout bounds each write of a response to a client.
	WriteTimeout string `toml:"write_timeout" kind:"duration"`
	// MaxUnwrittenBytesPerUser bounds the bytes of one user's responses
	// not yet written. 0 is the default.
	MaxUnwrittenBytesPerUser int64 `toml:"max_unwritten_bytes_per_user"`
	// MaxInlineResult is the most characters of a result's JSON text a
	// call answers inline; a larger result is kept for its user and
	// answered with a resource_link. 0 is the default.
	MaxInlineResult int `toml:"max_inline_result"`
	// ResultsKeptPerUser, ResultsKeptBytesPerUser and
	// ResultsKeptBytesTotal bound the results kept (the oldest is
	// evicted); ResultsKeptFor is how long one is kept. 0 or "" is the
	// default.
	ResultsKeptPerUser      int    `toml:"results_kept_per_user"`
	ResultsKeptBytesPerUser int64  `toml:"results_kept_bytes_per_user"`
	ResultsKeptBytesTotal   int64  `toml:"results_kept_bytes_total"`
	ResultsKeptFor          string `toml:"results_kept_for" kind:"duration"`
	// LargeResults is where a result over MaxInlineResult goes: "resource"
	// (the default) or "file", the io directory when the run has one.
	LargeResults string `toml:"large_results"`
	// MetricsAddr, when set, is where /metrics is served instead of the
	// public address (the hosted mode).
	MetricsAddr string `toml:"metrics_addr"`
}

// The values of [server] large_results.
const (
	LargeResultsResource = "resource"
	LargeResultsFile     = "file"
)

func (s Server) check() error {
	switch s.LargeResults {
	case "", LargeResultsResource, LargeResultsFile:
	default:
		return fmt.Errorf("server.large_results: %q is neither %q nor %q", s.LargeResults, LargeResultsResource, LargeResultsFile)
	}
	for _, d := range []struct{ key, value, example string }{
		{"server.max_timeout", s.MaxTimeout, "5m"},
		{"server.queue_wait", s.QueueWait, "30s"},
		{"server.shutdown_grace", s.ShutdownGrace, "10s"},
		{"server.body_timeout", s.BodyTimeout, "30s"},
		{"server.write_timeout", s.WriteTimeout, "30s"},
		{"server.results_kept_for", s.ResultsKeptFor, "1h"},
	} {
		if err := checkDuration(d.key, d.value, d.example); err != nil {
			return err
		}
	}
	return checkNotNegative(
		count{"server.max_concurrent", int64(s.MaxConcurrent)},
		count{"server.max_script_bytes", s.MaxScriptBytes},
		count{"server.max_concurrent_per_user", int64(s.MaxConcurrentPerUser)},
		count{"server.rate_limit", int64(s.RateLimit)},
		count{"server.max_connections", int64(s.MaxConnections)},
		count{"server.max_connections_per_client", int64(s.MaxConnectionsPerClient)},
		count{"server.auth_failures_per_minute", int64(s.AuthFailuresPerMinute)},
		count{"server.max_unwritten_bytes_per_user", s.MaxUnwrittenBytesPerUser},
		count{"server.max_inline_result", int64(s.MaxInlineResult)},
		count{"server.results_kept_per_user", int64(s.ResultsKeptPerUser)},
		count{"server.results_kept_bytes_per_user", s.ResultsKeptBytesPerUser},
		count{"server.results_kept_bytes_total", s.ResultsKeptBytesTotal},
	)
}

// ServerFlags are the command-line flags of serve's own limits. Zero values
// mean "not given".
type ServerFlags struct {
	MaxConcurrent  int
	MaxTimeout     time.Duration
	MaxScriptBytes int64
	QueueWait      time.Duration
	// HTTP is --http.
	HTTP string
}

// ServerSettings are the limits serve runs with. A zero field is the
// default of the MCP server (host/serve/mcpserver); a zero QueueWait is host/app's
// default for the mode (no bound under stdio).
type ServerSettings struct {
	MaxConcurrent  int
	MaxTimeout     time.Duration
	MaxScriptBytes int64
	// QueueWait bounds the wait for a slot.
	QueueWait time.Duration
	// HTTP is the address of the hosted mode ("" for stdio): the hosted
	// settings are ResolveHosted's.
	HTTP string
	// LargeResults are max_inline_result and the bounds of the results
	// kept; zero fields are the MCP server's defaults.
	LargeResults LargeResults
}

// LargeResults are the [server] settings of results too large to answer
// inline, field for field mcpserver.LargeResults (host/app converts one
// into the other, so the compiler keeps them alike).
type LargeResults struct {
	MaxInline    int
	PerUser      int
	BytesPerUser int64
	BytesTotal   int64
	KeepFor      time.Duration
	ToFile       bool
}

// Mode returns the mode these settings serve in.
func (s ServerSettings) Mode() Mode {
	if s.HTTP != "" {
		return Hosted
	}
	return Stdio
}

// ResolveServer combines the [server] section with the flags (which win).
func ResolveServer(f *File, flags ServerFlags) (ServerSettings, error) {
	if f == nil {
		f = &File{}
	}
	s := ServerSettings{
		MaxConcurrent:  f.Server.MaxConcurrent,
		MaxScriptBytes: f.Server.MaxScriptBytes,
		HTTP:           f.Server.HTTP,
	}
	if f.Server.MaxTimeout != "" {
		s.MaxTimeout, _ = time.ParseDuration(f.Server.MaxTimeout) // checked by Load
	}
	switch {
	case flags.MaxConcurrent < 0:
		return s, fmt.Errorf("--max-concurrent must be positive (got %d)", flags.MaxConcurrent)
	case flags.MaxTimeout < 0:
		return s, fmt.Errorf("--max-timeout must be positive (got %s)", flags.MaxTimeout)
	case flags.MaxScriptBytes < 0:
		return s, fmt.Errorf("--max-script-bytes must be positive (got %d)", flags.MaxScriptBytes)
	case flags.QueueWait < 0:
		return s, fmt.Errorf("--queue-wait must be positive (got %s)", flags.QueueWait)
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
	if flags.HTTP != "" {
		s.HTTP = flags.HTTP
	}
	s.LargeResults = LargeResults{MaxInline: f.Server.MaxInlineResult, PerUser: f.Server.ResultsKeptPerUser,
		BytesPerUser: f.Server.ResultsKeptBytesPerUser, BytesTotal: f.Server.ResultsKeptBytesTotal,
		ToFile: f.Server.LargeResults == LargeResultsFile}
	if f.Server.ResultsKeptFor != "" {
		s.LargeResults.KeepFor, _ = time.ParseDuration(f.Server.ResultsKeptFor) // checked by Load
	}
	if f.Server.QueueWait != "" {
		s.QueueWait, _ = time.ParseDuration(f.Server.QueueWait) // checked by Load
	}
	if flags.QueueWait > 0 {
		s.QueueWait = flags.QueueWait
	}
	return s, nil
}
