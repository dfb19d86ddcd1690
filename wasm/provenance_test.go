package wasm_test

import (
	"regexp"
	"testing"

	"github.com/toolscript/toolscript/internal/testprovenance"
	"github.com/toolscript/toolscript/wasm"
)

// TestProvenanceRecordsBinary checks that PROVENANCE describes the
// embedded module: its size and sha256, and the sha256 of clang's output,
// which luau-build/build.sh rewrote into it (luau-build/verify.sh
// reproduces both).
func TestProvenanceRecordsBinary(t *testing.T) {
	testprovenance.Describes(t, wasm.Provenance, wasm.Binary, "luau.wasm", "luau-build/build.sh")
	clang := wasm.ProvenanceField("clang_sha256")
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(clang) || clang == wasm.ProvenanceField("sha256") {
		t.Errorf("PROVENANCE records clang_sha256 %q: want the sha256 of clang's output, which the rewrite changes", clang)
	}
}
