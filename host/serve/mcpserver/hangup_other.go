//go:build !unix

package mcpserver

import (
	"context"
	"io"
)

// watchHangup does nothing here: a client that went away is noticed when
// a write to it fails.
func watchHangup(context.Context, io.Writer, func()) {}
