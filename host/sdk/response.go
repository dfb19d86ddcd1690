package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/toolscript/toolscript/host/contract/limit"
	"github.com/toolscript/toolscript/host/contract/redact"
	"github.com/toolscript/toolscript/host/contract/sdkcall"
)

// messageBodyBytes is how much of an error response's body its message
// quotes.
const messageBodyBytes = 512

// response reads and converts one response: the body with its
// Content-Encoding undone (decoded), within max_response_bytes (with the
// headers), JSON when the media type says so (and it parses), text
// otherwise, nothing for 204 or an empty body; a non-2xx status is an
// upstream error carrying the decoded body and the headers. Its bytes are
// held in the host memory budgets (waiting for them within ctx) from
// before the body is read until the script has them. Everything is
// redacted before the error message quotes the body, so that its cut
// never shows part of a secret; a body the redaction changed, or that was
// decoded, loses its Content-Length (it would tell the secret's length,
// or how well a response that echoes one compressed).
func (s *Session) response(ctx context.Context, f *function, resp *http.Response, dataOnly bool) *sdkcall.Response {
	maxBytes := s.c.cfg.MaxResponseBytes
	codings, err := codings(resp.Header)
	if err != nil {
		return &sdkcall.Response{Fail: sdkcall.Upstream, Status: resp.StatusCode, Message: s.redact.String(f.name + ": " + err.Error())}
	}
	headers := headerBytes(resp.Header)
	maxBody := maxBytes - headers
	body, size, wire := io.Reader(resp.Body), resp.ContentLength, maxBody
	if codings != nil {
		wire, size = wireCap(maxBytes), -1
	}
	if headers > maxBytes || resp.ContentLength > wire {
		announced := max(resp.ContentLength, 0)
		return &sdkcall.Response{Fail: sdkcall.Limit, Message: fmt.Sprintf(
			"%s: the response is %d bytes (headers %d, body %d), more than max_response_bytes (%d; [sdk] max_response_bytes)",
			f.name, headers+announced, headers, announced, maxBytes)}
	}
	var windows int64 // the decoders' memory
	if codings != nil {
		r, w, close, err := decoded(resp.Body, codings, maxBytes)
		if err != nil {
			return s.readFailed(f, err)
		}
		defer close()
		body, windows = r, w
	}
	want, most := headers+windows+bodyEstimate(size, maxBody), min(s.budget.Size(), s.c.budget.Size())
	if size < 0 { // at most the budgets, grown as it is read
		want = max(headers, min(want, most))
	}
	held, err := limit.Reserve(ctx, want, s.budget, s.c.budget)
	if err != nil {
		return s.overBudget(f, "response", false, err)
	}
	release := true
	defer func() {
		if release {
			held.Release()
		}
	}()
	data, err := readBody(&heldReader{r: body, ctx: ctx, held: held, base: headers, max: maxBody, most: most}, size, maxBody)
	if err != nil {
		if be := (*limit.BytesError)(nil); errors.As(err, &be) {
			return s.overBudget(f, "response", true, err)
		}
		return s.readFailed(f, err)
	}
	if int64(len(data)) > maxBody {
		return &sdkcall.Response{Fail: sdkcall.Limit, Message: fmt.Sprintf(
			"%s: the response (headers included) is more than max_response_bytes (%d; [sdk] max_response_bytes)", f.name, maxBytes)}
	}
	if size := headers + int64(cap(data)); size < held.Held() {
		_ = held.Resize(ctx, size) // shrinking: no error
	}
	// A successful response's headers go to the script only if it takes
	// them (CallData); a failure's error table always has them.
	out := convert(resp.StatusCode, resp.Header, data, !dataOnly || resp.StatusCode/100 != 2)
	out.Release, release = held.Release, false
	if codings != nil && out.Headers != nil {
		// The body is decoded: its coding and length on the wire no longer
		// apply (and the length would tell how well a response that
		// echoes a credential compressed).
		delete(out.Headers, "content-encoding")
		delete(out.Headers, "content-length")
	}
	if s.redact.Active() {
		if s.redact.Response(out) {
			delete(out.Headers, "content-length") // it would tell the secret's length
		}
		if out.Fail == sdkcall.Upstream {
			// The message quotes the redacted body: a cut through an echoed
			// secret shows none of it.
			body := out.Text
			if out.JSON != nil {
				body = out.JSON
			}
			out.Message = statusMessage(out.Status, body, redact.Cut)
		}
	}
	if out.Fail == sdkcall.Upstream {
		out.Message = s.redact.String(f.name + ": " + out.Message)
		if resp.StatusCode/100 == 3 && resp.Header.Get("Location") != "" {
			out.Message += " (a redirect to another origin, or one too many, is not followed)"
		}
	}
	return out
}

// tooLarge is the failure of a call of f whose response is larger than
// max_response_bytes.
func (s *Session) tooLarge(f *function) *sdkcall.Response {
	return &sdkcall.Response{Fail: sdkcall.Limit, Message: fmt.Sprintf(
		"%s: the response is larger than max_response_bytes (%d; [sdk] max_response_bytes)", f.name, s.c.cfg.MaxResponseBytes)}
}

