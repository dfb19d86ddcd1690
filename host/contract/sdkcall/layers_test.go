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
	if files, err := filepath.Glob(filepath.Join(dir, "*.go")); err != nil || len(files) == 0 {
		t.Fatalf("%s: no Go files (%v)", pkg, err)
	}
	for _, dep := range moduleImports(t, dir) {
		if path := reaches(t, dep, target, seen); path != nil {
			return append([]string{pkg}, path...)
		}
	}
	return nil
}

// wings are the folders of host/, top to bottom: a package's imports run
// down this list (to a lower rank) or stay inside its own wing. The
// runtime and the sdk share a rank: neither imports the other, both stand
// on the contracts. Below everything are the module's packages outside
// host/ that host/ uses: the embedded wasm module and internal/.
var wings = []struct {
	name    string
	rank    int
	folders []string
}{
	{"top", 5, []string{"host/app", "host/config", "host/lint"}},
	{"serve", 4, []string{"host/serve"}},
	{"runtime", 3, []string{"host/runtime"}},
	{"sdk", 3, []string{"host/sdk"}},
	{"contract", 2, []string{"host/contract"}},
	{"platform", 1, []string{"host/platform"}},
	{"module", 0, []string{"wasm", "internal"}},
}

// wingOf returns the wing a package of the module belongs to, ok false
// for a package outside every wing.
func wingOf(pkg string) (name string, rank int, ok bool) {
	for _, w := range wings {
		for _, folder := range w.folders {
			if pkg == folder || strings.HasPrefix(pkg, folder+"/") {
				return w.name, w.rank, true
			}
		}
	}
	return "", 0, false
}

// importRunsDown reports whether a non-test file of from may import to:
// within one wing, or down to a lower rank.
func importRunsDown(from, to string) bool {
	fw, fr, ok := wingOf(from)
	if !ok {
		return false
	}
	tw, tr, ok := wingOf(to)
	if !ok {
		return false
	}
	return fw == tw || tr < fr
}

// TestLayersWingOrder: the rule holds in both directions: down is allowed,
// up and across (runtime and sdk) are not.
func TestLayersWingOrder(t *testing.T) {
	for _, c := range []struct {
		from, to string
		ok       bool
	}{
		{"host/app", "host/serve/mcpserver", true},
		{"host/serve/mcpserver", "host/app", false},
		{"host/serve/mcpserver", "host/runtime/luau", true},
		{"host/runtime/luau", "host/serve/mcpserver", false},
		{"host/serve/hosted", "host/sdk", true},
		{"host/sdk", "host/serve/hosted", false},
		{"host/runtime/luau", "host/contract/sdkcall", true},
		{"host/contract/sdkcall", "host/runtime/luau", false},
		{"host/sdk", "host/contract/effects", true},
		{"host/contract/effects", "host/sdk", false},
		{"host/runtime/luau", "host/sdk", false},
		{"host/runtime/result", "host/sdk/sdkdocs", false},
		{"host/sdk/openapi", "host/runtime/result", false},
		{"host/sdk/upstream", "host/sdk/redirect", true},
		{"host/contract/effects", "host/contract/effects/trace", true},
		{"host/contract/catalog", "host/platform/cachedir", true},
		{"host/platform/cachedir", "host/contract/catalog", false},
		{"host/runtime/luau", "internal/wasmrewrite", true},
		{"host/runtime/luau", "wasm", true},
		{"internal/wasmrewrite", "host/runtime/luau", false},
		{"wasm", "host/platform/cachedir", false},
		{"host/luau", "host/contract/sdkcall", false},
		{"host/runtime/luau", "host/sdkcall", false},
		{"host/sdkx", "host/contract/sdkcall", false},
	} {
		if got := importRunsDown(c.from, c.to); got != c.ok {
			t.Errorf("importRunsDown(%s, %s) = %v, want %v", c.from, c.to, got, c.ok)
		}
	}
}

// TestLayersWings: every package under host/ is in a wing, and every
// import of a non-test file (followed into internal/) runs down the wings.
func TestLayersWings(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	var pkgs []string
	err := filepath.WalkDir(filepath.Join(root, "host"), func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if d.IsDir() {
			return nil
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			rel, err := filepath.Rel(root, filepath.Dir(path))
			if err != nil {
				return err
			}
			if pkg := filepath.ToSlash(rel); len(pkgs) == 0 || pkgs[len(pkgs)-1] != pkg {
				pkgs = append(pkgs, pkg)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 20 {
		t.Fatalf("found %d packages under host/: %v", len(pkgs), pkgs)
	}
	seen := map[string]bool{}
	for len(pkgs) > 0 {
		pkg := pkgs[0]
		pkgs = pkgs[1:]
		if seen[pkg] {
			continue
		}
		seen[pkg] = true
		if _, _, ok := wingOf(pkg); !ok {
			t.Errorf("%s is in no wing: put it under host/serve, host/runtime, host/sdk, host/contract or host/platform", pkg)
			continue
		}
		for _, dep := range moduleImports(t, filepath.Join(root, filepath.FromSlash(pkg))) {
			if !importRunsDown(pkg, dep) {
				fw, _, _ := wingOf(pkg)
				tw, _, _ := wingOf(dep)
				t.Errorf("%s (%s) imports %s (%s): an import must stay in its wing or run down", pkg, fw, dep, tw)
			}
			pkgs = append(pkgs, dep)
		}
	}
}

// moduleImports returns the module's packages the non-test files in dir
// import.
func moduleImports(t *testing.T, dir string) []string {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var deps []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if dep, ok := strings.CutPrefix(p, module); ok {
				deps = append(deps, dep)
			}
		}
	}
	return deps
}
