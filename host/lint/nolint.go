package lint

import (
	"bytes"
	"slices"
	"strings"

	"github.com/toolscript/toolscript/host/runtime/luau"
)

// The module (luau-build/shim/lint.cpp) applies --!nolint to its own
// rules; the rule type is the type checker's, which the module does not
// know. This file applies --!nolint to it on the host, as the module does
// to its rules: a --!nolint before any code disables the rules it names
// (or every rule, when it names none) for the whole file; one after code,
// for its own line.

// nolintTypeMessage is the module's invalid_nolint message for
// `--!nolint type` (a rule it does not know, and a valid name here).
const nolintTypeMessage = "--!nolint names an unknown rule 'type'"

// withoutNolintType drops the module's invalid_nolint diagnostics that
// name exactly the rule type.
func withoutNolintType(diags []luau.LintDiagnostic) []luau.LintDiagnostic {
	kept := diags[:0]
	for _, d := range diags {
		if d.Rule == RuleInvalidNolint && d.Message == nolintTypeMessage {
			continue
		}
		kept = append(kept, d)
	}
	return kept
}

// typeNolint is where a source's --!nolint comments disable the rule
// type: the whole file, or some lines.
type typeNolint struct {
	file  bool
	lines map[int]bool
}

// disables reports whether line's diagnostics of the rule type are
// disabled.
func (n typeNolint) disables(line int) bool { return n.file || n.lines[line] }

// nolintOfType reads src's --!nolint comments (Luau's hot comments:
// line comments starting with --!, outside strings) for the rule type.
func nolintOfType(src []byte) typeNolint {
	n := typeNolint{lines: map[int]bool{}}
	for _, hc := range hotComments(src) {
		names, ok := nolintNames(hc.text)
		if !ok || len(names) > 0 && !slices.Contains(names, RuleType) {
			continue
		}
		if hc.header {
			n.file = true
		} else {
			n.lines[hc.line] = true
		}
	}
	return n
}

// nolintNames parses a hot comment's text (after --!) as the module does:
// "nolint", then rule names separated by spaces, tabs or commas. ok is
// false for another hot comment.
func nolintNames(text string) (names []string, ok bool) {
	rest, found := strings.CutPrefix(text, "nolint")
	if !found || rest != "" && rest[0] != ' ' && rest[0] != '\t' {
		return nil, false
	}
	return strings.FieldsFunc(rest, func(r rune) bool { return r == ' ' || r == '\t' || r == ',' }), true
}

// hotComment is one --! comment: its text after --!, its line (from 1),
// and whether it comes before any code (Luau's header hot comments).
type hotComment struct {
	text   string
	line   int
	header bool
}

// hotComments finds src's hot comments as Luau's lexer does: line
// comments whose text starts with "!", skipping strings (quoted,
// interpolated, long) and block comments. src parses (the module said so):
// a malformed one only makes this find less, never panic.
func hotComments(src []byte) []hotComment {
	s := hotScanner{src: src, line: 1}
	s.code(false)
	return s.found
}

// hotScanner walks a Luau source for hotComments.
type hotScanner struct {
	src     []byte
	i       int
	line    int
	sawCode bool // a token other than a comment was seen
	found   []hotComment
}

// code scans code until the end, or, in an interpolated string's
// expression (inInterp), until the } that closes it.
func (s *hotScanner) code(inInterp bool) {
	depth := 0
	for s.i < len(s.src) {
		c := s.src[s.i]
		switch {
		case c == '\n':
			s.line++
			s.i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			s.i++
		case c == '-' && s.at(1) == '-':
			s.comment()
		case c == '[' && s.longOpen(s.i) >= 0:
			s.sawCode = true
			s.long(s.longOpen(s.i))
		case c == '"' || c == '\'':
			s.sawCode = true
			s.quoted(c)
		case c == '`':
			s.sawCode = true
			s.interpolated()
		case c == '{':
			s.sawCode = true
			depth++
			s.i++
		case c == '}':
			s.sawCode = true
			s.i++
			if depth == 0 && inInterp {
				return
			}
			depth--
		default:
			s.sawCode = true
			s.i++
		}
	}
}

// at is the byte off bytes after the current one, 0 past the end.
func (s *hotScanner) at(off int) byte {
	if s.i+off < len(s.src) {
		return s.src[s.i+off]
	}
	return 0
}

// longOpen is the level of a long bracket opening at i ([[, [=[, ...),
// -1 when there is none.
func (s *hotScanner) longOpen(i int) int {
	j := i + 1
	for j < len(s.src) && s.src[j] == '=' {
		j++
	}
	if j < len(s.src) && s.src[i] == '[' && s.src[j] == '[' {
		return j - i - 1
	}
	return -1
}

// long skips a long string or comment of the given level from its
// opening bracket through its closing one.
func (s *hotScanner) long(level int) {
	s.i += level + 2
	closing := []byte("]" + strings.Repeat("=", level) + "]")
	for s.i < len(s.src) {
		if s.src[s.i] == '\n' {
			s.line++
		}
		if bytes.HasPrefix(s.src[s.i:], closing) {
			s.i += len(closing)
			return
		}
		s.i++
	}
}

// comment skips a comment from its --, noting a hot one.
func (s *hotScanner) comment() {
	s.i += 2
	if level := s.longOpen(s.i); s.i < len(s.src) && s.src[s.i] == '[' && level >= 0 {
		s.long(level)
		return
	}
	start := s.i
	for s.i < len(s.src) && s.src[s.i] != '\n' {
		s.i++
	}
	if text := string(s.src[start:s.i]); strings.HasPrefix(text, "!") {
		s.found = append(s.found, hotComment{text: strings.TrimRight(text[1:], " \t\r\f\v"), line: s.line, header: !s.sawCode})
	}
}

// quoted skips a '...' or "..." string, its escapes included.
func (s *hotScanner) quoted(q byte) {
	s.i++
	for s.i < len(s.src) {
		c := s.src[s.i]
		switch {
		case c == '\\':
			if s.at(1) == '\n' {
				s.line++
			}
			s.i += 2
			continue
		case c == q:
			s.i++
			return
		case c == '\n':
			return // unfinished: the parser would have said so
		}
		s.i++
	}
}

// interpolated skips a `...` string, its {expressions} included.
func (s *hotScanner) interpolated() {
	s.i++
	for s.i < len(s.src) {
		c := s.src[s.i]
		switch c {
		case '\\':
			if s.at(1) == '\n' {
				s.line++
			}
			s.i += 2
			continue
		case '`':
			s.i++
			return
		case '\n':
			s.line++
		case '{':
			s.i++
			s.code(true)
			continue
		}
		s.i++
	}
}

// withoutNolinted drops the type diagnostics n disables.
func withoutNolinted(typed []Diagnostic, n typeNolint) []Diagnostic {
	kept := typed[:0]
	for _, d := range typed {
		if !n.disables(d.Line) {
			kept = append(kept, d)
		}
	}
	return kept
}
