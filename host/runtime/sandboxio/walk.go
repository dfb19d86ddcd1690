package sandboxio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"syscall"
)

// Stat, Glob and Grep: what a script learns about the io directory beyond
// one directory's names. They read only, through os.Root and the overlay
// of a dry run like every other call. A walk (Glob, Grep) never follows a
// symbolic link: a link is listed as itself, and a directory swapped for
// a link while the walk is under way is reached through os.Root, which
// refuses a path that leaves the io directory. Every walk is bounded:
// the entries it reads, the directories it visits, the execution's time.

// The bounds of one Glob or Grep call. Past one, the call fails with kind
// limit (KindLimit) and a message that names the bound.
const (
	// MaxWalkEntries bounds the directory entries one call reads.
	MaxWalkEntries = 50000
	// MaxWalkDirs bounds the directories one call visits.
	MaxWalkDirs = 5000
	// MaxGlobMatches bounds the paths one Glob returns, and MaxGlobBytes
	// their bytes (what the host holds and copies into the script).
	MaxGlobMatches = 10000
	MaxGlobBytes   = 8 << 20
	// MaxPatternBytes bounds a regular expression; a glob pattern is a
	// path, bounded by MaxPathBytes.
	MaxPatternBytes = 16 << 10
)

// walkBatch is how many entries a walk reads from a directory at a time:
// a directory of a million entries is read no further than the bound.
const walkBatch = 256

// The kinds of entry Stat reports.
const (
	EntryFile      = "file"
	EntryDirectory = "directory"
	EntryLink      = "link"
	EntryOther     = "other" // a FIFO, a socket or a device
)

// Info is what Stat says of an entry.
type Info struct {
	Kind string
	// Size is a file's size in bytes (a link's: the length of its target;
	// a directory's as the file system gives it).
	Size int64
	// Modified is the time of the last change of the content, in Unix
	// seconds (0 for a directory the dry run's overlay made).
	Modified int64
}

// entryKind names the kind of mode.
func entryKind(mode fs.FileMode) string {
	switch {
	case mode.IsRegular():
		return EntryFile
	case mode.IsDir():
		return EntryDirectory
	case mode&fs.ModeSymlink != 0:
		return EntryLink
	}
	return EntryOther
}

// Stat describes the entry at p without following a final symbolic link:
// a link is described as a link, whatever it points to. A path that does
// not exist is an error that matches fs.ErrNotExist.
func (s *FS) Stat(p string) (Info, error) {
	const op = "io.stat"
	name, err := Clean(p)
	if err != nil {
		return Info{}, refuse(op, p, err)
	}
	if err := s.openView(op, p); err != nil {
		if name == "." && errors.Is(err, fs.ErrNotExist) {
			return Info{Kind: EntryDirectory}, nil // the directory is created on first write
		}
		return Info{}, err
	}
	if s.root == nil && s.ov == nil {
		if name == "." {
			return Info{Kind: EntryDirectory}, nil
		}
		return Info{}, ioError(op, p, notCreated{})
	}
	// Links among the directories are followed as a change follows them
	// (realName), so that a dry run shows what it staged there.
	if name, err = s.resolve(op, p, name, false); err != nil {
		return Info{}, err
	}
	info, err := s.lstat(name)
	if err != nil {
		return Info{}, ioError(op, p, withoutPath(err))
	}
	if strings.HasSuffix(p, "/") && !info.IsDir() {
		return Info{}, refuse(op, p, errors.New("not a directory"))
	}
	out := Info{Kind: entryKind(info.Mode()), Size: info.Size()}
	if t := info.ModTime(); !t.IsZero() {
		out.Modified = t.Unix()
	}
	return out, nil
}

// openView opens the real directory for reading, never creating it; with
// no overlay, a directory that does not exist yet is an error matching
// fs.ErrNotExist.
func (s *FS) openView(op, p string) error {
	if s.ov != nil {
		return s.openRootStaged(op, p)
	}
	if err := s.openRoot(false); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return ioError(op, p, err)
		}
		return refuse(op, p, err)
	}
	return nil
}

// walker is one Glob's or Grep's walk and its bounds.
type walker struct {
	s       *FS
	ctx     context.Context
	op      string
	entries int
	dirs    int
	// paths counts the bytes of the paths a Glob returns.
	paths int
}

func (w *walker) limit(what string, bound int) error {
	return &Error{Kind: KindLimit, Op: w.op, Reason: fmt.Sprintf(
		"the %s stopped at its bound of %d %s (name a smaller directory or a narrower pattern)", w.doing(), bound, what)}
}

// doing names what the walker does, for its messages.
func (w *walker) doing() string {
	if w.op == "io.list" {
		return "listing"
	}
	return "walk"
}

// alive fails once the execution's time has run out or it was cancelled.
func (w *walker) alive() error {
	if err := w.ctx.Err(); err != nil {
		return &Error{Kind: KindLimit, Op: w.op, Reason: "the execution's time ran out during the " + w.doing(), Err: err}
	}
	return nil
}

