//go:build !linux

package terminal

import "os"

// discardInput does nothing here: input typed before a question is read
// as its answer.
func discardInput(*os.File) {}
