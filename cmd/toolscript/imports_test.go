package main

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCommandNeedsOnlyApp: the command is flags and wiring. Of the module's
// packages its non-test files import host/app (which assembles everything
// and names what the command fills in and prints), host/platform/termtext
// (the rule every line shown to a person passes) and
// host/contract/catalog (its "did you mean" rule), and nothing else.
func TestCommandNeedsOnlyApp(t *testing.T) {
	const module = "github.com/toolscript/toolscript/"
	allowed := map[string]bool{"host/app": true, "host/platform/termtext": true, "host/contract/catalog": true}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				t.Fatal(err)
			}
			if pkg, ours := strings.CutPrefix(path, module); ours && !allowed[pkg] {
				t.Errorf("%s imports %s: the command reaches it through host/app", name, pkg)
			}
		}
	}
}
