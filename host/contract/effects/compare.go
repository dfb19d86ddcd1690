package effects

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"
)

// What a call's effect binds, and how two are compared: one rule for a
// plan's entries (plan.go) and a replay's recorded calls (replay.go).
//
// A call's effect holds every byte of the request the script controls:
// the function, the method and URL, the headers its parameters set (and
// the content type), and the body. The body is held so that two different
// byte strings never compare equal:
//
//   - a JSON value other than a string stands for exactly the bytes of
//     its canonical encoding (canonicalJSON), and is given so only when
//     those are the bytes sent; key order and whitespace in a plan a
//     person reformatted do not matter, and a body that is not canonical
//     (a duplicate key, other spacing, another escape) is never one;
//   - a JSON string stands for its text's bytes, exactly;
//   - BodySHA256 and BodyBytes stand for a larger or binary body.

// SetBody sets e's body from the exact bytes of a request body: bytes
// that are the canonical encoding of a JSON value other than a string as
// that value, other UTF-8 text as a JSON string, and anything larger than
// MaxBodyBytes or binary by its sha256 and size.
func (e *Effect) SetBody(data []byte) {
	if len(data) == 0 {
		return
	}
	if len(data) <= MaxBodyBytes {
		if data[0] != '"' && isCanonicalJSON(data) {
			e.Body = json.RawMessage(data)
			return
		}
		if utf8.Valid(data) {
			e.Body = jsonString(data)
			return
		}
	}
	sum := sha256.Sum256(data)
	e.BodySHA256 = hex.EncodeToString(sum[:])
	e.BodyBytes = int64(len(data))
}

// SetArguments sets e's body from an MCP tool's arguments (JSON): a tool
// gets their value, so the body is the value's canonical encoding.
// Arguments that are not JSON are taken as they are.
func (e *Effect) SetArguments(args []byte) {
	if canon, err := canonicalJSON(args); err == nil {
		args = canon
	}
	e.SetBody(args)
}

// bodyOf is the bytes a body of an effect stands for (see above).
func bodyOf(body json.RawMessage) ([]byte, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil, nil
	}
	if body[0] == '"' {
		var text string
		if err := json.Unmarshal(body, &text); err != nil {
			return nil, err
		}
		return []byte(text), nil
	}
	return canonicalJSON(body)
}

// isCanonicalJSON reports whether data is exactly the canonical encoding
// of the JSON value it holds.
func isCanonicalJSON(data []byte) bool {
	canon, err := canonicalJSON(data)
	return err == nil && bytes.Equal(canon, data)
}

// canonicalJSON is data decoded and encoded again as encoding/json
// encodes (keys sorted, no whitespace, <, > and & escaped); numbers keep
// their text. Of duplicate keys the last is kept, as the decoders of most
// servers keep it.
func canonicalJSON(data []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(data[dec.InputOffset():])) > 0 {
		return nil, errors.New("more than one JSON value")
	}
	return json.Marshal(v)
}

// jsonString is text as a JSON string.
func jsonString(text []byte) json.RawMessage {
	out, _ := json.Marshal(string(text))
	return out
}

// differsCall says how the call got differs from want: "" when it sends
// the same request (the method's case aside), else what differs first.
func differsCall(want, got Effect) string {
	switch {
	case want.Function != got.Function:
		return "another function"
	case !strings.EqualFold(want.Method, got.Method):
		return "another method"
	case want.URL != got.URL:
		return "another URL"
	}
	if d := differsHeaders(want.Headers, got.Headers); d != "" {
		return d
	}
	return differsBody(want, got)
}

// differsHeaders names the first header (in name order) that is not the
// same in got as in want.
func differsHeaders(want, got map[string]string) string {
	names := slices.Collect(maps.Keys(want))
	for k := range got {
		if _, ok := want[k]; !ok {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	for _, k := range names {
		w, inWant := want[k]
		g, inGot := got[k]
		switch {
		case !inWant:
			return fmt.Sprintf("another header, %s: %q", k, cut(g, 200))
		case !inGot:
			return fmt.Sprintf("no header %s (expected %q)", k, cut(w, 200))
		case w != g:
			return fmt.Sprintf("another value of header %s: %q, not %q", k, cut(g, 200), cut(w, 200))
		}
	}
	return ""
}

// differsBody says whether got's body is another than want's: other bytes.
func differsBody(want, got Effect) string {
	if want.BodySHA256 != got.BodySHA256 || want.BodyBytes != got.BodyBytes {
		return "another body"
	}
	w, werr := bodyOf(want.Body)
	g, gerr := bodyOf(got.Body)
	if werr != nil || gerr != nil || !bytes.Equal(w, g) {
		return "another body"
	}
	return ""
}

// describeHeaders is headers for a message: `, headers {...}`
// (FormatHeaders), "" for none.
func describeHeaders(headers map[string]string) string {
	if len(headers) == 0 {
		return ""
	}
	return ", headers " + FormatHeaders(headers)
}

// FormatHeaders is a call's headers on one line for a person, in name
// order, each value quoted and cut at 100 bytes: {A: "x", B: "y"}.
func FormatHeaders(headers map[string]string) string {
	var b strings.Builder
	b.WriteString("{")
	for i, k := range slices.Sorted(maps.Keys(headers)) {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s: %q", k, cut(headers[k], 100))
	}
	b.WriteString("}")
	return b.String()
}
