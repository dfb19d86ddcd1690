package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolscript/toolscript/host/runtime/result"
	"github.com/toolscript/toolscript/host/runtime/sandboxio"
	"github.com/toolscript/toolscript/host/serve/auth"
)

// present makes the response of an execution's result: inline when its
// JSON text is at most LargeResults.MaxInline characters, else kept for
// its user (kept.go) and answered with a resource_link, a summary, and a
// structured content whose result is null and whose result_resource
// names the resource (logs, files touched, effects and the error are
// still there, bounded). When dir is set (LargeResults.ToFile), the result
// is written there instead and result_file names it; failing that, it is
// kept as a resource, with a warning saying why. A result that cannot be
// kept is answered inline, with a warning saying why.
func (s *Server) present(user auth.User, res *result.Result, dir string) *mcp.CallToolResult {
	text := res.JSON()
	max := s.cfg.LargeResults.MaxInline
	if s.kept == nil || len(text) <= max || utf8.RuneCount(text) <= max {
		return toolResultOf(res, text)
	}
	if dir != "" {
		// The file leaves the host as a message does (its next reader
		// may send it anywhere): it passes the same redactor.
		filed := s.cfg.Redactor.JSON(text)
		name, err := sandboxio.KeepResult(dir, filed, s.kept.fileBounds(), time.Now())
		if err == nil {
			return s.filed(res, filed, name)
		}
		res.Warnings = append(res.Warnings, fmt.Sprintf("the result is larger than [server] max_inline_result (%d characters) "+
			"but cannot be written to the io directory: %v; it is kept as a resource", max, err))
		text = res.JSON()
	}
	uri, expiry, err := s.kept.keep(user, text)
	if err != nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("the result is larger than [server] max_inline_result (%d characters) "+
			"but cannot be kept as a resource: %v", max, err))
		return toolResult(res)
	}
	return s.linked(res, text, uri, expiry)
}

// resultResource is what structured content says of a kept result.
type resultResource struct {
	URI        string    `json:"uri"`
	Characters int       `json:"characters"`
	Bytes      int       `json:"bytes"`
	Expires    time.Time `json:"expires"`
}

// resultFile is what structured content says of a result written to the
// io directory.
type resultFile struct {
	Path       string    `json:"path"`
	Characters int       `json:"characters"`
	Bytes      int       `json:"bytes"`
	Expires    time.Time `json:"expires"`
}

// linked is the response of a result kept under uri.
func (s *Server) linked(res *result.Result, text []byte, uri string, expiry time.Time) *mcp.CallToolResult {
	chars := utf8.RuneCount(text)
	link := mcp.NewResourceLink(uri, strings.TrimPrefix(uri, keptURIPrefix),
		fmt.Sprintf("The whole result of execute_script: %d characters of JSON", chars), "application/json")
	size := int64(len(text))
	link.Size = &size
	where := fmt.Sprintf("it is kept for you for %s as the resource %s. Read it whole with resources/read",
		duration(s.cfg.LargeResults.KeepFor), uri)
	return s.referred(res, text, "result_resource", resultResource{URI: uri, Characters: chars, Bytes: len(text),
		Expires: expiry.UTC().Truncate(time.Second)}, where, link)
}

// filed is the response of a result written to the io directory as name.
func (s *Server) filed(res *result.Result, text []byte, name string) *mcp.CallToolResult {
	keepFor := s.kept.fileBounds().For
	where := fmt.Sprintf("it is written to the io directory as %s for %s. A script reads it whole with "+
		"json.decode(io.open(%q):read(\"a\"))", name, duration(keepFor), name)
	return s.referred(res, text, "result_file", resultFile{Path: name, Characters: utf8.RuneCount(text), Bytes: len(text),
		Expires: time.Now().Add(keepFor).UTC().Truncate(time.Second)}, where, nil)
}

