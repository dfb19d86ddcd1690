package openapi

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/toolscript/toolscript/host/platform/cachedir"
)

// TestCacheTrustsOnlyItsOwnEntries: an entry the cache did not write (no
// or a wrong HMAC), an entry moved to another spec's name, an entry that
// is a symbolic link, and a directory or key another user owns or may
// write are not used: the spec is parsed, the run warns once, and what
// the cache's own directory held is replaced by a good entry.
func TestCacheTrustsOnlyItsOwnEntries(t *testing.T) {
	data, err := os.ReadFile("testdata/petstore.yaml")
	if err != nil {
		t.Fatal(err)
	}
	other := []byte(strings.Replace(string(data), "title: Petstore", "title: Other", 1))
	for _, tc := range []struct {
		name   string
		root   bool
		attack func(t *testing.T, c *Cache)
		want   string
		// reused says the cache is used again once the spec is parsed.
		reused bool
	}{
		{name: "an entry without an HMAC", want: "not a cache entry of this format", reused: true, attack: func(t *testing.T, c *Cache) {
			encoded, _ := encode(c.get(data))
			os.WriteFile(c.path(data), encoded, 0o600)
		}},
		{name: "an entry under another key", want: "HMAC does not match", reused: true, attack: func(t *testing.T, c *Cache) {
			forger := &Cache{dir: c.dir, version: c.version, key: make([]byte, 32)}
			encoded, _ := encode(c.get(data))
			os.WriteFile(c.path(data), forger.seal(data, encoded), 0o600)
		}},
		{name: "another spec's entry under this name", want: "the entry of another spec", reused: true, attack: func(t *testing.T, c *Cache) {
			encoded, _ := encode(c.get(data))
			os.WriteFile(c.path(data), c.seal(other, encoded), 0o600)
		}},
		{name: "an entry that is a symbolic link", want: "symbolic link", reused: true, attack: func(t *testing.T, c *Cache) {
			target := filepath.Join(t.TempDir(), "entry")
			os.Rename(c.path(data), target)
			os.Symlink(target, c.path(data))
		}},
		{name: "a group-writable directory", want: "may be written by other users", attack: func(t *testing.T, c *Cache) {
			os.Chmod(c.dir, 0o770)
		}},
		{name: "a directory of another user", root: true, want: "belongs to another user", attack: func(t *testing.T, c *Cache) {
			os.Chown(c.dir, 65534, 65534)
		}},
		{name: "a key of another user", root: true, want: "belongs to another user", attack: func(t *testing.T, c *Cache) {
			os.Chown(filepath.Join(c.dir, keyFile), 65534, 65534)
		}},
		{name: "a short key", want: "HMAC does not match", reused: true, attack: func(t *testing.T, c *Cache) {
			os.WriteFile(filepath.Join(c.dir, keyFile), []byte("abc"), 0o600)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.root && os.Getuid() != 0 {
				t.Skip("giving files to another user needs root (CI runs the tests as root)")
			}
			dir, specDir := t.TempDir(), t.TempDir()
			os.WriteFile(filepath.Join(specDir, "p.yaml"), data, 0o600)
			src := Source{Name: "p", Spec: "p.yaml", Dir: specDir}
			var mu sync.Mutex
			var warned []string
			load := func() (title string, parsed bool) {
				t.Helper()
				w := cachedir.NewWarning(func(msg string) { mu.Lock(); warned = append(warned, msg); mu.Unlock() })
				api, parsed, err := LoadParsed(context.Background(), src, Options{Cache: NewCache(dir, "v1", w)})
				if err != nil {
					t.Fatal(err)
				}
				return api.Title, parsed
			}
			if _, parsed := load(); !parsed {
				t.Fatal("the first load read a cache")
			}
			if _, parsed := load(); parsed || len(warned) != 0 {
				t.Fatalf("the second load parsed %v, warned %q: want the cache", parsed, warned)
			}
			tc.attack(t, NewCache(dir, "v1", nil))
			if title, parsed := load(); !parsed || title != "Petstore" {
				t.Errorf("after the attack: parsed %v, title %q; want the spec parsed", parsed, title)
			}
			if len(warned) != 1 || !strings.Contains(warned[0], tc.want) || !strings.Contains(warned[0], "running without it") {
				t.Errorf("warnings %q, want one naming %q", warned, tc.want)
			}
			warned = nil
			if _, parsed := load(); parsed == tc.reused {
				t.Errorf("the next load parsed %v, want the cache used: %v (warnings %q)", parsed, tc.reused, warned)
			}
		})
	}
}

// FuzzCacheEntry: whatever bytes an entry holds, reading it never panics,
// and only what the cache sealed for the spec opens, to what it sealed.
func FuzzCacheEntry(f *testing.F) {
	c := &Cache{dir: "unused", version: "v1", key: []byte("0123456789abcdef0123456789abcdef")}
	spec := []byte("openapi: 3.0.3")
	f.Add(c.seal(spec, []byte("gob")))
	f.Add([]byte(entryMagic))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, entry []byte) {
		data, err := c.open(spec, entry)
		if err != nil {
			return
		}
		if string(c.seal(spec, data)) != string(entry) {
			t.Fatalf("opened an entry the cache did not seal: %q", entry)
		}
	})
}
