package lint

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Source is one script to lint.
type Source struct {
	// Name is how diagnostics name the script: its path as given or found,
	// or the standard input's name.
	Name string
	Text []byte
}

// StdinPath is the path argument that means standard input.
const StdinPath = "-"

// DefaultStdinName names standard input in diagnostics.
const DefaultStdinName = "<stdin>"

// ErrNoScripts is returned by Collect when the paths hold no script at all.
var ErrNoScripts = errors.New("no .luau or .lua files found")

// Collect reads the scripts that paths name: a file is read whatever its
// name; a directory is walked for *.luau and *.lua files (skipping
// directories whose names start with a dot), in lexical order; "-" reads
// stdin, named stdinName in diagnostics. A script reached twice is read
// once. The error lists every path that could not be read.
func Collect(paths []string, stdin io.Reader, stdinName string) ([]Source, error) {
	if stdinName == "" {
		stdinName = DefaultStdinName
	}
	var (
		sources []Source
		errs    []error
		seen    = map[string]bool{}
		stdinOK = true
	)
	add := func(path string) {
		key := filepath.Clean(path)
		if seen[key] {
			return
		}
		seen[key] = true
		text, err := os.ReadFile(path)
		if err != nil {
			errs = append(errs, readError(path, err))
			return
		}
		sources = append(sources, Source{Name: path, Text: text})
	}

	for _, path := range paths {
		if path == StdinPath {
			if !stdinOK {
				errs = append(errs, errors.New("standard input (-) is given more than once"))
				continue
			}
			stdinOK = false
			text, err := io.ReadAll(stdin)
			if err != nil {
				errs = append(errs, fmt.Errorf("cannot read standard input: %w", err))
				continue
			}
			sources = append(sources, Source{Name: stdinName, Text: text})
			continue
		}
		info, err := os.Stat(path)
		if err != nil {
			errs = append(errs, readError(path, err))
			continue
		}
		if !info.IsDir() {
			add(path)
			continue
		}
		err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				errs = append(errs, readError(p, err))
				if d != nil && d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if d.IsDir() {
				if p != path && strings.HasPrefix(d.Name(), ".") {
					return fs.SkipDir
				}
				return nil
			}
			if isScript(d.Name()) {
				add(p)
			}
			return nil
		})
		if err != nil {
			errs = append(errs, readError(path, err))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(sources) == 0 {
		return nil, ErrNoScripts
	}
	return sources, nil
}

func isScript(name string) bool {
	ext := strings.ToLower(filepath.Ext(name))
	return ext == ".luau" || ext == ".lua"
}

// readError names the path once: an *fs.PathError already carries it.
func readError(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("cannot read %s: %w", path, pe.Err)
	}
	return fmt.Errorf("cannot read %s: %w", path, err)
}
