package redact

import (
	"fmt"
	"log/slog"
)

// Redacted replaces a secret wherever one would leave the host: in
// messages, response bodies and headers, logs, plans and traces.
const Redacted = "[REDACTED]"

// Secret is a value read from the environment or given as a credential.
// It formats as Redacted however it is printed (%s, %v, %+v, %#v, %q),
// encoded (JSON, text) or logged (slog): only Reveal gives its value, to
// the one place that sends it.
type Secret struct{ v string }

// NewSecret makes v a Secret.
func NewSecret(v string) Secret { return Secret{v: v} }

// Secrets makes each of vs a Secret.
func Secrets(vs ...string) []Secret {
	out := make([]Secret, len(vs))
	for i, v := range vs {
		out[i] = Secret{v: v}
	}
	return out
}

// Reveal is the secret's value, for the one place that sends it.
func (s Secret) Reveal() string { return s.v }

// IsZero reports whether the secret is empty.
func (s Secret) IsZero() bool { return s.v == "" }

// String is Redacted (fmt.Stringer).
func (s Secret) String() string { return Redacted }

// GoString is Redacted, quoted (fmt.GoStringer, %#v).
func (s Secret) GoString() string { return `"` + Redacted + `"` }

// Format writes Redacted for every verb (fmt.Formatter).
func (s Secret) Format(f fmt.State, verb rune) {
	switch verb {
	case 'q':
		fmt.Fprintf(f, "%q", Redacted)
	case 'v':
		if f.Flag('#') {
			fmt.Fprint(f, s.GoString())
			return
		}
		fmt.Fprint(f, Redacted)
	default:
		fmt.Fprint(f, Redacted)
	}
}

// MarshalText is Redacted (encoding.TextMarshaler).
func (s Secret) MarshalText() ([]byte, error) { return []byte(Redacted), nil }

// MarshalJSON is Redacted as a JSON string (json.Marshaler).
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + Redacted + `"`), nil }

// LogValue is Redacted (slog.LogValuer).
func (s Secret) LogValue() slog.Value { return slog.StringValue(Redacted) }
