package sdk

import "github.com/toolscript/toolscript/host/contract/redact"

// Redacted is the marker a secret is replaced with.
const Redacted = redact.Redacted
