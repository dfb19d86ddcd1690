package redact

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// TestSecretFormats: a Secret shows as [REDACTED] however it is printed,
// encoded or logged, alone or inside a struct, a map or a slice; only
// Reveal gives its value.
func TestSecretFormats(t *testing.T) {
	const value = "ghp_s3cretValue0123"
	s := NewSecret(value)
	type holder struct {
		Token  Secret
		Tokens []Secret
		ByName map[string]Secret
		Ptr    *Secret
	}
	h := holder{Token: s, Tokens: []Secret{s}, ByName: map[string]Secret{"k": s}, Ptr: &s}
	var logged bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logged, nil))
	logger.Info("msg", "token", s, "holder", h)
	text := slog.New(slog.NewTextHandler(&logged, nil))
	text.Info("msg", "token", s, "ptr", &s)
	encode := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	marshalText := func() string {
		b, err := s.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, tc := range []struct{ how, got string }{
		{"%s", fmt.Sprintf("%s", s)},
		{"%v", fmt.Sprintf("%v", s)},
		{"%+v", fmt.Sprintf("%+v", s)},
		{"%#v", fmt.Sprintf("%#v", s)},
		{"%q", fmt.Sprintf("%q", s)},
		{"%x", fmt.Sprintf("%x", s)},
		{"%d", fmt.Sprintf("%d", s)},
		{"%v of a pointer", fmt.Sprintf("%v", &s)},
		{"%+v of a struct", fmt.Sprintf("%+v", h)},
		{"%#v of a struct", fmt.Sprintf("%#v", h)},
		{"Sprint", fmt.Sprint(s, h)},
		{"String", s.String()},
		{"error wrap", fmt.Errorf("token %v: %w", s, errors.New("x")).Error()},
		{"json", encode(s)},
		{"json of a struct", encode(h)},
		{"json map key", encode(map[Secret]int{s: 1})},
		{"MarshalText", marshalText()},
		{"slog", logged.String()},
	} {
		if strings.Contains(tc.got, value) || !strings.Contains(tc.got, Redacted) {
			t.Errorf("%s: %s", tc.how, tc.got)
		}
	}
	if s.Reveal() != value {
		t.Errorf("Reveal: %q", s.Reveal())
	}
}

// TestRedactorSinks: the sinks' entry points (String, Bytes, JSON,
// Error, Writer) remove every secret of the Redactor and of those With
// adds, leave text without one as it is, keep JSON valid, keep an error's
// chain; a nil Redactor redacts nothing.
func TestRedactorSinks(t *testing.T) {
	base := errors.New("base")
	r := New(NewSecret("tok-one-123")).With(NewSecret(`q"uo\te`))
	for _, tc := range []struct{ name, in, want string }{
		{"text", "a tok-one-123 b", "a [REDACTED] b"},
		{"escaped", `a tok%2Done-123 b`, "a [REDACTED] b"},
		{"none", "nothing here", "nothing here"},
		{"added by With", `x q"uo\te`, "x [REDACTED]"},
	} {
		if got := r.String(tc.in); got != tc.want {
			t.Errorf("String %s: %q, want %q", tc.name, got, tc.want)
		}
		if got := string(r.Bytes([]byte(tc.in))); got != tc.want {
			t.Errorf("Bytes %s: %q, want %q", tc.name, got, tc.want)
		}
	}
	for _, in := range []string{
		`{"a":"tok-one-123","n":1e400,"k":{"tok-one-123":[1,"q\"uo\\te"]}}`,
		`{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"{\"t\":\"tok-one-123\"}"}]}}`,
	} {
		out := r.JSON([]byte(in))
		if !json.Valid(out) || strings.Contains(string(out), "tok-one-123") || strings.Contains(string(out), `uo\\te`) {
			t.Errorf("JSON %s: %s", in, out)
		}
	}
	// A message keeps its id and its keys: a secret that is a request's
	// id or a protocol word does not break the exchange.
	port := New(NewSecret("8080"), NewSecret("tok-one-123"))
	for _, tc := range []struct{ in, want string }{
		{`{"jsonrpc":"2.0","id":8080,"result":{"port":8080,"text":"at 8080"}}`,
			`{"id":8080,"jsonrpc":"2.0","result":{"port":"[REDACTED]","text":"at [REDACTED]"}}`},
		{`{"jsonrpc":"2.0","id":1,"result":{"tok-one-123":1}}`, `{"id":1,"jsonrpc":"2.0","result":{"[REDACTED]":1}}`},
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, `{"jsonrpc":"2.0","id":1,"result":{}}`},
	} {
		if got := string(port.Message([]byte(tc.in))); got != tc.want {
			t.Errorf("Message %s: %s, want %s", tc.in, got, tc.want)
		}
	}
	if in := []byte(`{"a":1}`); &r.JSON(in)[0] != &in[0] {
		t.Error("JSON copied a text without a secret")
	}
	err := r.Error(fmt.Errorf("starting tok-one-123: %w", base))
	if err.Error() != "starting [REDACTED]: base" || !errors.Is(err, base) {
		t.Errorf("Error: %v (Is base: %v)", err, errors.Is(err, base))
	}
	var out bytes.Buffer
	w := r.Writer(&out)
	if n, err := fmt.Fprintf(w, "line tok-one-123\n"); err != nil || n != len("line tok-one-123\n") || out.String() != "line [REDACTED]\n" {
		t.Errorf("Writer: %d %v %q", n, err, out.String())
	}
	var none *Redactor
	if none.Active() || none.String("tok-one-123") != "tok-one-123" || none.Writer(&out) != &out || none.Error(base) != base {
		t.Error("a nil Redactor redacts")
	}
	if New(NewSecret("abc")).Active() {
		t.Error("a secret shorter than minSecret is redacted")
	}
}
