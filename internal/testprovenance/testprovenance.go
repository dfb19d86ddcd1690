// Package testprovenance checks that a PROVENANCE file describes the
// WebAssembly module embedded beside it: the sha256 and the size it
// records are the module's.
package testprovenance

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"testing"

	"github.com/toolscript/toolscript/wasm"
)

// Describes reports an error unless provenance records binary's sha256
// and size; name is the module's file name and build the script that
// rebuilds it, for the message.
func Describes(t testing.TB, provenance string, binary []byte, name, build string) {
	t.Helper()
	sum := sha256.Sum256(binary)
	if got, want := wasm.Field(provenance, "sha256"), hex.EncodeToString(sum[:]); got != want {
		t.Errorf("PROVENANCE records sha256 %q, %s has %s: run %s", got, name, want, build)
	}
	if got, want := wasm.Field(provenance, "size_bytes"), strconv.Itoa(len(binary)); got != want {
		t.Errorf("PROVENANCE records size_bytes %q, %s has %s", got, name, want)
	}
}
