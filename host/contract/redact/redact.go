// Package redact owns the secrets of a configuration and the one redactor
// every text leaving the host passes through: a Secret is a value read
// from the environment or given as a credential, which formats as
// [REDACTED] however it is printed, logged or encoded; a Redactor finds
// the secrets it was made with in a text, whatever their case and however
// their characters are escaped, and replaces them. host/app makes one
// Redactor per configuration and hands it to every sink (the sdk's
// responses, the MCP server's messages, standard error and the logs, the
// probes, the effects' plans and traces); an execution's sdk session adds
// the credentials of its own request (With).
package redact

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/url"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"

	"github.com/toolscript/toolscript/host/contract/sdkcall"
)

// minSecret is the shortest secret redacted: shorter strings occur in
// ordinary text too often to be cut out of it.
const minSecret = 4

// textLevels is how many layers of escapes the redactor undoes to find a
// secret in text the script gets as it is: a secret written with JSON
// escapes (\u0041, \/), percent-encoded (%41 or %2f), as HTML character
// references (&#65;), or any mix of them, once or twice over. JSON is
// looked at one level deeper (jsonLevels): the script gets its strings
// decoded once already.
const (
	textLevels = 2
	jsonLevels = textLevels + 1
)

// Redactor removes secrets from text.
//
// A secret is found in a text whatever its letters' case and however its
// characters are escaped: the text is folded to lower case and decoded
// level by level (JSON escapes, percent-encoding, HTML character
// references; NUL bytes, as UTF-16 text has between ASCII letters, are
// skipped), each level is searched for every form of every secret, and the
// span of the original text a match comes from is replaced whole by
// Redacted. Text with no secret is neither copied nor changed.
type Redactor struct {
	secrets []Secret
	forms   [][]byte // the secrets' forms, lower case
	minLen  int      // the shortest form
}

// New returns a Redactor of secrets. A nil *Redactor redacts nothing.
func New(secrets ...Secret) *Redactor {
	r := &Redactor{minLen: math.MaxInt}
	r.add(secrets)
	return r
}

// With returns a Redactor of r's secrets and more (r is not changed).
func (r *Redactor) With(more ...Secret) *Redactor {
	if len(more) == 0 {
		return r
	}
	var all []Secret
	if r != nil {
		all = append(all, r.secrets...)
	}
	return New(append(all, more...)...)
}

// add adds the forms of secrets.
func (r *Redactor) add(secrets []Secret) {
	seen := map[string]bool{}
	for _, f := range r.forms {
		seen[string(f)] = true
	}
	add := func(form []byte) {
		if len(form) < minSecret || seen[string(form)] {
			return
		}
		seen[string(form)] = true
		r.forms = append(r.forms, form)
		r.minLen = min(r.minLen, len(form))
	}
	for _, s := range secrets {
		secret := s.v
		if len(secret) < minSecret {
			continue
		}
		r.secrets = append(r.secrets, s)
		// The secret as sent; as a query shows it (a space as '+', which
		// decoding does not undo); and as decoding would leave it, should it
		// hold something that looks like an escape.
		form := fold(nil, []byte(secret))
		add(form)
		add(fold(nil, []byte(url.QueryEscape(secret))))
		for range jsonLevels {
			next, deeper := decodeLevel(nil, form, nil, false)
			if bytes.Equal(next, form) {
				break
			}
			add(next)
			form = next
			if !deeper {
				break
			}
		}
	}
}

// Active reports whether there is anything to redact.
func (r *Redactor) Active() bool { return r != nil && len(r.forms) > 0 }

// scratch holds the views of a text being searched.
var scratch = sync.Pool{New: func() any { return new([2][]byte) }}

// found reports whether b holds a secret, in its bytes or within levels
// layers of escapes. A deeper view is made only when the one before has
// an escape that decoding made or could complete.
func (r *Redactor) found(b []byte, levels int) bool {
	if r == nil || len(r.forms) == 0 || len(b) < r.minLen {
		return false
	}
	bufs := scratch.Get().(*[2][]byte)
	ok, v, other := r.search(b, levels, bufs[0][:0], bufs[1][:0])
	if cap(v)+cap(other) <= 2*maxScratch {
		bufs[0], bufs[1] = v, other
		scratch.Put(bufs)
	}
	return ok
}

