package main

import (
	"go/build"
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
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range pkg.Imports { // of the non-test files only
		if name, ours := strings.CutPrefix(path, module); ours && !allowed[name] {
			t.Errorf("cmd/toolscript imports %s: the command reaches it through host/app", name)
		}
	}
}
