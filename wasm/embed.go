// Package wasm embeds luau.wasm: upstream Luau (VM, compiler and parser) and
// the toolscript shim compiled to a WASI reactor by luau-build/build.sh.
// PROVENANCE beside it records the Luau release, the source crate and its
// checksum, the toolchain, the flags and the sha256 of the binary.
package wasm

import _ "embed"

// Binary is the Luau WebAssembly module.
//
//go:embed luau.wasm
var Binary []byte