// deeper reports whether a walk goes into the directory dir: not past
// MaxPathDepth, where no path the script names could reach.
func deeper(dir string) bool { return strings.Count(dir, "/")+1 < MaxPathDepth }

// dirEntry is one entry of a directory a walk read: its name and type
// (the entry's own, a link not followed).
type dirEntry struct {
	name string
	mode fs.FileMode
}

// readDir returns the entries of directory dir (a script path), sorted by
// name, the overlay of a dry run merged in. It counts them against the
// walk's bounds as it reads them.
func (w *walker) readDir(dir string) ([]dirEntry, error) {
	s := w.s
	if w.dirs++; w.dirs > MaxWalkDirs {
		return nil, w.limit("directories", MaxWalkDirs)
	}
	if err := w.alive(); err != nil {
		return nil, err
	}
	if s.beforeReadDir != nil {
		s.beforeReadDir(dir)
	}
	var out []dirEntry
	if s.root != nil && !(s.ov != nil && s.ov.dirs[dir]) {
		var err error
		if out, err = w.readRealDir(dir); err != nil {
			return nil, err
		}
	}
	if s.ov != nil {
		out = w.mergeOverlay(dir, out)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

// readRealDir reads the real directory dir in batches. A directory that
// has gone, or that a swap made a link leading out of the io directory,
// has no entries.
func (w *walker) readRealDir(dir string) ([]dirEntry, error) {
	f, err := w.s.root.OpenFile(dir, os.O_RDONLY|dirFlags, 0)
	if err != nil {
		if gone(err) {
			return nil, nil
		}
		return nil, ioError(w.op, dir, err)
	}
	defer f.Close()
	return w.readOpened(f, dir)
}

// readOpened reads the open directory dir in batches, counting its
// entries against the walk's bound and checking the execution's time
// between batches.
func (w *walker) readOpened(f *os.File, dir string) ([]dirEntry, error) {
	var out []dirEntry
	for {
		batch, err := f.ReadDir(walkBatch)
		w.entries += len(batch)
		w.s.walkRead += len(batch)
		if w.entries > MaxWalkEntries {
			return nil, w.limit("directory entries", MaxWalkEntries)
		}
		for _, e := range batch {
			out = append(out, dirEntry{name: e.Name(), mode: e.Type()})
		}
		if errors.Is(err, io.EOF) || (err == nil && len(batch) == 0) {
			return out, nil
		}
		if err != nil {
			return nil, ioError(w.op, dir, withoutPath(err))
		}
		if err := w.alive(); err != nil {
			return nil, err
		}
	}
}

// gone reports whether err says that a path no longer exists or leads
// out of the io directory: a walk passes such an entry by.
func gone(err error) bool {
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	reason := withoutPath(err).Error()
	return strings.Contains(reason, "escapes") || errors.Is(err, syscall.ENOTDIR)
}

// mergeOverlay merges the dry run's overlay into the real entries of dir.
func (w *walker) mergeOverlay(dir string, real []dirEntry) []dirEntry {
	ov := w.s.ov
	child := func(n string) string {
		if dir == "." {
			return n
		}
		return dir + "/" + n
	}
	seen := map[string]bool{}
	out := real[:0]
	for _, e := range real {
		c := child(e.name)
		if ov.removed[c] {
			continue
		}
		if _, staged := ov.files[c]; staged {
			e.mode = 0 // a staged file is a regular file, whatever was there
		}
		seen[e.name] = true
		out = append(out, e)
	}
	add := func(c string, mode fs.FileMode) {
		if path.Dir(c) == dir && !seen[path.Base(c)] {
			seen[path.Base(c)] = true
			out = append(out, dirEntry{name: path.Base(c), mode: mode})
		}
	}
	for c := range ov.files {
		add(c, 0)
	}
	for c := range ov.dirs {
		add(c, fs.ModeDir)
	}
	return out
}

// globPattern is a parsed glob: its components, each "**" or a pattern
// of path.Match.
type globPattern struct {
	parts []string
}

// parseGlob validates and parses a glob pattern as the script wrote it.
func parseGlob(op, pattern string) (globPattern, error) {
	if len(pattern) > MaxPathBytes {
		return globPattern{}, LongPattern(op, pattern, len(pattern), MaxPathBytes)
	}
	clean, err := Clean(pattern)
	if err != nil {
		return globPattern{}, invalidPattern(op, pattern, err)
	}
	parts := strings.Split(clean, "/")
	if clean == "." {
		parts = nil
	}
	for _, part := range parts {
		if _, err := path.Match(part, ""); err != nil {
			return globPattern{}, invalidPattern(op, pattern, fmt.Errorf("bad pattern in '%s' (use *, ?, [...] and ** as whole components)", part))
		}
	}
	return globPattern{parts: parts}, nil
}

// LongPattern is the error of a pattern of n bytes, more than its bound,
// that begins with start.
func LongPattern(op, start string, n, bound int) *Error {
	return invalidPattern(op, start, fmt.Errorf("the pattern is too long (%d bytes; at most %d)", n, bound))
}

// invalidPattern is the error of a pattern the script got wrong: it names
// the pattern (its first 200 bytes).
func invalidPattern(op, pattern string, err error) *Error {
	shown := pattern
	if len(shown) > 200 {
		shown = strings.ToValidUTF8(shown[:200], "?") + "..."
	}
	return &Error{Kind: KindIO, Op: op, Reason: fmt.Sprintf("invalid pattern '%s': %v", shown, err), Err: err}
}

// literal reports whether a component has no special characters.
func literal(part string) bool { return !strings.ContainsAny(part, `*?[\`) }

// closure adds to states the states a "**" may skip to (it matches no
// component too), and returns them sorted and unique.
func (g globPattern) closure(states []int) []int {
	seen := map[int]bool{}
	var out []int
	var add func(int)
	add = func(i int) {
		if seen[i] {
			return
		}
		seen[i] = true
		out = append(out, i)
		if i < len(g.parts) && g.parts[i] == "**" {
			add(i + 1)
		}
	}
	for _, i := range states {
		add(i)
	}
	sort.Ints(out)
	return out
}

// advance returns the states after a component named name, and whether
// the path that ends with it matches.
func (g globPattern) advance(states []int, name string) (next []int, matched bool) {
	for _, i := range states {
		switch {
		case i == len(g.parts):
		case g.parts[i] == "**":
			next = append(next, i)
		default:
			if ok, _ := path.Match(g.parts[i], name); ok {
				next = append(next, i+1)
			}
		}
	}
	next = g.closure(next)
	for _, i := range next {
		if i == len(g.parts) {
			return next, true
		}
	}
	return next, false
}

// open reports whether a state can still match something deeper.
func (g globPattern) open(states []int) bool {
	for _, i := range states {
		if i < len(g.parts) {
			return true
		}
	}
	return false
}

// Glob returns the paths under the io directory, files and directories,
// that match pattern, sorted: "*" matches any run of characters within a
// name, "?" one character, "[...]" one of a class (path.Match), and "**"
// as a whole component any number of directories, none included. Links
// are matched as themselves and never descended into.
func (s *FS) Glob(ctx context.Context, pattern string) ([]string, error) {
	const op = "io.glob"
	g, err := parseGlob(op, pattern)
	if err != nil {
		return nil, err
	}
	if err := s.openView(op, pattern); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return []string{}, nil
		}
		return nil, err
	}
	w := &walker{s: s, ctx: ctx, op: op}
	// A literal prefix is looked up, not walked.
	start, k := ".", 0
	for k < len(g.parts) && literal(g.parts[k]) {
		start = path.Join(start, g.parts[k])
		k++
	}
	if start != "." {
		info, err := s.lstat(start)
		if err != nil {
			return []string{}, nil
		}
		if k == len(g.parts) {
			return []string{start}, nil
		}
		if !info.IsDir() {
			return []string{}, nil
		}
	}
	out := []string{}
	states := g.closure([]int{k})
	if start != "." && !g.open(states[len(states)-1:]) {
		out = append(out, start) // "sub/**" matches sub too
	}
	if err := w.glob(g, start, states, &out); err != nil {
		return nil, err
	}
	sort.Strings(out)
	return out, nil
}

func (w *walker) glob(g globPattern, dir string, states []int, out *[]string) error {
	entries, err := w.readDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		next, matched := g.advance(states, e.name)
		child := path.Join(dir, e.name)
		if matched {
			if len(*out) >= MaxGlobMatches {
				return w.limit("matches", MaxGlobMatches)
			}
			if w.paths += len(child); w.paths > MaxGlobBytes {
				return w.limit("bytes of paths", MaxGlobBytes)
			}
			*out = append(*out, child)
		}
		if e.mode.IsDir() && g.open(next) && deeper(child) {
			if err := w.glob(g, child, next, out); err != nil {
				return err
			}
		}
	}
	return nil
}

// openRead opens the regular file name for reading, as the overlay of a
// dry run has it, following a link that stays inside; it refuses
// anything else before opening it.
func (s *FS) openRead(name string) (*os.File, error) {
	if s.ov != nil {
		if tmp, ok := s.ov.files[name]; ok {
			return os.Open(tmp)
		}
	}
	info, err := s.stat(name)
	if err != nil {
		return nil, withoutPath(err)
	}
	if why := notRegular(info); why != "" {
		return nil, errors.New(why)
	}
	if s.root == nil {
		return nil, notCreated{}
	}
	f, err := s.root.OpenFile(name, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, err
	}
	if info, err = f.Stat(); err != nil || !info.Mode().IsRegular() {
		f.Close()
		return nil, errors.New("not a regular file")
	}
	return f, nil
}
