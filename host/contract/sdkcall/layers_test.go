package sdkcall_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/toolscript/toolscript/"

// TestLayers: what makes the calls (host/sdk, host/sdk/upstream) and the
// redactor every sink shares (host/contract/redact) reach the script runtime
// (host/runtime/luau, and with it wazero) through no import of their non-test
// files: the call boundary is this package. The configuration
// (host/config) is plain settings: it reaches none of the packages that
// use them (host/app maps the settings into their Configs), and the sdk
// loads no spec and starts no server.
func TestLayers(t *testing.T) {
	for _, pkg := range []string{"host/sdk", "host/sdk/upstream", "host/sdk/sdkargs", "host/contract/sdkcall", "host/contract/redact"} {
		if path := reaches(t, pkg, "host/runtime/luau", map[string]bool{}); path != nil {
			t.Errorf("%s imports host/runtime/luau: %s", pkg, strings.Join(path, " -> "))
		}
	}
	// The sdk makes calls: host/app loads the specs and starts the
	// upstream servers it is handed.
	for _, loader := range []string{"host/sdk/openapi", "host/sdk/upstream"} {
		if path := reaches(t, "host/sdk", loader, map[string]bool{}); path != nil {
			t.Errorf("host/sdk imports %s: %s", loader, strings.Join(path, " -> "))
		}
	}
	for _, user := range []string{"host/app", "host/serve/hosted", "host/lint", "host/runtime/luau", "host/serve/mcpserver",
		"host/sdk", "host/sdk/upstream", "host/sdk/openapi", "host/contract/effects", "host/contract/effects/trace", "host/serve/auth",
		"host/runtime/sandboxio", "host/sdk/sdkdocs"} {
		if path := reaches(t, "host/config", user, map[string]bool{}); path != nil {
			t.Errorf("host/config imports %s, which uses its settings: %s", user, strings.Join(path, " -> "))
		}
	}
}

// reaches returns the import path from pkg to target among the module's
// packages, nil when there is none.
func reaches(t *testing.T, pkg, target string, seen map[string]bool) []string {
	if pkg == target {
		return []string{pkg}
	}
	if seen[pkg] {
		return nil
	}
	seen[pkg] = true
	dir := filepath.Join("..", "..", "..", filepath.FromSlash(pkg))
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("%s: no Go files (%v)", pkg, err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if dep, ok := strings.CutPrefix(p, module); ok {
				if path := reaches(t, dep, target, seen); path != nil {
					return append([]string{pkg}, path...)
				}
			}
		}
	}
	return nil
}
