package sandboxio

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"time"
)

// ResultsDir is the directory of the io directory that results too large
// to answer inline are written to, for the scripts that come after to read.
const ResultsDir = "toolscript-results"

// ResultBounds bound the results KeepResult keeps in one io directory.
type ResultBounds struct {
	// Files and Bytes bound how many results are kept and their bytes:
	// the oldest are removed to make room.
	Files int
	Bytes int64
	// For is how long a result is kept: an older one is removed at the
	// next write.
	For time.Duration
}

// resultsScan bounds the entries of ResultsDir read to find the results
// written before: a script can fill the directory with files of its own.
// Past it no result is written there.
const resultsScan = 4096

// KeepResult writes text into dir's ResultsDir as a new file named by 128
// random bits, and returns its path relative to dir. The results written
// before that are older than b.For, or beyond b.Files or b.Bytes with this
// one, are removed: only files named as KeepResult names them, so that a
// script's own files there are left alone. Everything happens through
// dir's os.Root: a link planted in the directory leads nowhere outside it.
// The file appears whole (written under a temporary name, then renamed).
func KeepResult(dir string, text []byte, b ResultBounds, now time.Time) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", dirError(dir, true, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", dirError(dir, false, err)
	}
	defer root.Close()
	if err := root.MkdirAll(ResultsDir, 0o755); err != nil {
		return "", fmt.Errorf("%s: %w", ResultsDir, withoutPath(err))
	}
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	name := path.Join(ResultsDir, hex.EncodeToString(id)+".json")
	if err := pruneResults(root, int64(len(text)), b, now); err != nil {
		return "", err
	}
	tmp := name + ".tmp"
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, withoutPath(err))
	}
	_, err = f.Write(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, name)
	}
	if err != nil {
		_ = root.Remove(tmp)
		return "", fmt.Errorf("%s: %w", name, withoutPath(err))
	}
	return name, nil
}

// pruneResults removes the results of root's ResultsDir that b no longer
// allows once a result of size bytes is added.
func pruneResults(root *os.Root, size int64, b ResultBounds, now time.Time) error {
	d, err := root.Open(ResultsDir)
	if err != nil {
		return fmt.Errorf("%s: %w", ResultsDir, withoutPath(err))
	}
	entries, err := d.ReadDir(resultsScan + 1)
	d.Close()
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: %w", ResultsDir, withoutPath(err))
	}
	if len(entries) > resultsScan {
		// Results beyond the entries read could not be counted, nor
		// removed: the bounds would not hold.
		return fmt.Errorf("%s has more than %d entries, so its results cannot be kept within their bounds: remove files of your own from it", ResultsDir, resultsScan)
	}
	type kept struct {
		name     string
		size     int64
		modified time.Time
	}
	var results []kept
	for _, e := range entries {
		if !e.Type().IsRegular() || !isResultName(e.Name()) {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // gone meanwhile
		}
		results = append(results, kept{e.Name(), info.Size(), info.ModTime()})
	}
	// Newest first: the newest are kept.
	slices.SortFunc(results, func(a, b kept) int { return b.modified.Compare(a.modified) })
	files, bytes := 1, size
	for _, r := range results {
		files++
		bytes += r.size
		if files > b.Files || bytes > b.Bytes || now.Sub(r.modified) > b.For {
			if err := root.Remove(path.Join(ResultsDir, r.name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("%s: %w", path.Join(ResultsDir, r.name), withoutPath(err))
			}
		}
	}
	return nil
}

// isResultName reports whether name is one KeepResult gives: 32 lower-case
// hexadecimal digits and ".json" (or ".json.tmp", one being written, or
// left by a process that stopped while it wrote).
func isResultName(name string) bool {
	id, ok := strings.CutSuffix(strings.TrimSuffix(name, ".tmp"), ".json")
	if !ok || len(id) != 32 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil && strings.ToLower(id) == id
}
