package sdk

import (
	"fmt"
	"log/slog"

	"github.com/toolscript/toolscript/host/contract/redact"
)

// A Credential formats as its type and where it goes, its secrets as
// redact.Redacted, however it is printed, encoded or logged: a
// configuration or a request printed whole shows none of them.

// String is the credential with its secrets redacted (fmt.Stringer).
func (c Credential) String() string {
	return fmt.Sprintf("{Type:%s Name:%s In:%s Secrets:%s}", c.Type, c.Name, c.In, redact.Redacted)
}

// GoString is String (%#v).
func (c Credential) GoString() string { return "sdk.Credential" + c.String() }

// Format writes String for every verb (fmt.Formatter).
func (c Credential) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		fmt.Fprint(f, c.GoString())
		return
	}
	fmt.Fprint(f, c.String())
}

// MarshalJSON encodes the type and where it goes, the secrets redacted.
func (c Credential) MarshalJSON() ([]byte, error) {
	return fmt.Appendf(nil, `{"type":%q,"name":%q,"in":%q,"secrets":%q}`, c.Type, c.Name, c.In, redact.Redacted), nil
}

// LogValue is String (slog.LogValuer).
func (c Credential) LogValue() slog.Value { return slog.StringValue(c.String()) }
