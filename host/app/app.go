// Package app assembles toolscript's parts into what its commands run,
// once the command line and the configuration file are resolved: it maps
// host/config's plain settings into each package's Config, with that
// package's defaults (settings.go); the sdk, over the specs it loads and
// the upstream MCP servers it starts (OpenSDK); one script run (Run), and
// the MCP server over standard input and output or hosted over HTTP
// (Serve), with its upstream watch, metrics and graceful shutdown. It knows nothing of flags or exit statuses: a caller's
// mistake comes back as a UsageError, anything else as a plain error.
package app

import (
	"errors"
	"fmt"
)

// UsageError is an error in what the caller asked for (a flag, a setting,
// a spec that cannot be loaded) rather than in running it: the command
// line exits with its usage status for it.
type UsageError struct {
	Err error
}

func (e *UsageError) Error() string { return e.Err.Error() }

func (e *UsageError) Unwrap() error { return e.Err }

// IsUsage reports whether err is, or wraps, a UsageError.
func IsUsage(err error) bool {
	var u *UsageError
	return errors.As(err, &u)
}

func usage(err error) error { return &UsageError{Err: err} }

// count writes n and a noun, plural unless n is 1: "1 script", "4 scripts".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
