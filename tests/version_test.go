package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolscript/toolscript/internal/testfile"
	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// TestVersionFromModule installs toolscript the way a user does, with
// `go install github.com/toolscript/toolscript/cmd/toolscript@VERSION`,
// from a local module proxy that holds this source tree as v1.9.9, and
// checks that `toolscript version` and the MCP serverInfo report v1.9.9
// (not "dev"). Everything else comes from the module cache: no network.
func TestVersionFromModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds toolscript from a module proxy")
	}
	t.Parallel()
	const modulePath, version = "github.com/toolscript/toolscript", "v1.9.9"
	tmp := t.TempDir()
	proxy := filepath.Join(tmp, "proxy")
	versions := filepath.Join(proxy, modulePath, "@v")
	if err := os.MkdirAll(versions, 0o755); err != nil {
		t.Fatal(err)
	}

	// The module zip: the files git knows of (tracked or not ignored), as
	// they are in the working tree.
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	list, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Skipf("git ls-files: %v", err)
	}
	var files []modzip.File
	seen := map[string]bool{} // a file in the middle of a merge is listed once per stage
	for name := range strings.SplitSeq(strings.TrimRight(string(list), "\x00"), "\x00") {
		if seen[name] {
			continue
		}
		seen[name] = true
		if _, err := os.Lstat(filepath.Join(root, name)); err == nil {
			files = append(files, zipFile{root: root, name: name})
		}
	}
	zf, err := os.Create(filepath.Join(versions, version+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	if err := modzip.Create(zf, module.Version{Path: modulePath, Version: version}, files); err != nil {
		t.Fatalf("creating the module zip: %v", err)
	}
	if err := zf.Close(); err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	info := fmt.Sprintf(`{"Version":%q,"Time":%q}`, version, time.Now().UTC().Format(time.RFC3339))
	testfile.Tree(t, versions, map[string]string{"list": version + "\n", version + ".info": info, version + ".mod": string(gomod)})

	gobin := filepath.Join(tmp, "bin")
	// -trimpath keys the compiled dependencies by module and version
	// rather than by the directory of this test's private module cache:
	// without it every dependency would compile again on every run. With
	// CGO_ENABLED=0 too, the build has the configuration of the
	// Dockerfile's, which tests/deploy runs, so that whichever of the two
	// builds second finds the dependencies compiled in the build cache.
	install := exec.Command("go", "install", "-trimpath", modulePath+"/cmd/toolscript@"+version)
	install.Dir = tmp
	install.Env = append(os.Environ(),
		"GOPROXY=file://"+filepath.ToSlash(proxy)+",file://"+filepath.ToSlash(filepath.Join(sharedModCache(t), "cache", "download")),
		"GOMODCACHE="+privateModCache(t, root, filepath.Join(tmp, "modcache")), "GOFLAGS=-modcacherw",
		"GOSUMDB=off", "GOWORK=off", "GOTOOLCHAIN=local", "GOBIN="+gobin, "CGO_ENABLED=0")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("go install: %v\n%s", err, out)
	}
	installed := filepath.Join(gobin, "toolscript")

	out, err := exec.Command(installed, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(string(out), "\n"); first != "toolscript "+version {
		t.Errorf("toolscript version says %q, want %q", first, "toolscript "+version)
	}

	serve := exec.Command(installed, "serve", "--no-io")
	serve.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n")
	answer, err := serve.Output()
	if err != nil {
		t.Fatal(err)
	}
	var init struct {
		Result struct {
			ServerInfo struct {
				Version string `json:"version"`
			} `json:"serverInfo"`
		} `json:"result"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(answer), &init); err != nil || init.Result.ServerInfo.Version != version {
		t.Errorf("serverInfo.version from %s: %v, want %s", answer, err, version)
	}
}

// zipFile is a file of the working tree for the module zip.
type zipFile struct{ root, name string }

func (f zipFile) Path() string                 { return filepath.ToSlash(f.name) }
func (f zipFile) Lstat() (os.FileInfo, error)  { return os.Lstat(filepath.Join(f.root, f.name)) }
func (f zipFile) Open() (io.ReadCloser, error) { return os.Open(filepath.Join(f.root, f.name)) }

func sharedModCache(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// privateModCache makes a module cache of its own at dir, so that this
// tree's zip is never cached with the user's modules (nor a stale one
// used), that links to the dependencies already in the shared cache: the
// go command neither extracts nor, with -trimpath, compiles them again.
func privateModCache(t *testing.T, root, dir string) string {
	t.Helper()
	shared := sharedModCache(t)
	list := exec.Command("go", "list", "-m", "-f", "{{if not .Main}}{{.Dir}}{{end}}", "all")
	list.Dir = root
	out, err := list.Output()
	if err != nil {
		t.Fatalf("go list -m all: %v", err)
	}
	for _, modDir := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(shared, modDir)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue // a replaced module outside the cache
		}
		link := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(modDir, link); err != nil {
			t.Fatal(err)
		}
		// The go command treats an extracted module without its .ziphash
		// as partly extracted.
		path, version, _ := strings.Cut(rel, "@")
		hash := filepath.Join("cache", "download", path, "@v", version+".ziphash")
		if b, err := os.ReadFile(filepath.Join(shared, hash)); err == nil {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, hash)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, hash), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}
