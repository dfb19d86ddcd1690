package wasm

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strconv"
	"testing"
)

// TestProvenanceRecordsBinary checks that PROVENANCE describes the
// embedded module: its size and sha256, and the sha256 of clang's output,
// which luau-build/build.sh rewrote into it (luau-build/verify.sh
// reproduces both).
func TestProvenanceRecordsBinary(t *testing.T) {
	sum := sha256.Sum256(Binary)
	if got, want := ProvenanceField("sha256"), hex.EncodeToString(sum[:]); got != want {
		t.Errorf("PROVENANCE records sha256 %q, luau.wasm has %s: run luau-build/build.sh", got, want)
	}
	if got, want := ProvenanceField("size_bytes"), strconv.Itoa(len(Binary)); got != want {
		t.Errorf("PROVENANCE records size_bytes %q, luau.wasm has %s", got, want)
	}
	clang := ProvenanceField("clang_sha256")
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(clang) || clang == ProvenanceField("sha256") {
		t.Errorf("PROVENANCE records clang_sha256 %q: want the sha256 of clang's output, which the rewrite changes", clang)
	}
}