// search is found with two buffers for the views, which it returns
// (grown).
func (r *Redactor) search(b []byte, levels int, v, other []byte) (bool, []byte, []byte) {
	if !hasEscape(b) { // the common case: searched as it is, not copied
		for _, f := range r.forms {
			if containsFold(b, f) {
				return true, v, other
			}
		}
		return false, v, other
	}
	other = fold(other, b)
	if r.matches(other) {
		return true, v, other
	}
	v, deeper := decodeLevel(v, other, nil, false)
	if r.matches(v) {
		return true, v, other
	}
	for k := 2; deeper && k <= levels; k++ {
		var next []byte
		next, deeper = decodeLevel(other[:0], v, nil, false)
		v, other = next, v
		if r.matches(v) {
			return true, v, other
		}
	}
	return false, v, other
}

// maxScratch is the largest buffer the views' pool keeps.
const maxScratch = 1 << 20

func (r *Redactor) matches(v []byte) bool {
	for _, f := range r.forms {
		if bytes.Contains(v, f) {
			return true
		}
	}
	return false
}

// String redacts s as text.
func (r *Redactor) String(s string) string {
	if !r.found(bytesOf(s), textLevels) {
		return s
	}
	return string(r.redactBytes([]byte(s), textLevels))
}

// redactBytes returns b with the span of every secret found (within
// levels of escapes) replaced by Redacted; b itself when there is none.
func (r *Redactor) redactBytes(b []byte, levels int) []byte {
	for range 3 {
		if !r.found(b, levels) {
			return b
		}
		spans := r.spans(b, levels)
		if len(spans) == 0 {
			break
		}
		b = replaceSpans(b, spans)
	}
	// Still a secret: one made again by replacing (of the marker's own
	// text), or one only found() sees. Nothing of this text is shown.
	if r.found(b, levels) {
		return []byte(Redacted)
	}
	return b
}

// span is a part of a text, [start, end).
type span struct{ start, end int }

// spans finds where the secrets are in b: the spans of b that the matches
// at every level come from, in order, overlapping ones merged.
func (r *Redactor) spans(b []byte, levels int) []span {
	if len(b) > math.MaxInt32 {
		return []span{{0, len(b)}}
	}
	var found []span
	view := fold(nil, b)
	// from[k] maps each byte of view k+1 to where its escape starts in
	// view k; lens[k] is view k's length.
	var from [][]int32
	lens := []int{len(view)}
	for k := 0; ; k++ {
		for _, f := range r.forms {
			for at := 0; ; {
				i := bytes.Index(view[at:], f)
				if i < 0 {
					break
				}
				i += at
				found = append(found, span{origin(from, k, i), originEnd(from, lens, k, i+len(f)-1)})
				at = i + 1
			}
		}
		if k == levels || !hasEscape(view) {
			break
		}
		var m []int32
		next, _ := decodeLevel(nil, view, &m, false)
		if bytes.Equal(next, view) {
			break
		}
		from = append(from, m)
		lens = append(lens, len(next))
		view = next
	}
	if len(found) == 0 {
		return nil
	}
	sortSpans(found)
	merged := found[:1]
	for _, s := range found[1:] {
		last := &merged[len(merged)-1]
		if s.start <= last.end {
			last.end = max(last.end, s.end)
		} else {
			merged = append(merged, s)
		}
	}
	return merged
}

// origin is where byte i of view k comes from in the original text.
func origin(from [][]int32, k, i int) int {
	for ; k > 0; k-- {
		i = int(from[k-1][i])
	}
	return i
}

// originEnd is where the escape that made byte i of view k ends in the
// original text (the start of the next one's).
func originEnd(from [][]int32, lens []int, k, i int) int {
	for ; k > 0; k-- {
		m := from[k-1]
		j := i + 1
		for j < len(m) && m[j] == m[i] {
			j++
		}
		if j < len(m) {
			i = int(m[j]) - 1
		} else {
			i = lens[k-1] - 1
		}
	}
	return i + 1
}