// readFailed is the outcome of a body that could not be read (or
// decoded): kind limit for one past max_response_bytes on the wire.
func (s *Session) readFailed(f *function, err error) *sdkcall.Response {
	if errors.Is(err, errWireLimit) {
		return s.tooLarge(f)
	}
	return &sdkcall.Response{Fail: sdkcall.Upstream, Message: s.redact.String(f.name + ": reading the response: " + transportError(err))}
}

// headerBytes is the size of headers as they were sent: each value on a
// line of its own ("Name: value\r\n").
func headerBytes(h http.Header) int64 {
	var n int64
	for k, vs := range h {
		for _, v := range vs {
			n += int64(len(k) + len(v) + 4)
		}
	}
	return n
}

// bodyEstimate is what a body is expected to take: its announced size
// (size, -1 for none), or all it may take (maxBody) when none is
// announced.
func bodyEstimate(size, maxBody int64) int64 {
	if size >= 0 && size <= maxBody {
		return size
	}
	return maxBody
}

// heldReader reads a body whose bytes held holds (base bytes for the
// headers, then the body): a body longer than was held grows the holding
// as it is read, up to max bytes of body, and fails once it needs more than
// the smallest budget (most).
type heldReader struct {
	r               io.Reader
	ctx             context.Context
	held            *limit.Hold
	base, max, most int64
	read            int64
}

func (h *heldReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.read += int64(n)
	if need := h.base + min(h.read, h.max); need > h.held.Held() {
		// Twice what was read so far: a long body grows it a few times.
		grow := max(need, min(h.base+2*h.read, h.base+h.max, h.most))
		if gerr := h.held.Resize(h.ctx, grow); gerr != nil {
			return n, gerr
		}
	}
	return n, err
}

// readBody reads r to its end, or to max+1 bytes (more than the limit):
// into one buffer of the announced size when there is one (size, -1 for
// none), growing it as io.ReadAll does otherwise.
func readBody(r io.Reader, size, max int64) ([]byte, error) {
	n := int64(512)
	if size >= 0 && size <= max {
		n = size + 1 // room to see the end without growing
	}
	b := make([]byte, 0, n)
	for int64(len(b)) <= max {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		room := b[len(b):min(int64(cap(b)), max+1)]
		m, err := r.Read(room)
		b = b[:len(b)+m]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
	return b, nil
}

// Convert turns a status, headers and a complete body into what the script
// gets. For a non-2xx status, Message is "HTTP 404 Not Found: <the first
// 512 bytes of the body>" (the caller puts the function's name first).
func Convert(status int, header http.Header, body []byte) *sdkcall.Response {
	return convert(status, header, body, true)
}

// convert is Convert, leaving Headers nil unless withHeaders.
func convert(status int, header http.Header, body []byte, withHeaders bool) *sdkcall.Response {
	out := &sdkcall.Response{Status: status}
	if withHeaders {
		out.Headers = make(map[string]string, len(header))
		for k, v := range header {
			out.Headers[lowerHeader(k)] = strings.Join(v, ", ")
		}
	}
	if status != http.StatusNoContent && status != http.StatusResetContent && status != http.StatusNotModified && len(body) > 0 {
		if isJSONBody(header.Get("Content-Type"), body) {
			out.JSON = json.RawMessage(body) // parsed by the shim, once
		} else {
			out.Text = body
		}
	}
	if status < 200 || status > 299 {
		out.Fail = sdkcall.Upstream
		out.Message = statusMessage(status, body, redact.Cut)
	}
	return out
}

// statusMessage is an HTTP error's message: "HTTP 404 Not Found: " and
// the start of the body, as cut.
func statusMessage(status int, body []byte, cut func([]byte, int) string) string {
	text := http.StatusText(status)
	if text == "" {
		text = "status"
	}
	msg := fmt.Sprintf("HTTP %d %s", status, text)
	if len(body) > 0 {
		msg += ": " + cut(body, messageBodyBytes)
	}
	return msg
}

// lowerHeader is a header name in lower case; the common ones without
// allocating.
func lowerHeader(k string) string {
	switch k {
	case "Content-Type":
		return "content-type"
	case "Content-Length":
		return "content-length"
	case "Date":
		return "date"
	case "Etag":
		return "etag"
	case "Link":
		return "link"
	case "Location":
		return "location"
	case "Server":
		return "server"
	case "Vary":
		return "vary"
	case "Cache-Control":
		return "cache-control"
	case "Last-Modified":
		return "last-modified"
	}
	return strings.ToLower(k)
}

// isJSONBody: a JSON media type (the shim parses the body, and passes one
// that does not parse on as text); without a media type, a body that
// parses as a JSON object or array.
func isJSONBody(contentType string, body []byte) bool {
	if contentType == "" {
		t := bytes.TrimSpace(body)
		return len(t) > 0 && (t[0] == '{' || t[0] == '[') && json.Valid(body)
	}
	if strings.HasPrefix(contentType, "application/json") && (len(contentType) == 16 || contentType[16] == ';') {
		return true // the common case, without parsing parameters
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		mt = strings.ToLower(strings.TrimSpace(strings.SplitN(contentType, ";", 2)[0]))
	}
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// headersTooLarge reports whether err is the transport's refusal of a
// response whose headers are larger than its MaxResponseHeaderBytes
// (net/http has no error value for it, only this message).
func headersTooLarge(err error) bool {
	return err != nil && strings.Contains(err.Error(), "server response headers exceeded")
}
