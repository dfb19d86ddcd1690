package sandboxio

import (
	"path"
	"strings"
	"testing"
)

// FuzzGlobMatch: without "**", a glob matches a path exactly when
// path.Match does (whose "*" never crosses a "/"); with "**" in place of a
// component, a path matches whenever it matches with that component
// removed, so "**" can always stand for no directory.
func FuzzGlobMatch(f *testing.F) {
	for _, seed := range [][2]string{
		{"*.txt", "a.txt"}, {"a/*/c", "a/b/c"}, {"[a-c]?", "b1"}, {"a/**/c", "a/c"}, {"**", "x/y"},
		{"s?b/[!x].csv", "sub/y.csv"}, {`\*`, "*"}, {"a/b", "a/b/c"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		g, err := parseGlob("io.glob", pattern)
		if err != nil || name == "" || strings.HasPrefix(name, "/") || strings.Contains(name, "//") || strings.HasSuffix(name, "/") {
			return
		}
		if _, err := Clean(name); err != nil || path.Clean(name) != name {
			return
		}
		got := g.matcher(false)(name)
		clean := strings.Join(g.parts, "/")
		if !strings.Contains(pattern, "**") {
			if want, _ := path.Match(clean, name); got != want && clean != "." {
				t.Fatalf("glob %q on %q: %v, path.Match says %v", clean, name, got, want)
			}
			return
		}
		var without []string
		for _, p := range g.parts {
			if p != "**" {
				without = append(without, p)
			}
		}
		if want, _ := path.Match(strings.Join(without, "/"), name); want && !got && len(without) > 0 {
			t.Fatalf("glob %q on %q: no match, yet it matches without its **", clean, name)
		}
	})
}
