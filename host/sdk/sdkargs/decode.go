// Package sdkargs reads an sdk call's arguments and words what is wrong
// with them, the same way for every kind of function a script calls (an
// OpenAPI operation, an MCP tool): the argument list decoded (List), a
// value's type named in a script's terms (TypeName), and a JSON Schema
// validation error rendered as its most specific problem, at a location
// named as the function's kind names it (Describe).
package sdkargs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// List reads a call's arguments, the JSON array the shim encoded, into
// the values the checks and encoders work on (as jsonschema.UnmarshalJSON
// gives them: nil, bool, json.Number, string, []any, map[string]any).
// Trailing nils are no arguments. The shim writes a string's bytes that
// are not valid UTF-8 as they are; with keepBytes they stay in the string
// (a binary string reaches a file part, a form field or a string body
// intact; a JSON body replaces them with U+FFFD, as json.encode does),
// without it they become U+FFFD as jsonschema.UnmarshalJSON has them.
func List(raw json.RawMessage, keepBytes bool) ([]any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	v, err := decodeJSON(jsonDecoder{data: raw, keepBytes: keepBytes})
	if err != nil {
		// The reference decoder's words for what is wrong.
		if _, err = jsonschema.UnmarshalJSON(bytes.NewReader(raw)); err == nil {
			err = errors.New("malformed JSON")
		}
		return nil, fmt.Errorf("arguments are not valid JSON: %w", err)
	}
	list, ok := v.([]any)
	if !ok {
		return nil, errors.New("arguments must be a list")
	}
	for len(list) > 0 && list[len(list)-1] == nil {
		list = list[:len(list)-1]
	}
	return list, nil
}

// maxArgsDepth is how deep arguments may nest: encoding/json's own limit.
const maxArgsDepth = 10000

// errJSON is the decoder's failure; List asks the reference decoder
// for the details, which is rare (the shim writes valid JSON).
var errJSON = errors.New("invalid JSON")

// Parse decodes one JSON document exactly as jsonschema.UnmarshalJSON
// (encoding/json with UseNumber) does, without its reflection and
// buffering: a call's arguments are decoded on every call.
// FuzzParse checks that both agree on every input.
func Parse(data []byte) (any, error) {
	return decodeJSON(jsonDecoder{data: data})
}

// parseArgs is Parse, except that bytes of a string that are not valid
// UTF-8 are kept as they are instead of becoming U+FFFD: the sdk's
// arguments, which the shim writes so (json.cpp, InvalidUTF8::Keep).
func parseArgs(data []byte) (any, error) {
	return decodeJSON(jsonDecoder{data: data, keepBytes: true})
}

func decodeJSON(d jsonDecoder) (any, error) {
	d.space()
	v, err := d.value(0)
	if err != nil {
		return nil, err
	}
	d.space()
	if d.pos != len(d.data) {
		return nil, errJSON
	}
	return v, nil
}

type jsonDecoder struct {
	data []byte
	pos  int
	// keepBytes keeps a string's invalid UTF-8 bytes (parseArgs).
	keepBytes bool
}

func (d *jsonDecoder) space() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *jsonDecoder) value(depth int) (any, error) {
	if d.pos >= len(d.data) {
		return nil, errJSON
	}
	switch c := d.data[d.pos]; {
	case c == '{':
		return d.object(depth + 1)
	case c == '[':
		return d.array(depth + 1)
	case c == '"':
		return d.string()
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return d.number()
	}
	return nil, errJSON
}

func (d *jsonDecoder) literal(word string) error {
	if !bytes.HasPrefix(d.data[d.pos:], []byte(word)) {
		return errJSON
	}
	d.pos += len(word)
	return nil
}

func (d *jsonDecoder) digits() bool {
	start := d.pos
	for d.pos < len(d.data) && d.data[d.pos] >= '0' && d.data[d.pos] <= '9' {
		d.pos++
	}
	return d.pos > start
}

func (d *jsonDecoder) number() (any, error) {
	start := d.pos
	if d.data[d.pos] == '-' {
		d.pos++
	}
	switch {
	case d.pos < len(d.data) && d.data[d.pos] == '0':
		d.pos++
	case !d.digits():
		return nil, errJSON
	}
	if d.pos < len(d.data) && d.data[d.pos] == '.' {
		d.pos++
		if !d.digits() {
			return nil, errJSON
		}
	}
	if d.pos < len(d.data) && (d.data[d.pos] == 'e' || d.data[d.pos] == 'E') {
		d.pos++
		if d.pos < len(d.data) && (d.data[d.pos] == '+' || d.data[d.pos] == '-') {
			d.pos++
		}
		if !d.digits() {
			return nil, errJSON
		}
	}
	return json.Number(d.data[start:d.pos]), nil
}

