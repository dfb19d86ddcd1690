package testprovenance

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
)

// recorder is a testing.TB that keeps the errors it is given.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// TestDescribes: a PROVENANCE text passes only when both its sha256 and
// its size are the module's, and each mismatch is named.
func TestDescribes(t *testing.T) {
	binary := []byte("\x00asm")
	sum := sha256.Sum256(binary)
	right := hex.EncodeToString(sum[:])
	wrong := strings.Repeat("0", 64)
	for _, tc := range []struct {
		name, provenance string
		errors           []string
	}{
		{name: "wrong sum", provenance: "sha256: " + wrong + "\nsize_bytes: 4\n", errors: []string{"records sha256"}},
		{name: "wrong size", provenance: "sha256: " + right + "\nsize_bytes: 5\n", errors: []string{"records size_bytes \"5\""}},
		{name: "neither", provenance: "", errors: []string{"records sha256", "records size_bytes"}},
		{name: "both right", provenance: "sha256: " + right + "\nsize_bytes: 4\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{TB: t}
			Describes(r, tc.provenance, binary, "m.wasm", "build.sh")
			if len(r.errors) != len(tc.errors) {
				t.Fatalf("errors %q, want %d", r.errors, len(tc.errors))
			}
			for i, want := range tc.errors {
				if !strings.Contains(r.errors[i], want) || !strings.Contains(r.errors[i], "m.wasm") {
					t.Errorf("error %q, want %q about m.wasm", r.errors[i], want)
				}
			}
		})
	}
}
