package redact

import (
	"bytes"
	"encoding/json"
	"io"
)

// Bytes redacts b as text: b itself when it holds no secret.
func (r *Redactor) Bytes(b []byte) []byte {
	if !r.found(b, textLevels) {
		return b
	}
	return r.redactBytes(b, textLevels)
}

// JSON redacts an encoded JSON value value by value, so that it stays
// valid JSON with its numbers as they were (a secret that spans several
// values, or text that does not parse, is redacted as text): b itself
// when it holds no secret.
func (r *Redactor) JSON(b []byte) []byte {
	if !r.found(b, jsonLevels) {
		return b
	}
	out := r.jsonValue(b)
	if out == nil {
		return r.redactBytes(b, jsonLevels)
	}
	return out
}

// Message redacts an encoded JSON-RPC message as JSON does, but keeps
// its envelope: the keys of its objects and its top-level members id and
// jsonrpc, so that a secret that happens to be a request's id or a word
// of the protocol does not break the exchange. A secret in a key is
// redacted as JSON does.
func (r *Redactor) Message(b []byte) []byte {
	if !r.found(b, jsonLevels) {
		return b
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var msg map[string]any
	if err := dec.Decode(&msg); err != nil || dec.More() {
		return r.JSON(b)
	}
	kept := map[string]any{}
	for k, v := range msg {
		if k == "id" || k == "jsonrpc" {
			kept[k] = v
			delete(msg, k)
			continue
		}
		msg[k] = r.values(v)
	}
	encode := func() []byte {
		var data bytes.Buffer
		enc := json.NewEncoder(&data)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(msg); err != nil {
			return nil
		}
		return bytes.TrimSuffix(data.Bytes(), []byte("\n"))
	}
	if rest := encode(); rest == nil || r.found(rest, jsonLevels) {
		return r.JSON(b)
	}
	for k, v := range kept {
		msg[k] = v
	}
	return encode()
}

// values is v with its strings and numbers redacted, its keys kept.
func (r *Redactor) values(v any) any {
	switch x := v.(type) {
	case []any:
		for i := range x {
			x[i] = r.values(x[i])
		}
	case map[string]any:
		for k, e := range x {
			x[k] = r.values(e)
		}
	default:
		return r.value(v)
	}
	return v
}

// jsonValue is b redacted value by value; nil when b does not parse or
// a secret is left.
func (r *Redactor) jsonValue(b []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return nil
	}
	var data bytes.Buffer
	enc := json.NewEncoder(&data)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r.value(v)); err != nil || r.found(data.Bytes(), jsonLevels) {
		return nil
	}
	return bytes.TrimSuffix(data.Bytes(), []byte("\n"))
}

// Error is err with its text redacted; err itself when its text holds no
// secret (or err is nil). The redacted error still matches err's chain
// (errors.Is, errors.As).
func (r *Redactor) Error(err error) error {
	if err == nil || !r.Active() {
		return err
	}
	msg := err.Error()
	if red := r.String(msg); red != msg {
		return &redactedError{msg: red, err: err}
	}
	return err
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// Writer returns w with each Write's bytes redacted: what a logger, a
// line of standard error or an upstream server's forwarded line writes at
// once. It reports writing all of p when w took the redacted text whole.
// Without secrets it is w.
func (r *Redactor) Writer(w io.Writer) io.Writer {
	if !r.Active() || w == nil {
		return w
	}
	if rw, ok := w.(*writer); ok && rw.r == r {
		return w
	}
	return &writer{r: r, w: w}
}

type writer struct {
	r *Redactor
	w io.Writer
}

func (w *writer) Write(p []byte) (int, error) {
	out := w.r.Bytes(p)
	if _, err := w.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}