// string decodes a string as encoding/json does: invalid UTF-8 (unless
// keepBytes) and lone surrogates become U+FFFD, control characters are
// refused.
func (d *jsonDecoder) string() (string, error) {
	d.pos++ // the opening quote
	start := d.pos
	// The common case: no escapes, valid UTF-8.
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		if c == '"' {
			s := d.data[start:d.pos]
			d.pos++
			return string(s), nil
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
		d.pos++
	}
	out := append([]byte(nil), d.data[start:d.pos]...)
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		switch {
		case c == '"':
			d.pos++
			return string(out), nil
		case c < 0x20:
			return "", errJSON
		case c == '\\':
			var ok bool
			if out, ok = d.escape(out); !ok {
				return "", errJSON
			}
		case c < utf8.RuneSelf:
			out = append(out, c)
			d.pos++
		default:
			r, size := utf8.DecodeRune(d.data[d.pos:])
			if r == utf8.RuneError && size == 1 && !d.keepBytes {
				out = utf8.AppendRune(out, utf8.RuneError)
			} else {
				out = append(out, d.data[d.pos:d.pos+size]...)
			}
			d.pos += size
		}
	}
	return "", errJSON
}

// escape appends what the escape at d.pos (its backslash) stands for to
// out; false for one JSON does not have.
func (d *jsonDecoder) escape(out []byte) ([]byte, bool) {
	d.pos++
	if d.pos >= len(d.data) {
		return out, false
	}
	e := d.data[d.pos]
	d.pos++
	switch e {
	case '"', '\\', '/':
		return append(out, e), true
	case 'b':
		return append(out, '\b'), true
	case 'f':
		return append(out, '\f'), true
	case 'n':
		return append(out, '\n'), true
	case 'r':
		return append(out, '\r'), true
	case 't':
		return append(out, '\t'), true
	case 'u':
		return d.unicodeEscape(out)
	}
	return out, false
}

// unicodeEscape appends the rune of a \u escape (its four digits at
// d.pos): a surrogate pair makes one rune, any other surrogate U+FFFD.
func (d *jsonDecoder) unicodeEscape(out []byte) ([]byte, bool) {
	r, ok := d.hex4()
	if !ok {
		return out, false
	}
	if utf16.IsSurrogate(r) {
		if d.pos+6 <= len(d.data) && d.data[d.pos] == '\\' && d.data[d.pos+1] == 'u' {
			save := d.pos
			d.pos += 2
			if r2, ok := d.hex4(); ok {
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
					return utf8.AppendRune(out, dec), true
				}
			}
			d.pos = save
		}
		r = utf8.RuneError
	}
	return utf8.AppendRune(out, r), true
}

func (d *jsonDecoder) hex4() (rune, bool) {
	if d.pos+4 > len(d.data) {
		return 0, false
	}
	var r rune
	for _, c := range d.data[d.pos : d.pos+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	d.pos += 4
	return r, true
}

func (d *jsonDecoder) array(depth int) (any, error) {
	if depth > maxArgsDepth {
		return nil, errJSON
	}
	d.pos++
	list := []any{}
	d.space()
	if d.pos < len(d.data) && d.data[d.pos] == ']' {
		d.pos++
		return list, nil
	}
	for {
		d.space()
		v, err := d.value(depth)
		if err != nil {
			return nil, err
		}
		list = append(list, v)
		done, err := d.separator(']')
		if err != nil {
			return nil, err
		}
		if done {
			return list, nil
		}
	}
}

func (d *jsonDecoder) object(depth int) (any, error) {
	if depth > maxArgsDepth {
		return nil, errJSON
	}
	d.pos++
	m := map[string]any{}
	d.space()
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		return m, nil
	}
	for {
		d.space()
		if d.pos >= len(d.data) || d.data[d.pos] != '"' {
			return nil, errJSON
		}
		k, err := d.string()
		if err != nil {
			return nil, err
		}
		d.space()
		if d.pos >= len(d.data) || d.data[d.pos] != ':' {
			return nil, errJSON
		}
		d.pos++
		d.space()
		v, err := d.value(depth)
		if err != nil {
			return nil, err
		}
		m[k] = v
		done, err := d.separator('}')
		if err != nil {
			return nil, err
		}
		if done {
			return m, nil
		}
	}
}

// separator reads what follows an element or a member: a comma (more
// follow) or close (the array or object ends).
func (d *jsonDecoder) separator(close byte) (done bool, err error) {
	d.space()
	if d.pos >= len(d.data) {
		return false, errJSON
	}
	switch d.data[d.pos] {
	case ',':
		d.pos++
		return false, nil
	case close:
		d.pos++
		return true, nil
	}
	return false, errJSON
}
