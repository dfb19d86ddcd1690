package openapi

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/platform/cachedir"
)

// Cache keeps converted specs on disk: one file per spec, named by the
// sha256 of the spec's bytes, the catalog format and the program's version,
// so that a changed spec or a new toolscript never reads an old entry.
// Specs with references outside their document are not cached (what they
// refer to could change under the same hash). A nil *Cache caches nothing.
//
// An entry is trusted only as far as its directory is (host/platform/cachedir: the
// user's alone), and it is authenticated: it holds the hash that names it
// and an HMAC-SHA256 of its content under a key of the cache's own (.key,
// 0600), so an entry written by anyone without the key, or moved to
// another spec's name, is refused (and rebuilt) rather than sending calls
// and credentials where its servers say.
type Cache struct {
	dir     string
	version string
	warning *cachedir.Warning

	once sync.Once
	key  []byte // nil: the cache cannot be used
}

// cacheMaxAge is how long an entry nobody used is kept.
const cacheMaxAge = 30 * 24 * time.Hour

// entryMagic starts every entry: the format of what follows (the hash that
// names it, the gob, the HMAC).
const entryMagic = "toolscript sdk cache 2\n"

// keyFile holds the cache's HMAC key.
const keyFile = ".key"

// NewCache returns a cache in dir (made 0700 on first use). version
// identifies the program; for a development build ("dev" or empty) the
// executable's size and modification time are added, so a rebuilt binary
// never reads what another build wrote. warning is told, once, that the
// cache cannot be used (nil: nobody).
func NewCache(dir, version string, warning *cachedir.Warning) *Cache {
	if version == "" || version == "dev" {
		version = "dev"
		if exe, err := os.Executable(); err == nil {
			if st, err := os.Stat(exe); err == nil {
				version += "-" + strconv.FormatInt(st.Size(), 36) + "-" + strconv.FormatInt(st.ModTime().UnixNano(), 36)
			}
		}
	}
	return &Cache{dir: dir, version: version, warning: warning}
}

// DefaultCache is the cache in the user cache directory's toolscript/sdk;
// nil, after warning, when that directory cannot be trusted.
func DefaultCache(version string, warning *cachedir.Warning) *Cache {
	dir, err := cachedir.Open("sdk")
	if err != nil {
		if !errors.Is(err, cachedir.ErrNoUserCacheDir) {
			warning.Warn("the spec cache", err)
		}
		return nil
	}
	return NewCache(dir, version, warning)
}

// ready checks the directory and reads (or makes) the key, once; false
// when the cache cannot be used.
func (c *Cache) ready() bool {
	c.once.Do(func() {
		key, err := c.openKey()
		if err != nil {
			c.warning.Warn("the spec cache "+c.dir, err)
			return
		}
		c.key = key
	})
	return c.key != nil
}

// openKey returns the cache's HMAC key, made (32 random bytes, 0600) when
// there is none.
func (c *Cache) openKey() ([]byte, error) {
	if err := os.MkdirAll(c.dir, cachedir.DirMode); err != nil {
		return nil, err
	}
	if err := cachedir.CheckDir(c.dir); err != nil {
		return nil, err
	}
	path := filepath.Join(c.dir, keyFile)
	for range 3 {
		err := cachedir.CheckEntry(path)
		if err == nil {
			key, err := os.ReadFile(path)
			if err == nil && len(key) != sha256.Size { // cut short: a new key, and new entries
				if err := os.Remove(path); err != nil {
					return nil, err
				}
				continue
			}
			return key, err
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		if err := c.makeKey(path); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("the cache key %s could not be made", path)
}

// makeKey writes a new key at path, unless another process made one
// first: it is written whole, then linked into place.
func (c *Cache) makeKey(path string) error {
	key := make([]byte, sha256.Size)
	rand.Read(key)
	tmp, err := os.CreateTemp(c.dir, ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(key)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// name is the hash naming the entry of spec.
func (c *Cache) name(spec []byte) []byte {
	h := sha256.New()
	h.Write(spec)
	fmt.Fprintf(h, "\x00catalog %d\x00toolscript %s", catalog.Version, c.version)
	return h.Sum(nil)
}

func (c *Cache) path(spec []byte) string {
	return filepath.Join(c.dir, hex.EncodeToString(c.name(spec))+".gob")
}

// seal is the entry of spec holding encoded: the magic, the name's hash,
// the gob, and the HMAC of all that.
func (c *Cache) seal(spec, encoded []byte) []byte {
	out := make([]byte, 0, len(entryMagic)+2*sha256.Size+len(encoded))
	out = append(out, entryMagic...)
	out = append(out, c.name(spec)...)
	out = append(out, encoded...)
	mac := hmac.New(sha256.New, c.key)
	mac.Write(out)
	return mac.Sum(out)
}

// open returns the gob of an entry of spec, or an error saying why it is
// not one.
func (c *Cache) open(spec, entry []byte) ([]byte, error) {
	head := len(entryMagic) + sha256.Size
	if len(entry) < head+sha256.Size || string(entry[:len(entryMagic)]) != entryMagic {
		return nil, errors.New("not a cache entry of this format")
	}
	body, sum := entry[:len(entry)-sha256.Size], entry[len(entry)-sha256.Size:]
	mac := hmac.New(sha256.New, c.key)
	mac.Write(body)
	if !hmac.Equal(mac.Sum(nil), sum) {
		return nil, errors.New("its HMAC does not match: it was not written by this cache")
	}
	if !hmac.Equal(body[len(entryMagic):head], c.name(spec)) {
		return nil, errors.New("it is the entry of another spec")
	}
	return body[head:], nil
}

// get returns the cached API of a spec, or nil.
func (c *Cache) get(spec []byte) *catalog.API {
	if c == nil || !c.ready() {
		return nil
	}
	path := c.path(spec)
	if err := cachedir.CheckEntry(path); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			c.warning.Warn("the spec cache entry", err)
			os.Remove(path) // the directory is the user's: put makes it anew
		}
		return nil
	}
	entry, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	data, err := c.open(spec, entry)
	if err != nil {
		c.warning.Warn("the spec cache entry "+path, err)
		return nil // rebuilt and overwritten
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
	if c == nil || !c.ready() {
		return
	}
	tmp, err := os.CreateTemp(c.dir, ".tmp-*")
	if err != nil {
		c.warning.Warn("the spec cache "+c.dir, err)
		return
	}
	_, err = tmp.Write(c.seal(spec, encoded))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp.Name())
		c.warning.Warn("the spec cache "+c.dir, err)
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
		if e.Name() == keyFile {
			continue
		}
		if info, err := e.Info(); err == nil && info.ModTime().Before(cutoff) {
			os.Remove(filepath.Join(c.dir, e.Name()))
		}
	}
}
