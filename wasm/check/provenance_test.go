package check

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"testing"
)

// TestProvenanceRecordsBinary checks that PROVENANCE describes the
// embedded module (luau-build/verify-check.sh reproduces it).
func TestProvenanceRecordsBinary(t *testing.T) {
	sum := sha256.Sum256(Binary)
	if got, want := ProvenanceField("sha256"), hex.EncodeToString(sum[:]); got != want {
		t.Errorf("PROVENANCE records sha256 %q, luau-check.wasm has %s: run luau-build/build-check.sh", got, want)
	}
	if got, want := ProvenanceField("size_bytes"), strconv.Itoa(len(Binary)); got != want {
		t.Errorf("PROVENANCE records size_bytes %q, luau-check.wasm has %s", got, want)
	}
	if got := ProvenanceField("source_crate"); got != "luau-analyzer-sys 0.1.1 (crates.io)" {
		t.Errorf("PROVENANCE records source_crate %q, want the pinned luau-analyzer-sys 0.1.1", got)
	}
}
