package wasm

import (
	_ "embed"
	"strings"
)

// Provenance is wasm/PROVENANCE: how Binary was built.
//
//go:embed PROVENANCE
var Provenance string

// ProvenanceField returns the value of one "key: value" line of Provenance,
// or "" when there is none.
func ProvenanceField(key string) string {
	return Field(Provenance, key)
}

// Field returns the value of one "key: value" line of a PROVENANCE text
// (this module's or wasm/check's), or "" when there is none.
func Field(provenance, key string) string {
	for _, line := range strings.Split(provenance, "\n") {
		if k, v, ok := strings.Cut(line, ": "); ok && k == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
