package upstream

import "bytes"

// The bounds a scan holds a message to (see scan): deeper than maxDepth,
// or with more than maxBlocks content blocks, a message is refused before
// mcp-go decodes it.
const (
	// maxDepth is encoding/json's own nesting limit: a message nested
	// deeper fails to decode in mcp-go, which then drops it quietly and
	// leaves its call waiting for the timeout.
	maxDepth = 10000
	// maxBlocks bounds the content blocks of one result. mcp-go decodes
	// each block on its own, and every layer above handles it again: a
	// result of a million one-byte text blocks, 27 MB and well under the
	// cap on a message, cost 3.6 s of CPU in this package alone (15 to
	// 22 s through a whole run), past the execution's deadline. Ten
	// thousand blocks cost 45 ms here, and are more than tools send.
	maxBlocks = 10000
)

// overKind says which bound a message passed.
type overKind int

const (
	notOver overKind = iota
	overSize
	overDepth
	overBlocks
	// overRequests: a request of the server past maxServerRequests
	// waiting for their answers (serverRequests).
	overRequests
)

// topKey classifies a key of the message object (depth 1) or of its
// result (depth 2): only these matter to a scan.
type topKey uint8

const (
	keyOther topKey = iota
	keyID
	keyMethod
	keyResult
	keyContent
)

// maxIDBytes bounds the id a scan keeps: mcp-go's request ids are
// integers, so a longer id answers none of its requests.
const maxIDBytes = 64

// scan follows the structure of one JSON-RPC message as its bytes go by,
// in pieces of any size, without holding them: how deep it nests, how
// many content blocks its result has (the objects of result.content), and
// the raw value of its top-level "id" (wherever it is in the message:
// before the result, as the Python SDK writes it, or after it, as the
// TypeScript SDK does) and whether it has a "method" (a request or a
// notification of the server, which answers no call). It does not
// validate: mcp-go's decoder has the last word on a message that stays
// within the bounds; a scan only decides which call a message that passed
// them answers. No JSON library reads a stream pushed to it in pieces
// without holding a string (or any token) whole, which a message of
// gigabytes in one string needs; hence this small state machine.
type scan struct {
	depth int
	// deepest is the depth of the deepest value: how many containers
	// hold it (0 for the message itself), as a script's JSON reader
	// counts levels.
	deepest  int
	blocks   int
	inString bool
	escape   bool
	// obj[d] says whether the container at depth d (1 or 2) is an object;
	// expectKey whether the next string at that depth is a key.
	obj       [3]bool
	expectKey bool
	// key collects the key being read at depth 1 or 2 (up to 16 bytes;
	// keyLen past that, or -1 after an escape, matches nothing).
	inKey  bool
	key    [16]byte
	keyLen int
	key1   topKey // the last key read at depth 1
	key2   topKey // the last key read at depth 2
	// inBlocks: the array at depth 3 is result.content.
	inBlocks bool
	// id collects the value of the "id" key while capturing; idOK says it
	// is complete and fits.
	capturing bool
	id        [maxIDBytes]byte
	idLen     int
	idOK      bool
	hasMethod bool
	// hasID: the message has a top-level "id".
	hasID bool
}

func (s *scan) reset() { *s = scan{} }

// feed scans p, holding the message to maxDepth and maxBlocks when check
// is set: it stops right after the byte that passes one, and says which;
// otherwise it scans all of p. It returns how many bytes it scanned.
func (s *scan) feed(p []byte, check bool) (int, overKind) {
	for i := 0; i < len(p); i++ {
		if s.inString {
			i = s.inStr(p, i)
			continue
		}
		if over := s.structure(p[i], check); over != notOver {
			return i + 1, over
		}
	}
	return len(p), notOver
}

// inStr scans p[i], a byte inside a string, and returns the index of the
// last byte it scanned: the bulk of a string value it need not see is
// skipped.
func (s *scan) inStr(p []byte, i int) int {
	c := p[i]
	if s.escape {
		s.escape = false
		s.collect(c)
		return i
	}
	if s.inKey {
		s.keyByte(c)
		return i
	}
	if !s.capturing {
		// The bulk of a message is string bytes: skip to the next
		// quote, or backslash before it.
		j := bytes.IndexByte(p[i:], '"')
		if j < 0 {
			j = len(p) - i
		}
		if k := bytes.IndexByte(p[i:i+j], '\\'); k >= 0 {
			j = k
		}
		i += j
		if i == len(p) {
			return i
		}
		c = p[i]
	}
	switch c {
	case '\\':
		s.escape = true
	case '"':
		s.inString = false
	}
	s.collect(c)
	return i
}