func sortSpans(s []span) {
	for i := 1; i < len(s); i++ { // few spans, nearly in order
		for j := i; j > 0 && s[j].start < s[j-1].start; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func replaceSpans(b []byte, spans []span) []byte {
	out := make([]byte, 0, len(b)+len(spans)*len(Redacted))
	at := 0
	for _, s := range spans {
		out = append(out, b[at:s.start]...)
		out = append(out, Redacted...)
		at = s.end
	}
	return append(out, b[at:]...)
}

// fold appends b to dst with ASCII letters in lower case, eight bytes at
// a time.
func fold(dst, b []byte) []byte {
	n := len(dst)
	dst = append(dst, b...)
	t := dst[n:]
	for len(t) >= 8 {
		binary.LittleEndian.PutUint64(t, lower8(binary.LittleEndian.Uint64(t)))
		t = t[8:]
	}
	for i, c := range t {
		if 'A' <= c && c <= 'Z' {
			t[i] = c + 'a' - 'A'
		}
	}
	return dst
}

// lower8 is x's eight bytes with ASCII upper-case letters in lower case.
func lower8(x uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	h := x &^ highs
	atLeastA := h + (0x80-'A')*ones // high bit where h >= 'A'
	pastZ := h + (0x80-'Z'-1)*ones  // high bit where h > 'Z'
	upper := atLeastA &^ pastZ &^ x & highs
	return x | upper>>2
}

// containsFold reports whether b holds f (in lower case) whatever the
// case of b's letters: candidates are found with IndexByte on one byte of
// f, a letter in both cases or, better, a byte without case.
func containsFold(b, f []byte) bool {
	j := 0
	for i, c := range f {
		if c < 'a' || c > 'z' {
			j = i
			break
		}
	}
	anchors := []byte{f[j]}
	if c := f[j]; 'a' <= c && c <= 'z' {
		anchors = append(anchors, c-'a'+'A')
	}
	for _, a := range anchors {
		for at := j; at < len(b); {
			k := bytes.IndexByte(b[at:], a)
			if k < 0 {
				break
			}
			if p := at + k - j; p+len(f) <= len(b) && equalFoldBytes(b[p:p+len(f)], f) {
				return true
			}
			at += k + 1
		}
	}
	return false
}

// equalFoldBytes compares b with f (in lower case) whatever the case of
// b's ASCII letters.
func equalFoldBytes(b, f []byte) bool {
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != f[i] {
			return false
		}
	}
	return true
}

// bytesOf is s's bytes, not copied: only read.
func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// hasEscape reports whether a folded text could have an escape to undo.
func hasEscape(v []byte) bool {
	return bytes.IndexByte(v, '\\') >= 0 || bytes.IndexByte(v, '%') >= 0 || bytes.IndexByte(v, '&') >= 0 || bytes.IndexByte(v, 0) >= 0
}

// escapeStart marks the bytes an escape starts with (and NUL).
var escapeStart = [256]bool{'\\': true, '%': true, '&': true, 0: true}

// escapeReach is the longest escape decodeLevel undoes ("\ud83d\ude00",
// "&#x0010ffff;").
const escapeReach = 12

// decodeLevel appends to dst the text src with one layer of escapes
// undone: JSON's (\uXXXX, surrogate pairs included, \/ \\ \" \b \f \n
// \r \t), percent-encoding (%XX), HTML character references (&#N; &#xH;
// &amp; &lt; &gt; &quot; &apos;), and NUL bytes dropped; ASCII letters in
// lower case (src is folded already but for a raw text: foldAll). With
// from, it appends for each byte of the result the offset in src of the
// escape (or byte) it comes from. It reports whether the result could hold
// an escape to undo that src did not: one that decoding made (a decoded
// '%'), or completed (a '&' left as it was, followed by decoded bytes).
func decodeLevel(dst, src []byte, from *[]int32, foldAll bool) (out []byte, deeper bool) {
	d := decoder{dst: dst, from: from, lastKept: -escapeReach - 1}
	d.run(src, foldAll)
	if d.many {
		return d.dst, true
	}
	for _, at := range d.maybe[:d.n] {
		if startsEscape(d.dst[at:]) {
			return d.dst, true
		}
	}
	return d.dst, false
}

// decoder is the state of decodeLevel.
type decoder struct {
	dst  []byte
	from *[]int32
	// maybe are where in dst an escape could start that src did not
	// have: a decoded escape's first byte, or one kept as it was with
	// decoded bytes (or a dropped NUL) after it within an escape's reach;
	// checked when maybe is full and at the end. many: one does.
	maybe    [32]int
	n        int
	many     bool
	lastKept int // where in dst the last escape's first byte kept as it was is
}

func (d *decoder) mark(at int) {
	if d.n > 0 && d.maybe[d.n-1] == at {
		return
	}
	if d.n == len(d.maybe) {
		// Full: check those whose reach is all decoded, keep the others.
		kept := 0
		for _, m := range d.maybe[:d.n] {
			switch {
			case m+escapeReach > len(d.dst):
				d.maybe[kept] = m
				kept++
			case startsEscape(d.dst[m:]):
				d.many = true
			}
		}
		d.n = kept
		if d.n == len(d.maybe) {
			d.many = true
		}
		if d.many {
			return
		}
	}
	d.maybe[d.n] = at
	d.n++
}

// emit appends a decoded byte made from the escape at src[at].
func (d *decoder) emit(c byte, at int) {
	if 'A' <= c && c <= 'Z' {
		c += 'a' - 'A'
	}
	if len(d.dst)-d.lastKept < escapeReach {
		d.mark(d.lastKept)
	}
	if escapeStart[c] {
		d.mark(len(d.dst))
	}
	d.dst = append(d.dst, c)
	if d.from != nil {
		*d.from = append(*d.from, int32(at))
	}
}

func (d *decoder) emitRune(cp rune, at int) {
	var buf [utf8.UTFMax]byte
	n := utf8.EncodeRune(buf[:], cp)
	for _, c := range buf[:n] {
		d.emit(c, at)
	}
}

func (d *decoder) run(src []byte, foldAll bool) {
	for i := 0; i < len(src); {
		// A run of plain bytes, to the next escape's first byte.
		j := nextStarter(src, i)
		if j > i {
			d.plain(src, i, j, foldAll)
			if i = j; i == len(src) {
				break
			}
		}
		if n := d.escape(src, i); n > 0 {
			i += n
			continue
		}
		// An escape's first byte that starts none here: kept, and watched
		// (decoded bytes after it could complete one).
		d.lastKept = len(d.dst)
		d.dst = append(d.dst, src[i])
		if d.from != nil {
			*d.from = append(*d.from, int32(i))
		}
		i++
	}
}

// plain copies src[i:j], which holds no escape, folded when foldAll.
func (d *decoder) plain(src []byte, i, j int, foldAll bool) {
	if foldAll {
		d.dst = fold(d.dst, src[i:j])
	} else {
		d.dst = append(d.dst, src[i:j]...)
	}
	if d.from != nil {
		for k := i; k < j; k++ {
			*d.from = append(*d.from, int32(k))
		}
	}
}

// escape decodes the escape that starts at src[i] (a NUL byte, %XX, a
// backslash escape, a character reference) and returns its length; 0 when
// none starts there.
func (d *decoder) escape(src []byte, i int) int {
	switch src[i] {
	case 0: // dropped: what follows may complete an escape before it
		if len(d.dst)-d.lastKept < escapeReach {
			d.mark(d.lastKept)
		}
		return 1
	case '%':
		if i+2 < len(src) && isHex(src[i+1]) && isHex(src[i+2]) {
			d.emit(unhex(src[i+1])<<4|unhex(src[i+2]), i)
			return 3
		}
	case '\\':
		return d.backslash(src, i)
	case '&':
		if cp, n := charRef(src[i:]); n > 0 {
			d.emitRune(cp, i)
			return n
		}
	}
	return 0
}

// backslash decodes a JSON (or \U) backslash escape at src[i] and returns
// its length; 0 when none starts there.
func (d *decoder) backslash(src []byte, i int) int {
	if i+1 >= len(src) {
		return 0
	}
	var e byte
	switch src[i+1] {
	case '"', '\\', '/':
		e = src[i+1]
	case 'b':
		e = '\b'
	case 'f':
		e = '\f'
	case 'n':
		e = '\n'
	case 'r':
		e = '\r'
	case 't':
		e = '\t'
	case 'u', 'U':
		if cp, ok := hex4(src, i+2); ok {
			n := 6
			if cp >= 0xD800 && cp <= 0xDBFF && i+12 <= len(src) && src[i+6] == '\\' && (src[i+7] == 'u' || src[i+7] == 'U') {
				if low, ok := hex4(src, i+8); ok && low >= 0xDC00 && low <= 0xDFFF {
					cp = 0x10000 + (cp-0xD800)<<10 + (low - 0xDC00)
					n = 12
				}
			}
			d.emitRune(cp, i) // a lone surrogate is U+FFFD
			return n
		}
	}
	if e == 0 {
		return 0
	}
	d.emit(e, i)
	return 2
}

// nextStarter is where the next escape's first byte is in src from i
// on (len(src) for none): looked for byte by byte nearby, where escapes
// are dense, and with IndexByte past that.
func nextStarter(src []byte, i int) int {
	end := min(len(src), i+32)
	for j := i; j < end; j++ {
		if escapeStart[src[j]] {
			return j
		}
	}
	j := len(src)
	for _, c := range [...]byte{'\\', '%', '&', 0} {
		if n := bytes.IndexByte(src[end:j], c); n >= 0 {
			j = end + n
		}
	}
	return j
}

// startsEscape reports whether decodeLevel would undo an escape at the
// start of b.
func startsEscape(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	switch b[0] {
	case 0:
		return true
	case '%':
		return len(b) >= 3 && isHex(b[1]) && isHex(b[2])
	case '\\':
		if len(b) < 2 {
			return false
		}
		switch b[1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			return true
		case 'u', 'U':
			_, ok := hex4(b, 2)
			return ok
		}
	case '&':
		_, n := charRef(b)
		return n > 0
	}
	return false
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var cp rune
	for k := i; k < i+4; k++ {
		c := b[k]
		if !isHex(c) {
			return 0, false
		}
		cp = cp<<4 | rune(unhex(c))
	}
	return cp, true
}

// charRef reads an HTML character reference at the start of b ("&#65;",
// "&#x41;", "&amp;"...; the numeric ones' ';' may be missing): the
// character and the reference's length, 0 for none.
func charRef(b []byte) (rune, int) {
	if len(b) < 3 {
		return 0, 0
	}
	if b[1] != '#' {
		for _, e := range [...]struct {
			name string
			r    rune
		}{{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}} {
			if len(b) >= len(e.name) && equalFold(b[:len(e.name)], e.name) {
				return e.r, len(e.name)
			}
		}
		return 0, 0
	}
	i, base := 2, rune(10)
	if b[2] == 'x' || b[2] == 'X' {
		i, base = 3, 16
	}
	start := i
	var cp rune
	for i < len(b) && i-start < 8 {
		c := b[i]
		if base == 10 && !('0' <= c && c <= '9') || base == 16 && !isHex(c) {
			break
		}
		cp = cp*base + rune(unhex(c))
		i++
	}
	if i == start || cp > utf8.MaxRune {
		return 0, 0
	}
	if i < len(b) && b[i] == ';' {
		i++
	}
	return cp, i
}

// Response redacts a converted response in place: its headers (names and
// values) and its body. A JSON body is redacted value by value, so that it
// stays valid JSON with its numbers as they were; one that does not parse,
// or whose secret spans several values, becomes text. It reports whether
// the body changed.
func (r *Redactor) Response(out *sdkcall.Response) bool {
	if !r.Active() {
		return false
	}
	for k, v := range out.Headers {
		if rk := r.String(k); rk != k {
			delete(out.Headers, k)
			out.Headers[rk] = Redacted
			continue
		}
		out.Headers[k] = r.String(v)
	}
	out.Message = r.String(out.Message)
	if out.Text != nil && r.found(out.Text, textLevels) {
		out.Text = r.redactBytes(out.Text, textLevels)
		return true
	}
	if out.JSON != nil && r.found(out.JSON, jsonLevels) {
		if red := r.jsonValue(out.JSON); red != nil {
			out.JSON = red
			return true
		}
		out.JSON, out.Text = nil, r.redactBytes(out.JSON, jsonLevels)
		return true
	}
	return false
}

func (r *Redactor) value(v any) any {
	switch x := v.(type) {
	case string:
		return r.String(x)
	case json.Number: // a numeric secret echoed as a number
		if s := r.String(x.String()); s != x.String() {
			return Redacted
		}
	case []any:
		for i := range x {
			x[i] = r.value(x[i])
		}
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[r.String(k)] = r.value(e)
		}
		return m
	}
	return v
}

