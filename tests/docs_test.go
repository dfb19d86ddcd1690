package tests

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestPackagesListed keeps docs/architecture.md's list of packages and the
// packages under host/ the same: a package added, removed or renamed
// without its row fails here.
func TestPackagesListed(t *testing.T) {
	root := filepath.Join("..")
	page, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, m := range regexp.MustCompile("(?m)^\\| `(host/[a-z0-9/]+)` \\|").FindAllStringSubmatch(string(page), -1) {
		listed = append(listed, m[1])
	}
	var found []string
	err = filepath.WalkDir(filepath.Join(root, "host"), func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() || d.Name() == "testdata" {
			if d != nil && d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return err
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".go") && !strings.HasSuffix(e.Name(), "_test.go") {
				rel, _ := filepath.Rel(root, p)
				found = append(found, filepath.ToSlash(rel))
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(listed)
	slices.Sort(found)
	for _, p := range found {
		if !slices.Contains(listed, p) {
			t.Errorf("package %s is not in docs/architecture.md's list of packages", p)
		}
	}
	for _, p := range listed {
		if !slices.Contains(found, p) {
			t.Errorf("docs/architecture.md lists %s, which is not a package", p)
		}
	}
}
