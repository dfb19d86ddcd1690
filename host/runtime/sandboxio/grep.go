package sandboxio

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"regexp"
	"regexp/syntax"
	"sort"
	"strings"
)

// The bounds of one Grep call, beside the walk's (walk.go). Past one, the
// call fails with kind limit, except a long line, which is matched and
// reported cut.
const (
	// MaxGrepMatches bounds the lines one Grep returns.
	MaxGrepMatches = 1000
	// MaxGrepBytes bounds the bytes one Grep reads, all files together.
	MaxGrepBytes = 64 << 20
	// MaxGrepLine bounds a line: a longer one is matched on its first
	// MaxGrepLine bytes and reported cut there; the rest is skipped.
	MaxGrepLine = 64 << 10
	// MaxGrepResult bounds the bytes of the matches one Grep returns,
	// their paths and texts together: what the host holds and copies
	// into the script.
	MaxGrepResult = 8 << 20
	// binarySniff is how much of a file's start is looked at for a NUL
	// byte, which marks it binary (as git and grep do): skipped.
	binarySniff = 8 << 10
	// MaxPatternSize bounds the size of a regular expression's program:
	// the steps matching takes for each byte, at most (RE2 matches in
	// time linear in the input, times this).
	MaxPatternSize = 2000
)

// Match is a line Grep found: the file's path (relative to the io
// directory), the line's number (from 1) and its text without its line
// ending.
type Match struct {
	Path string
	Line int
	Text string
}

// Grep returns the lines that match the regular expression pattern (Go's
// RE2 syntax: linear time in the input) in the file p, or in the files
// under the directory p whose path matches filter when one is given (a
// glob; one without "/" is matched against the file's name, one with
// against its path from the io directory). Matches are sorted by path,
// then line. Binary files are skipped, links are not followed in a walk.
func (s *FS) Grep(ctx context.Context, pattern, p, filter string) ([]Match, error) {
	const op = "io.grep"
	if len(pattern) > MaxPatternBytes {
		return nil, LongPattern(op, pattern, len(pattern), MaxPatternBytes)
	}
	re, steps, err := compilePattern(pattern)
	if err != nil {
		return nil, invalidPattern(op, pattern, err)
	}
	var keep func(string) bool
	if filter != "" {
		g, err := parseGlob(op, filter)
		if err != nil {
			return nil, err
		}
		keep = g.matcher(!strings.Contains(filter, "/"))
	}
	name, err := Clean(p)
	if err != nil {
		return nil, refuse(op, p, err)
	}
	if err := s.openView(op, p); err != nil {
		if name == "." && errors.Is(err, fs.ErrNotExist) {
			return []Match{}, nil // the directory is created on first write
		}
		return nil, err
	}
	info, err := s.stat(name)
	if err != nil {
		return nil, ioError(op, p, withoutPath(err))
	}
	g := &grepper{walker: walker{s: s, ctx: ctx, op: op}, re: re, steps: steps, keep: keep, out: []Match{}}
	if info.IsDir() {
		err = g.dir(name)
	} else {
		err = g.file(name, p)
	}
	if err != nil {
		return nil, err
	}
	sort.SliceStable(g.out, func(i, j int) bool { return g.out[i].Path < g.out[j].Path })
	return g.out, nil
}

// compilePattern compiles a regular expression after checking the size
// of its program (MaxPatternSize), which it returns: RE2 matches in time
// linear in the input, times that size, and compiling a large one costs
// the host hundreds of MB. The size is counted on the parsed pattern,
// before anything is compiled.
func compilePattern(pattern string) (*regexp.Regexp, int64, error) {
	parsed, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, 0, unwrapSyntax(err)
	}
	steps := programSize(parsed)
	if steps > MaxPatternSize {
		return nil, 0, fmt.Errorf("the pattern is too large (%d steps for each byte matched; at most %d): use smaller repeat counts", steps, MaxPatternSize)
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, 0, unwrapSyntax(err)
	}
	return re, steps, nil
}

// programSize estimates the instructions of re's compiled program (as
// regexp/syntax.Compile makes it, repeats expanded). The parsed pattern is
// small (16 KiB at most, repeats not expanded); the count saturates at
// 2^40.
func programSize(re *syntax.Regexp) int64 {
	const most = 1 << 40
	sum := func(subs []*syntax.Regexp) int64 {
		var n int64
		for _, sub := range subs {
			n = min(most, n+programSize(sub))
		}
		return n
	}
	switch re.Op {
	case syntax.OpLiteral:
		return int64(len(re.Rune))
	case syntax.OpCapture:
		return 2 + sum(re.Sub)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		return 1 + sum(re.Sub)
	case syntax.OpConcat:
		return sum(re.Sub)
	case syntax.OpAlternate:
		return sum(re.Sub) + int64(len(re.Sub)-1)
	case syntax.OpRepeat:
		sub := sum(re.Sub)
		if re.Max < 0 { // x{n,}: n copies and a star
			return min(most, int64(re.Min+1)*sub+1)
		}
		// x{n,m}: m copies, the last m-n optional.
		return min(most, int64(re.Max)*sub+int64(re.Max-re.Min))
	}
	return 1 // a class, an anchor, an empty match
}