// referred is the response of a result that is elsewhere: a summary
// saying where, then link when there is one, and a structured content
// whose result is null and whose field ref names where (logs, files
// touched, effects and the error are still there, bounded).
func (s *Server) referred(res *result.Result, text []byte, field string, ref any, where string, link mcp.Content) *mcp.CallToolResult {
	small := *res
	small.Value = json.RawMessage("null")
	small.Logs = slices.Clone(res.Logs) // Bound appends to them
	small.Bound(s.cfg.LargeResults.MaxInline / 2)
	refJSON, _ := json.Marshal(ref)
	structured := small.JSON()
	structured = append(append(append(structured[:len(structured)-1:len(structured)-1], `,"`+field+`":`...), refJSON...), '}')

	preview := res.Value
	if res.Failed() || len(bytes.TrimSpace(preview)) == 0 || string(preview) == "null" {
		preview = text
	}
	summary := fmt.Sprintf("The result is %d characters of JSON, more than this server answers inline (%d): "+
		"%s; structured content has \"result\": null and names it in %q.\nIts value: %s.\nIts first lines:\n%s",
		utf8.RuneCount(text), s.cfg.LargeResults.MaxInline, where, field, shape(res.Value), firstLines(preview))
	out := &mcp.CallToolResult{RawStructuredContent: structured, IsError: res.Failed()}
	if res.Failed() {
		out.Content = append(out.Content, mcp.NewTextContent(ErrorPrefix+res.Error.Message))
	}
	out.Content = append(out.Content, mcp.NewTextContent(summary))
	if link != nil {
		out.Content = append(out.Content, link)
	}
	out.Content = append(out.Content, mcp.NewTextContent(string(structured)))
	return out
}

// readKeptResult answers resources/read of a kept result: its user's
// alone. Any other URI, or another user's, is not found.
func (s *Server) readKeptResult(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	user, _ := auth.UserFrom(ctx)
	text, err := s.kept.read(user, req.Params.URI)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", server.ErrResourceNotFound, err)
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "application/json", Text: string(text)}}, nil
}

// The bounds of a summary's parts.
const (
	shapeKeys        = 20
	previewLines     = 12
	previewLineChars = 160
	previewChars     = 1500
)

// shape says what a JSON value is: its type, and its keys or length.
func shape(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	what := jsonType(v)
	switch what {
	case "a string":
		var s string
		if json.Unmarshal(v, &s) == nil {
			return fmt.Sprintf("a string of %d characters", utf8.RuneCountInString(s))
		}
	case "an object", "an array":
		dec := json.NewDecoder(bytes.NewReader(v))
		if _, err := dec.Token(); err != nil {
			return what
		}
		var keys []string
		n := 0
		for dec.More() {
			if what == "an object" {
				t, err := dec.Token()
				if err != nil {
					return what
				}
				if key, _ := t.(string); len(keys) < shapeKeys {
					keys = append(keys, truncate(key, 40))
				}
			}
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return what
			}
			n++
		}
		if what == "an array" {
			return fmt.Sprintf("an array of %s", result.Plural(n, "element", "elements"))
		}
		more := ""
		if n > len(keys) {
			more = fmt.Sprintf(", and %d more", n-len(keys))
		}
		return fmt.Sprintf("an object of %s: %s%s", result.Plural(n, "key", "keys"), strings.Join(keys, ", "), more)
	}
	return what
}

// firstLines is the beginning of a JSON value, indented, bounded in
// lines and characters; a string's first lines are its text's.
func firstLines(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	text := ""
	var s string
	if len(v) > 0 && v[0] == '"' && json.Unmarshal(v, &s) == nil {
		text = s
	} else {
		text = indentPrefix(v, previewChars*2)
	}
	lines := strings.SplitAfterN(text, "\n", previewLines+1)
	cut := len(lines) > previewLines
	if cut {
		lines = lines[:previewLines]
	}
	var b strings.Builder
	for _, line := range lines {
		line = strings.TrimRight(line, "\n")
		if utf8.RuneCountInString(line) > previewLineChars {
			line = truncate(line, previewLineChars)
		}
		if b.Len()+len(line) > previewChars {
			cut = true
			break
		}
		b.WriteString(line + "\n")
	}
	if cut || len(text) >= previewChars*2 {
		b.WriteString("… (truncated)")
	}
	return strings.TrimRight(b.String(), "\n")
}

// truncate keeps the first n characters of s, marking a cut with "…".
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// indentPrefix indents the beginning of the JSON text v, two spaces a
// level, stopping once it has written about limit bytes: it reads only
// what it writes, so a value of any size costs the same.
func indentPrefix(v []byte, limit int) string {
	var b strings.Builder
	depth := 0
	var str jsonStrings
	newline := func() {
		b.WriteByte('\n')
		b.WriteString(strings.Repeat("  ", max(0, min(depth, 20))))
	}
	for i := 0; i < len(v) && b.Len() < limit; i++ {
		c := v[i]
		if str.step(c) {
			b.WriteByte(c)
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
		case '{', '[':
			b.WriteByte(c)
			if i+1 < len(v) && (v[i+1] == '}' || v[i+1] == ']') {
				continue
			}
			depth++
			newline()
		case '}', ']':
			if i > 0 && (v[i-1] == '{' || v[i-1] == '[') {
				b.WriteByte(c)
				continue
			}
			depth--
			newline()
			b.WriteByte(c)
		case ',':
			b.WriteByte(c)
			newline()
		case ':':
			b.WriteString(": ")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
