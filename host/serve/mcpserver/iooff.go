package mcpserver

import (
	"bytes"
	"regexp"
	"strings"

	"github.com/toolscript/toolscript/host/runtime/result"
)

// With io disabled the sandbox leaves io, os.remove, os.rename and file out, and a
// script using them fails the way Luau fails on any nil:
// "attempt to index nil with 'open'". The server words it for what it is.

// ioDisabledNote is appended to such an error message.
const ioDisabledNote = " (file access is disabled on this server: io, os.remove, os.rename and file are not available)"

// ioUse matches a use of the io library in a line of source: io.open(...),
// io:lines, file.save, os.remove, os.rename. The name is the field, or
// "remove" or "rename".
var ioUse = regexp.MustCompile(`(?:^|[^\w.:])(?:(?:io|file)\s*[.:]\s*([A-Za-z_]\w*)|os\s*\.\s*(remove|rename)\b)`)

// explainDisabledIO appends ioDisabledNote to the message of a runtime
// error raised on a line of source that uses the io library as the error
// says: indexing nil with the field it names, or calling os.remove or
// os.rename.
func explainDisabledIO(res *result.Result, source []byte) {
	e := res.Error
	if e == nil || e.Kind != result.Runtime || e.Line <= 0 {
		return
	}
	field, call := "", false
	const index = "attempt to index nil with '"
	switch i := strings.LastIndex(e.Message, index); {
	case i >= 0 && strings.HasSuffix(e.Message, "'"):
		field = e.Message[i+len(index) : len(e.Message)-1]
	case strings.HasSuffix(e.Message, "attempt to call a nil value"):
		call = true
	default:
		return
	}
	for _, m := range ioUse.FindAllStringSubmatch(sourceLine(source, e.Line), -1) {
		if (!call && m[1] != "" && m[1] == field) || (call && m[2] != "") {
			e.Message += ioDisabledNote
			return
		}
	}
}

// sourceLine returns line n (1-based) of source, cut to 4 KiB.
func sourceLine(source []byte, n int) string {
	for i := 1; i < n; i++ {
		j := bytes.IndexByte(source, '\n')
		if j < 0 {
			return ""
		}
		source = source[j+1:]
	}
	if j := bytes.IndexByte(source, '\n'); j >= 0 {
		source = source[:j]
	}
	if len(source) > 4096 {
		source = source[:4096]
	}
	return string(source)
}
