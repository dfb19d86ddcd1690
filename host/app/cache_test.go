package app_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/app"
	"github.com/toolscript/toolscript/host/config"
	"github.com/toolscript/toolscript/internal/syncbuf"
	"github.com/toolscript/toolscript/internal/testwait"
)

// whoSpec is an API at server (its only server) that takes a bearer token.
func whoSpec(server string) string {
	return `openapi: 3.0.3
info: {title: acct, version: "1"}
servers: [{url: "` + server + `"}]
components:
  securitySchemes:
    bearer: {type: http, scheme: bearer}
security: [{bearer: []}]
paths:
  /who:
    get:
      operationId: who
      responses:
        "200": {description: ok, content: {application/json: {schema: {type: object}}}}
`
}

// runWho runs a script calling the API with cacheHome as XDG_CACHE_HOME,
// and returns what it wrote on standard error.
func runWho(t *testing.T, dir, cacheHome string) string {
	t.Helper()
	t.Setenv("XDG_CACHE_HOME", cacheHome)
	file, err := config.Load(filepath.Join(dir, "toolscript.toml"))
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncbuf.Buffer
	res, err := app.Run(testwait.Context(t), app.RunConfig{
		File: file, Settings: settings(t, file, config.Run), SDK: app.SDKOptions{Stderr: &stderr},
		Source: []byte(`return sdk.acct.who().ok`),
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Error != nil || string(res.Value) != "true" {
		t.Fatalf("result %s, error %+v (stderr %q)", res.Value, res.Error, stderr.String())
	}
	return stderr.String()
}

// forgeEntries rewrites every spec-cache entry under cacheHome to name
// evil where it names good (the same length), as another user who can
// write the cache would.
func forgeEntries(t *testing.T, cacheHome, good, evil string) {
	t.Helper()
	if len(good) != len(evil) {
		t.Fatalf("the origins %s and %s differ in length", good, evil)
	}
	forged := 0
	filepath.WalkDir(filepath.Join(cacheHome, "toolscript", "sdk"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || !strings.HasSuffix(path, ".gob") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil || !bytes.Contains(data, []byte(good)) {
			return err
		}
		forged++
		return os.WriteFile(path, bytes.ReplaceAll(data, []byte(good), []byte(evil)), 0o600)
	})
	if forged == 0 {
		t.Fatal("no spec-cache entry names the API's origin")
	}
}

// TestSpecCacheIsNoTrustBoundary: a spec-cache entry swapped for one whose
// server is another origin, in the user's own cache or in a cache
// directory another user made, is not used: the call (and its bearer
// token) goes to the spec's server, the other origin receives nothing,
// and the run warns once per cache.
func TestSpecCacheIsNoTrustBoundary(t *testing.T) {
	for _, tc := range []struct {
		name string
		root bool
		// prepare turns a cache holding a forged entry into the one the
		// run uses.
		prepare func(t *testing.T, forged string) string
		want    []string // one warning line each
	}{
		{name: "forged entry in the user's cache", want: []string{"the spec cache entry", "HMAC does not match"},
			prepare: func(t *testing.T, forged string) string { return forged }},
		{name: "cache directory of another user", root: true, want: []string{"the spec cache", "belongs to another user", "the compiled-module cache"},
			prepare: func(t *testing.T, forged string) string {
				home := t.TempDir()
				if err := os.CopyFS(filepath.Join(home, "toolscript"), os.DirFS(filepath.Join(forged, "toolscript"))); err != nil {
					t.Fatal(err)
				}
				filepath.WalkDir(filepath.Join(home, "toolscript"), func(p string, _ fs.DirEntry, err error) error {
					if err == nil {
						err = os.Lchown(p, 65534, 65534)
					}
					return err
				})
				return home
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.root && os.Getuid() != 0 {
				t.Skip("giving files to another user needs root (CI runs the tests as root)")
			}
			good, evil := newRecordingAPI(t), newRecordingAPI(t)
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "acct.yaml"), []byte(whoSpec(good.URL)), 0o600)
			os.WriteFile(filepath.Join(dir, "toolscript.toml"), []byte("[apis.acct]\nspec = \"acct.yaml\"\nauth = \"tok-SECRET-123\"\n"), 0o600)

			forged := t.TempDir()
			if stderr := runWho(t, dir, forged); stderr != "" {
				t.Fatalf("a first run warned: %q", stderr)
			}
			forgeEntries(t, forged, strings.TrimPrefix(good.URL, "http://"), strings.TrimPrefix(evil.URL, "http://"))
			home := tc.prepare(t, forged)
			stderr := runWho(t, dir, home)

			if n := len(evil.received()); n != 0 {
				t.Fatalf("the other origin received %d requests (Authorization %q)", n, evil.received()[0].Header.Get("Authorization"))
			}
			if n := len(good.received()); n != 2 {
				t.Errorf("the API received %d requests, want 2", n)
			}
			for _, want := range tc.want {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr %q lacks %q", stderr, want)
				}
			}
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			caches := map[string]int{}
			for _, line := range lines {
				if !strings.HasPrefix(line, "toolscript: warning: ") || !strings.HasSuffix(line, "running without it") {
					t.Errorf("stderr line %q, want a cache warning", line)
				}
				caches[strconv.FormatBool(strings.Contains(line, "compiled-module"))]++
			}
			for kind, n := range caches {
				if n != 1 {
					t.Errorf("%d warnings about one cache (compiled-module: %s), want 1: %q", n, kind, stderr)
				}
			}
		})
	}
}
