// Package check embeds luau-check.wasm: upstream Luau's type checker
// (Analysis, with the Ast, Compiler and VM it needs) and the shim in
// luau-build/check-shim, compiled to a WASI reactor by
// luau-build/build-check.sh. PROVENANCE beside it records the Luau release,
// the source crate and its checksum, the toolchain, the flags and the
// sha256 of the binary. host/runtime/typecheck runs it.
package check

import (
	_ "embed"

	"github.com/toolscript/toolscript/wasm"
)

// Binary is the type checker's WebAssembly module.
//
//go:embed luau-check.wasm
var Binary []byte

// Provenance is wasm/check/PROVENANCE: how Binary was built.
//
//go:embed PROVENANCE
var Provenance string

// ProvenanceField returns the value of one "key: value" line of
// Provenance, or "" when there is none.
func ProvenanceField(key string) string {
	return wasm.Field(Provenance, key)
}
