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
	for _, line := range strings.Split(Provenance, "\n") {
		if k, v, ok := strings.Cut(line, ": "); ok && k == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
