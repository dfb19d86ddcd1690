package openapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/toolscript/toolscript/host/catalog"
)

// Cache keeps converted specs on disk: one file per spec, named by the
// sha256 of the spec's bytes, the catalog format and the program's version,
// so that a changed spec or a new toolscript never reads an old entry.
// Specs with references outside their document are not cached (what they
// refer to could change under the same hash). A nil *Cache caches nothing.
type Cache struct {
	dir     string
	version string
}

// cacheMaxAge is how long an entry nobody used is kept.
const cacheMaxAge = 30 * 24 * time.Hour

// NewCache returns a cache in dir (created on first write). version
// identifies the program; for a development build ("dev" or empty) the
// executable's size and modification time are added, so a rebuilt binary
// never reads what another build wrote.
func NewCache(dir, version string) *Cache {
	if version == "" || version == "dev" {
		version = "dev"
		if exe, err := os.Executable(); err == nil {
			if st, err := os.Stat(exe); err == nil {
				version += "-" + strconv.FormatInt(st.Size(), 36) + "-" + strconv.FormatInt(st.ModTime().UnixNano(), 36)
			}
		}
	}
	return &Cache{dir: dir, version: version}
}

// DefaultCacheDir is toolscript's directory in the user cache directory.
func DefaultCacheDir() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "toolscript", "sdk"), nil
}

func (c *Cache) path(spec []byte) string {
	h := sha256.New()
	h.Write(spec)
	fmt.Fprintf(h, "\x00catalog %d\x00toolscript %s", catalog.Version, c.version)
	return filepath.Join(c.dir, hex.EncodeToString(h.Sum(nil))+".gob")
}

// get returns the cached API of a spec, or nil.
func (c *Cache) get(spec []byte) *catalog.API {
	if c == nil {
		return nil
	}
	path := c.path(spec)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	api, err := decode(data)
	if err != nil {
		return nil // unreadable entries are rebuilt and overwritten
	}
	// An entry in use is kept: prune goes by modification time.
	if info, err := os.Stat(path); err == nil && time.Since(info.ModTime()) > 24*time.Hour {
		now := time.Now()
		os.Chtimes(path, now, now)
	}
	return api
}

// encode serialises an API (gob: several times faster to read than JSON).
func encode(api *catalog.API) ([]byte, error) {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(api); err != nil {
		return nil, fmt.Errorf("serialising the catalog: %w", err)
	}
	return buf.Bytes(), nil
}

func decode(data []byte) (*catalog.API, error) {
	var api catalog.API
	if err := gob.NewDecoder(bytes.NewReader(data)).Decode(&api); err != nil {
		return nil, err
	}
	return &api, nil
}

// put stores an encoded API; failures only cost the next start its speed.
func (c *Cache) put(spec, encoded []byte) {
	if c == nil {
		return
	}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return
	}
	tmp, err := os.CreateTemp(c.dir, ".tmp-*")
	if err != nil {
		return
	}
	_, err = tmp.Write(encoded)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp.Name())
		return
	}
	if err := os.Rename(tmp.Name(), c.path(spec)); err != nil {
		os.Remove(tmp.Name())
		return
	}
	c.prune()
}

// prune removes entries not written for cacheMaxAge, and stale temporary
// files.
func (c *Cache) prune() {
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		return
	}
	cutoff := time.Now().Add(-cacheMaxAge)
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.ModTime().Before(cutoff) {
			os.Remove(filepath.Join(c.dir, e.Name()))
		}
	}
}
