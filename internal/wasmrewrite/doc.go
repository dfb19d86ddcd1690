// Package wasmrewrite rewrites the bytes of a WebAssembly module (the 1.0
// binary format with the sign-extension, non-trapping conversion, bulk
// memory and multi-value extensions) so that instantiating it costs less:
// LazyTable makes its function table fill on demand, WithoutActiveData
// lifts the contents of its active data segments out of it. It reads and
// writes the binary format itself (sections, LEB128 numbers, opcodes) and
// knows nothing of what the module is beyond what a caller tells it: the
// names of the exports LazyTable adds.
//
// luau-build/build.sh applies LazyTable when it builds wasm/luau.wasm
// (luau-build/rewrite); host/runtime/luau applies WithoutActiveData when it loads
// the module, and LazyTable only to a module that was not built so
// (EnsureLazyTable).
package wasmrewrite
