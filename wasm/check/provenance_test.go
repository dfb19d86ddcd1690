package check

import (
	"testing"

	"github.com/toolscript/toolscript/internal/testprovenance"
)

// TestProvenanceRecordsBinary checks that PROVENANCE describes the
// embedded module (luau-build/verify-check.sh reproduces it).
func TestProvenanceRecordsBinary(t *testing.T) {
	testprovenance.Describes(t, Provenance, Binary, "luau-check.wasm", "luau-build/build-check.sh")
	if got := ProvenanceField("source_crate"); got != "luau-analyzer-sys 0.1.1 (crates.io)" {
		t.Errorf("PROVENANCE records source_crate %q, want the pinned luau-analyzer-sys 0.1.1", got)
	}
}