// Cut is the first n bytes of b as text, "..." after them when b is
// longer, splitting neither a UTF-8 sequence nor the marker Redacted
// (which would only make the message harder to read).
func Cut(b []byte, n int) string {
	if len(b) > n {
		// A marker split by the cut starts within the marker's length
		// before it.
		lo, hi := max(0, n-len(Redacted)+1), min(len(b), n+len(Redacted)-1)
		if i := bytes.Index(b[lo:hi], []byte(Redacted)); i >= 0 && lo+i < n {
			n = lo + i
		}
	}
	if len(b) <= n {
		return strings.ToValidUTF8(string(b), "\uFFFD")
	}
	cut := n
	for cut > n-utf8.UTFMax && cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return strings.ToValidUTF8(string(b[:cut]), "\uFFFD") + "..."
}

// equalFold compares ASCII text without regard to case (name is lower
// case).
func equalFold(b []byte, name string) bool {
	for i := range len(name) {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != name[i] {
			return false
		}
	}
	return true
}

// Tool redacts an MCP tool's result in place (a tool can show what its
// server knows: its environment, inherited from toolscript's, holds the
// credentials of auth_env). Text is looked at as deeply as JSON (a tool's
// text is often JSON the script decodes). An error's message was cut from
// its content's text before it came here: when that text holds a secret,
// the message is cut again, at the same length, from the redacted text,
// so that a cut through a secret shows none of it.
func (r *Redactor) Tool(out *sdkcall.Response, name string) {
	if !r.Active() {
		return
	}
	out.Message = r.String(out.Message)
	if out.Text != nil && r.found(out.Text, jsonLevels) {
		out.Text = r.redactBytes(out.Text, jsonLevels)
	}
	if out.JSON != nil {
		tmp := &sdkcall.Response{JSON: out.JSON}
		r.Response(tmp)
		out.JSON = tmp.JSON
		if tmp.Text != nil {
			out.JSON, out.Text = nil, tmp.Text
		}
	}
	if out.Content == nil || !r.found(out.Content, jsonLevels) {
		return
	}
	tmp := &sdkcall.Response{JSON: out.Content}
	r.Response(tmp)
	if tmp.JSON == nil {
		out.Content = json.RawMessage(`[{"type":"text","text":"` + Redacted + `"}]`)
	} else {
		out.Content = tmp.JSON
	}
	if out.Fail != sdkcall.Upstream {
		return
	}
	var blocks []struct{ Type, Text string }
	json.Unmarshal(out.Content, &blocks)
	var texts []string
	for _, b := range blocks {
		if b.Type == "text" {
			texts = append(texts, b.Text)
		}
	}
	text := []byte(strings.Join(texts, "\n"))
	head := name + ": "
	msg := r.String(head + string(text))
	if cut, ok := strings.CutSuffix(out.Message, "..."); ok && strings.HasPrefix(cut, head) {
		msg = r.String(head + Cut(text, len(cut)-len(head)))
	}
	out.Message = msg
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
