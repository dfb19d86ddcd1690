// Package testconfig owns how tests write a toolscript.toml: the file in
// a directory, and a Go string quoted as a TOML string for its text.
package testconfig

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/internal/testfile"
)

// Name is the file name of a configuration.
const Name = "toolscript.toml"

// Write writes text as dir's toolscript.toml and returns dir.
func Write(t testing.TB, dir, text string) string {
	t.Helper()
	testfile.Write(t, filepath.Join(dir, Name), text)
	return dir
}

// Quote returns s, valid UTF-8, as a TOML basic string: JSON's escapes
// (\", \\, \n, \uXXXX for other control characters) are TOML's too, and
// DEL, which TOML wants escaped and JSON does not, is escaped.
func Quote(s string) string {
	b, _ := json.Marshal(s)
	return strings.ReplaceAll(string(b), "\x7f", `\u007f`)
}
