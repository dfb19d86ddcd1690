package effects

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"github.com/pmezard/go-difflib/difflib"
)

// MaxDiffBytes is the size up to which a text file's write carries a diff:
// both the real file and the written one must be at most this large.
const MaxDiffBytes = 256 << 10

// MaxDiffLines is how many lines each side of a diff may have: finding
// the changes costs up to the product of the two sides' lines (two sides
// of 20,000 short lines take seconds).
const MaxDiffLines = 2000

// maxDiffWork bounds the diffs of one execution (Run.Diff): the products
// of their sides' lines, summed; about a second of work. Past it, writes
// carry no diff.
const maxDiffWork = 40_000_000

// IsText reports whether data reads as text: valid UTF-8 without NUL
// bytes.
func IsText(data []byte) bool {
	return utf8.Valid(data) && bytes.IndexByte(data, 0) < 0
}

// Diff returns the unified diff (three lines of context) that turns old,
// the real file at path (nil when there is none), into new, "" when
// either is not text or larger than MaxDiffBytes, or they are equal.
func Diff(path string, old, new []byte) string {
	if len(old) > MaxDiffBytes || len(new) > MaxDiffBytes || !IsText(old) || !IsText(new) || bytes.Equal(old, new) ||
		bytes.Count(old, newline) >= MaxDiffLines || bytes.Count(new, newline) >= MaxDiffLines {
		return ""
	}
	from := "a/" + path
	if old == nil {
		from = "/dev/null"
	}
	text, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A:        lines(old),
		B:        lines(new),
		FromFile: from,
		ToFile:   "b/" + path,
		Context:  3,
	})
	if err != nil {
		return ""
	}
	return text
}

var newline = []byte{'\n'}

// Diff is the package's Diff within the run's budget of diff work: ""
// once the execution's diffs have cost maxDiffWork.
func (r *Run) Diff(path string, old, new []byte) string {
	cost := int64(bytes.Count(old, newline)+1) * int64(bytes.Count(new, newline)+1)
	if r != nil {
		r.mu.Lock()
		ok := r.diffWork+cost <= maxDiffWork
		if ok {
			r.diffWork += cost
		}
		r.mu.Unlock()
		if !ok {
			return ""
		}
	}
	return Diff(path, old, new)
}

// lines splits text into lines that each end in a newline (a last line
// without one is given one).
func lines(text []byte) []string {
	if len(text) == 0 {
		return nil
	}
	out := strings.SplitAfter(string(text), "\n")
	if out[len(out)-1] == "" {
		return out[:len(out)-1]
	}
	out[len(out)-1] += "\n"
	return out
}
