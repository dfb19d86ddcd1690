package sdk

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strings"

	"github.com/toolscript/toolscript/host/luau"
)

// Redacted replaces a credential wherever one would reach the script: in
// messages, response bodies and headers (an API that echoes a request
// must not hand its credentials to the script).
const Redacted = "[REDACTED]"

// minSecret is the shortest secret redacted: shorter strings occur in
// ordinary text too often to be cut out of it.
const minSecret = 4

// redactor removes a session's secrets from what goes back to the script.
type redactor struct {
	secrets  [][]byte
	texts    []string // the secrets as strings
	replacer *strings.Replacer
}

func newRedactor(secrets []string) *redactor {
	r := &redactor{}
	var pairs []string
	seen := map[string]bool{}
	for _, secret := range secrets {
		if len(secret) < minSecret {
			continue
		}
		// The secret as sent, and as an echo may show it: URL-encoded in a
		// query or path, escaped in a JSON string.
		quoted, _ := json.Marshal(secret)
		for _, s := range []string{secret, url.QueryEscape(secret), url.PathEscape(secret), string(quoted[1 : len(quoted)-1])} {
			if seen[s] {
				continue
			}
			seen[s] = true
			r.secrets = append(r.secrets, []byte(s))
			r.texts = append(r.texts, s)
			pairs = append(pairs, s, Redacted)
		}
	}
	r.replacer = strings.NewReplacer(pairs...)
	return r
}

func (r *redactor) contains(b []byte) bool {
	for _, s := range r.secrets {
		if bytes.Contains(b, s) {
			return true
		}
	}
	return false
}

func (r *redactor) string(s string) string {
	for _, secret := range r.texts {
		if strings.Contains(s, secret) {
			return r.replacer.Replace(s)
		}
	}
	return s // nothing to replace (most strings): no copy
}

// response redacts a converted response in place. A JSON body is redacted
// value by value, so that it stays valid JSON with its numbers as they
// were.
func (r *redactor) response(out *luau.SDKResponse) {
	if len(r.secrets) == 0 {
		return
	}
	for k, v := range out.Headers {
		out.Headers[k] = r.string(v)
	}
	out.Message = r.string(out.Message)
	if out.Text != nil && r.contains(out.Text) {
		out.Text = []byte(r.string(string(out.Text)))
	}
	if out.JSON != nil && r.contains(out.JSON) {
		dec := json.NewDecoder(bytes.NewReader(out.JSON))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err == nil {
			if data, err := json.Marshal(r.value(v)); err == nil {
				out.JSON = data
				return
			}
		}
		out.JSON, out.Text = nil, []byte(r.string(string(out.JSON)))
	}
}

func (r *redactor) value(v any) any {
	switch x := v.(type) {
	case string:
		return r.string(x)
	case json.Number: // a numeric secret echoed as a number
		if s := r.string(x.String()); s != x.String() {
			return Redacted
		}
	case []any:
		for i := range x {
			x[i] = r.value(x[i])
		}
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[r.string(k)] = r.value(e)
		}
		return m
	}
	return v
}
