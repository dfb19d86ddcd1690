// Package suggest finds, for a name that is not known (a misspelt flag or
// configuration key), the known name a person most likely meant: the one
// suggestion rule every "did you mean" of toolscript follows.
package suggest

import (
	"strings"

	"github.com/xrash/smetrics"
)

// MaxNameBytes bounds the names compared: the edit distance costs the
// product of the two lengths, and no flag or key is longer.
const MaxNameBytes = 64

// Closest returns the candidate nearest to name in edit distance (ignoring
// case), when it is near enough to be a slip: at most one edit in three
// characters of name (and at least one). Among candidates as near, the
// first wins. ok is false when none is near enough.
func Closest(name string, candidates []string) (best string, ok bool) {
	if name == "" || len(name) > MaxNameBytes {
		return "", false
	}
	lower := strings.ToLower(name)
	bound := max(1, len(name)/3)
	bestDistance := bound + 1
	for _, c := range candidates {
		if c == "" || len(c) > MaxNameBytes {
			continue
		}
		d := smetrics.WagnerFischer(lower, strings.ToLower(c), 1, 1, 1)
		if d < bestDistance {
			best, bestDistance = c, d
		}
	}
	return best, bestDistance <= bound
}