// keyByte reads a byte of a key at depth 1 or 2.
func (s *scan) keyByte(c byte) {
	switch {
	case c == '"':
		s.inString = false
		s.endKey()
	case c == '\\':
		s.escape, s.keyLen = true, -1
	case s.keyLen >= 0 && s.keyLen < len(s.key):
		s.key[s.keyLen] = c
		s.keyLen++
	case s.keyLen >= 0:
		s.keyLen = len(s.key) + 1
	}
}

// structure reads c, a byte outside strings; with check, it says whether
// the message passed maxDepth or maxBlocks there.
func (s *scan) structure(c byte, check bool) overKind {
	switch c {
	case ' ', '\t', '\r', '\n':
	case '"':
		s.inString = true
		if s.expectKey && s.depth >= 1 && s.depth <= 2 {
			s.inKey, s.keyLen, s.expectKey = true, 0, false
		} else {
			s.deepest = max(s.deepest, s.depth)
			s.collect(c)
		}
	case '{', '[':
		return s.open(c, check)
	case '}', ']':
		if s.depth == 1 && s.capturing {
			s.capturing = false
		}
		if s.depth > 0 {
			s.depth--
		}
		if s.depth < 3 {
			s.inBlocks = false
		}
		s.expectKey = false
	case ':':
		if s.depth == 1 && s.key1 == keyID {
			s.capturing, s.idLen, s.idOK, s.hasID = true, 0, true, true
		}
	case ',':
		if s.depth == 1 {
			s.capturing = false
		}
		if s.depth >= 1 && s.depth <= 2 && s.obj[s.depth] {
			s.expectKey = true
		}
	default: // a byte of a number, true, false or null
		s.deepest = max(s.deepest, s.depth)
		s.collect(c)
	}
	return notOver
}

// open reads c, the start of an object or an array.
func (s *scan) open(c byte, check bool) overKind {
	s.deepest = max(s.deepest, s.depth)
	s.depth++
	s.idOK = s.idOK && !s.capturing // an id is never an object or array
	s.capturing = false
	if s.depth <= 2 {
		s.obj[s.depth] = c == '{'
		s.expectKey = c == '{'
		if s.depth == 2 {
			s.key2 = keyOther
		}
	}
	if s.depth == 3 && c == '[' {
		s.inBlocks = s.key1 == keyResult && s.key2 == keyContent
	}
	if s.depth == 4 && c == '{' && s.inBlocks {
		s.blocks++
		if check && s.blocks > maxBlocks {
			return overBlocks
		}
	}
	if check && s.depth > maxDepth {
		return overDepth
	}
	return notOver
}

// collect adds a byte of the id's value while capturing it.
func (s *scan) collect(c byte) {
	if !s.capturing {
		return
	}
	if s.idLen == len(s.id) {
		s.idOK = false
		return
	}
	s.id[s.idLen] = c
	s.idLen++
}

// endKey classifies the key just read.
func (s *scan) endKey() {
	s.inKey = false
	k := keyOther
	if s.keyLen >= 0 && s.keyLen <= len(s.key) {
		// encoding/json, which mcp-go decodes with, matches keys without
		// regard to case (Unicode's simple folding, as EqualFold).
		key := s.key[:s.keyLen]
		for _, c := range []struct {
			name string
			k    topKey
		}{{"id", keyID}, {"method", keyMethod}, {"result", keyResult}, {"content", keyContent}} {
			if bytes.EqualFold(key, []byte(c.name)) {
				k = c.k
			}
		}
	}
	if s.depth == 1 {
		s.key1 = k
		if k == keyMethod {
			s.hasMethod = true
		}
	} else {
		s.key2 = k
	}
}

// answers returns the raw id of the call the message answers: none for a
// request or notification of the server, or when its id was not found
// whole.
func (s *scan) answers() []byte {
	if s.hasMethod || !s.idOK || s.capturing || s.idLen == 0 {
		return nil
	}
	return s.id[:s.idLen]
}

// request reports whether the message is a request (a method and an
// id that is not null: mcp-go takes one with a null id for a
// notification).
func (s *scan) request() bool {
	return s.hasMethod && s.hasID && !s.nullID()
}

// answer reports whether the message answers a request (an id, and no
// method).
func (s *scan) answer() bool {
	return !s.hasMethod && s.hasID && !s.nullID()
}

func (s *scan) nullID() bool {
	return s.idOK && !s.capturing && string(s.id[:s.idLen]) == "null"
}

// nestingDepth is how deep the JSON text raw nests: the depth of its
// deepest value, as a script's JSON reader counts it (0 for a scalar or
// an empty container, 1 for [1], 2 for [[1]] or [[[]]]...).
func nestingDepth(raw []byte) int {
	var s scan
	s.feed(raw, false)
	return s.deepest
}

// levels is how many levels deep a script's JSON reader (json.decode)
// counts the JSON text raw: its outermost value is level 1, a value inside
// n containers level n+1; 0 for no text.
func levels(raw []byte) int {
	if len(raw) == 0 {
		return 0
	}
	return nestingDepth(raw) + 1
}
