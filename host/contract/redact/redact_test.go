package redact

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/contract/sdkcall"
)

// TestRedactForms: the redactor finds a secret however it is escaped and
// split, and leaves text without one as it is.
func TestRedactForms(t *testing.T) {
	r := New(NewSecret("AbC/d+e=F"))
	for _, tc := range []struct{ in, want string }{
		{"x AbC/d+e=F y", "x [REDACTED] y"},
		{"x abc/D+E=f y", "x [REDACTED] y"},
		{`x AbC\/d+e=F y`, "x [REDACTED] y"},
		{`x \u0041bC/d\u002be=\u0046 y`, "x [REDACTED] y"},
		{`x \u0041\u0062\u0043\u002f\u0064\u002b\u0065\u003d\u0046`, "x [REDACTED]"},
		{"x AbC%2fd%2Be%3dF y", "x [REDACTED] y"},
		{"x %41%62%43%2F%64%2B%65%3D%46 y", "x [REDACTED] y"},
		{"x AbC%252Fd+e=F y", "x [REDACTED] y"},    // percent-encoded twice
		{`x AbC%5Cu002fd+e=F y`, "x [REDACTED] y"}, // a JSON escape, percent-encoded
		{"x &#65;bC&#x2F;d&#43;e&#61;F y", "x [REDACTED] y"},
		{"x A\x00b\x00C\x00/\x00d\x00+\x00e\x00=\x00F\x00 y", "x [REDACTED] y"},
		{"AbC/d+e=F", Redacted},
		{"AbC/d+e=", "AbC/d+e="}, // a part is no secret
		{"no secret here", "no secret here"},
		{`\u00zz %zz &#; &amp`, `\u00zz %zz &#; &amp`},
	} {
		if got := r.String(tc.in); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.in, got, tc.want)
		}
	}
	// JSON: strings decoded, value by value; one the decoder cannot parse
	// becomes text, redacted.
	for _, body := range []string{
		`{"a":"AbC\/d+e=F","b":1}`,
		`{"AbC\/d\u002Be=F":"k"}`,
		`{"a":"AbC\\\/d+e=F"}`,
		`{"a":"AbC\/d+e=F"`,
		`{"a":"AbC/d+e=F"} trailing`,
	} {
		out := &sdkcall.Response{JSON: json.RawMessage(body)}
		if !r.Response(out) {
			t.Errorf("%s: not redacted", body)
		}
		got := string(out.JSON) + string(out.Text)
		if r.found([]byte(got), jsonLevels) || !strings.Contains(got, Redacted) {
			t.Errorf("%s: %s", body, got)
		}
		if out.JSON != nil && !json.Valid(out.JSON) {
			t.Errorf("%s: invalid JSON %s", body, out.JSON)
		}
	}
}

// FuzzRedact: a secret never survives redaction, and JSON stays JSON.
func FuzzRedact(f *testing.F) {
	f.Add("s3cret-token", `{"echo":"Bearer s3cret-token","n":12345678901234567890}`)
	f.Add("a\"b\\c/d", `{"x":"a\"b\\c/d"}`)
	f.Add("tok+en/=", `{"q":"api_key=tok%2Ben%2F%3D"}`)
	f.Add("Ab/Cd", `{"a":"x \u0041b\/%63D &#x41;b/Cd"}`)
	f.Add("secret", "s\u0065cr%45t and s\x00e\x00c")
	f.Fuzz(func(t *testing.T, secret, body string) {
		if len(secret) < minSecret {
			return
		}
		r := New(NewSecret(secret))
		out := &sdkcall.Response{Message: "m " + secret, Headers: map[string]string{"x": secret}}
		if json.Valid([]byte(body)) {
			out.JSON = json.RawMessage(body)
		} else {
			out.Text = []byte(body)
		}
		r.Response(out)
		for _, s := range []string{out.Message, out.Headers["x"], string(out.Text), string(out.JSON)} {
			if r.found([]byte(s), jsonLevels) {
				t.Fatalf("secret %q is still found in %q", secret, s)
			}
			if strings.Contains(s, secret) && !strings.Contains(strings.ReplaceAll(s, Redacted, ""), secret) {
				continue // the secret is made of the marker's own text
			}
			if strings.Contains(s, secret) {
				t.Fatalf("secret %q survives in %q", secret, s)
			}
		}
		if out.JSON != nil && !json.Valid(out.JSON) {
			t.Fatalf("redacted JSON is invalid: %q", out.JSON)
		}
		// The sinks' JSON: no secret left, valid JSON stays valid.
		got := r.JSON([]byte(body))
		if r.found(got, jsonLevels) || (json.Valid([]byte(body)) && !json.Valid(got)) {
			t.Fatalf("JSON(%q) = %q", body, got)
		}
	})
}