// unwrapSyntax words a regexp error without its "error parsing regexp: "
// prefix, which the message's own wording replaces.
func unwrapSyntax(err error) error {
	return errors.New(strings.TrimPrefix(err.Error(), "error parsing regexp: "))
}

// matcher returns whether a path matches g: its name only when byName.
func (g globPattern) matcher(byName bool) func(string) bool {
	return func(p string) bool {
		if byName {
			p = path.Base(p)
		}
		states := g.closure([]int{0})
		matched := false
		for part := range strings.SplitSeq(p, "/") {
			states, matched = g.advance(states, part)
			if len(states) == 0 {
				return false
			}
		}
		return matched
	}
}

// grepper is one Grep's walk, reads and matches.
type grepper struct {
	walker
	re *regexp.Regexp
	// steps is the size of re's program, the steps matching takes for
	// each byte at most; work counts steps × bytes matched since the
	// deadline was last checked.
	steps, work int64
	keep        func(string) bool
	out         []Match
	size        int // the bytes of out's paths and texts
	read        int64
}

// dir greps the regular files under dir, in name order.
func (g *grepper) dir(dir string) error {
	entries, err := g.readDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		child := path.Join(dir, e.name)
		switch {
		case e.mode.IsDir():
			if !deeper(child) {
				continue
			}
			if err := g.dir(child); err != nil {
				return err
			}
		case e.mode.IsRegular() && (g.keep == nil || g.keep(child)):
			if err := g.file(child, child); err != nil {
				return err
			}
		}
	}
	return nil
}

// file greps one file; p is its path as messages give it.
func (g *grepper) file(name, p string) error {
	f, err := g.s.openRead(name)
	if err != nil {
		if gone(err) && p == name && g.dirs > 0 {
			return nil // gone during the walk
		}
		return ioError(g.op, p, withoutPath(err))
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, MaxGrepLine)
	if head, _ := r.Peek(binarySniff); bytes.IndexByte(head, 0) >= 0 {
		// What was read to find it binary (a buffer's fill) counts.
		return g.count(r.Buffered())
	}
	for line := 1; ; line++ {
		text, err := g.line(r)
		if text == nil && errors.Is(err, io.EOF) {
			return nil
		}
		if err := g.matching(len(text)); err != nil {
			return err
		}
		if g.re.Match(text) {
			if len(g.out) >= MaxGrepMatches {
				return g.limit("matches", MaxGrepMatches)
			}
			if g.size += len(name) + len(text); g.size > MaxGrepResult {
				return g.limit("bytes of matches", MaxGrepResult)
			}
			g.out = append(g.out, Match{Path: name, Line: line, Text: string(text)})
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// line reads the next line without its ending (its first MaxGrepLine
// bytes when longer), counting what it reads against MaxGrepBytes; nil
// and io.EOF at the end.
func (g *grepper) line(r *bufio.Reader) ([]byte, error) {
	text, err := r.ReadSlice('\n')
	if err := g.count(len(text)); err != nil {
		return nil, err
	}
	if errors.Is(err, bufio.ErrBufferFull) {
		text = bytes.Clone(text)
		for errors.Is(err, bufio.ErrBufferFull) { // the rest of a long line
			var more []byte
			more, err = r.ReadSlice('\n')
			if cerr := g.count(len(more)); cerr != nil {
				return nil, cerr
			}
		}
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, ioError(g.op, "", err)
	}
	if len(text) == 0 && errors.Is(err, io.EOF) {
		return nil, io.EOF
	}
	text = bytes.TrimSuffix(text, []byte("\n"))
	text = bytes.TrimSuffix(text, []byte("\r"))
	return text, err
}

// workPerCheck is the matching work (steps × bytes) between two checks
// of the execution's deadline: a fraction of a second.
const workPerCheck = 1 << 24

// matching counts the work of matching a line of n bytes, checking the
// execution's deadline before a match once enough has been done since
// the last check: a pattern of many steps makes even a line work enough.
func (g *grepper) matching(n int) error {
	if g.work += int64(n+1) * g.steps; g.work < workPerCheck {
		return nil
	}
	g.work = 0
	return g.alive()
}

// count adds n bytes read, failing past MaxGrepBytes or when the
// execution's time ran out (checked every MiB).
func (g *grepper) count(n int) error {
	before := g.read
	g.read += int64(n)
	g.s.grepRead += int64(n)
	if g.read > MaxGrepBytes {
		return g.limit("bytes read", MaxGrepBytes)
	}
	if before>>20 != g.read>>20 {
		return g.alive()
	}
	return nil
}
