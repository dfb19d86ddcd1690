package sdk

import (
	"bytes"
	"encoding/json"
	"math"
	"net/url"
	"sync"
	"unicode/utf8"

	"github.com/toolscript/toolscript/host/luau"
)

// Redacted replaces a credential wherever one would reach the script: in
// messages, response bodies and headers (an API that echoes a request
// must not hand its credentials to the script).
const Redacted = "[REDACTED]"

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

// redactor removes a session's secrets from what goes back to the script.
//
// A secret is found in a text whatever its letters' case and however its
// characters are escaped: the text is folded to lower case and decoded
// level by level (JSON escapes, percent-encoding, HTML character
// references; NUL bytes, as UTF-16 text has between ASCII letters, are
// skipped), each level is searched for every form of every secret, and the
// span of the original text a match comes from is replaced whole by
// Redacted. Text with no secret is neither copied nor changed.
type redactor struct {
	forms  [][]byte // the secrets' forms, lower case
	minLen int      // the shortest form
}

func newRedactor(secrets []string) *redactor {
	r := &redactor{minLen: math.MaxInt}
	seen := map[string]bool{}
	add := func(form []byte) {
		if len(form) < minSecret || seen[string(form)] {
			return
		}
		seen[string(form)] = true
		r.forms = append(r.forms, form)
		r.minLen = min(r.minLen, len(form))
	}
	for _, secret := range secrets {
		if len(secret) < minSecret {
			continue
		}
		// The secret as sent; as a query shows it (a space as '+', which
		// decoding does not undo); and as decoding would leave it, should it
		// hold something that looks like an escape.
		form := fold(nil, []byte(secret))
		add(form)
		add(fold(nil, []byte(url.QueryEscape(secret))))
		for range jsonLevels {
			next, changed := decodeLevel(nil, form, nil)
			if !changed {
				break
			}
			add(next)
			form = next
		}
	}
	return r
}

// active reports whether there is anything to redact.
func (r *redactor) active() bool { return len(r.forms) > 0 }

// scratch holds the views of a text being searched.
var scratch = sync.Pool{New: func() any { return new([2][]byte) }}

// found reports whether b holds a secret, in its bytes or within levels
// layers of escapes.
func (r *redactor) found(b []byte, levels int) bool { return foundIn(r, b, levels) }

// maxScratch is the largest buffer the views' pool keeps.
const maxScratch = 64 << 10

// foundIn is found for a string or bytes (a string is searched without
// being copied first).
func foundIn[T ~string | ~[]byte](r *redactor, b T, levels int) bool {
	if len(r.forms) == 0 || len(b) < r.minLen {
		return false
	}
	bufs := scratch.Get().(*[2][]byte)
	v := fold(bufs[0][:0], b)
	other := bufs[1][:0]
	ok := r.foundInView(v, other, levels)
	if len(b) <= maxScratch {
		scratch.Put(bufs)
	}
	return ok
}

// foundInView: v is the folded text, other a buffer for the next level.
func (r *redactor) foundInView(v, other []byte, levels int) bool {
	if r.matches(v) {
		return true
	}
	for range levels {
		if !hasEscape(v) {
			return false
		}
		next, changed := decodeLevel(other, v, nil)
		if !changed {
			return false
		}
		v, other = next, v
		if r.matches(v) {
			return true
		}
	}
	return false
}

func (r *redactor) matches(v []byte) bool {
	for _, f := range r.forms {
		if bytes.Contains(v, f) {
			return true
		}
	}
	return false
}

// string redacts s as text.
func (r *redactor) string(s string) string {
	if !foundIn(r, s, textLevels) {
		return s
	}
	return string(r.redactBytes([]byte(s), textLevels))
}

// redactBytes returns b with the span of every secret found (within
// levels of escapes) replaced by Redacted; b itself when there is none.
func (r *redactor) redactBytes(b []byte, levels int) []byte {
	for range 3 {
		spans := r.spans(b, levels)
		if len(spans) == 0 {
			return b
		}
		b = replaceSpans(b, spans)
	}
	// Replacing made a secret again (it would be made of the marker's
	// text): nothing of this text is shown.
	if r.found(b, levels) {
		return []byte(Redacted)
	}
	return b
}

// span is a part of a text, [start, end).
type span struct{ start, end int }

// spans finds where the secrets are in b: the spans of b that the matches
// at every level come from, in order, overlapping ones merged.
func (r *redactor) spans(b []byte, levels int) []span {
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
		next, changed := decodeLevel(nil, view, &m)
		if !changed {
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

// fold appends b to dst with ASCII letters in lower case.
func fold[T ~string | ~[]byte](dst []byte, b T) []byte {
	n := len(dst)
	dst = append(dst, b...)
	for i, c := range dst[n:] {
		if 'A' <= c && c <= 'Z' {
			dst[n+i] = c + 'a' - 'A'
		}
	}
	return dst
}

// hasEscape reports whether a folded text could have an escape to undo.
func hasEscape(v []byte) bool {
	return bytes.IndexByte(v, '\\') >= 0 || bytes.IndexByte(v, '%') >= 0 || bytes.IndexByte(v, '&') >= 0 || bytes.IndexByte(v, 0) >= 0
}

// decodeLevel appends to dst the folded text src with one layer of
// escapes undone: JSON's (\uXXXX, surrogate pairs included, \/ \\ \" \b
// \f \n \r \t), percent-encoding (%XX), HTML character references (&#N;
// &#xH; &amp; &lt; &gt; &quot; &apos;), and NUL bytes dropped; what it
// decodes is folded too. With from, it appends for each byte of the
// result the offset in src of the escape (or byte) it comes from. It
// reports whether anything was undone.
func decodeLevel(dst, src []byte, from *[]int32) ([]byte, bool) {
	changed := false
	emit := func(c byte, at int) {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
		if from != nil {
			*from = append(*from, int32(at))
		}
	}
	emitRune := func(cp rune, at int) {
		var buf [utf8.UTFMax]byte
		n := utf8.EncodeRune(buf[:], cp)
		for _, c := range buf[:n] {
			emit(c, at)
		}
	}
	for i := 0; i < len(src); {
		c := src[i]
		switch c {
		case 0:
			changed = true
			i++
			continue
		case '%':
			if i+2 < len(src) && isHex(src[i+1]) && isHex(src[i+2]) {
				emit(unhex(src[i+1])<<4|unhex(src[i+2]), i)
				changed = true
				i += 3
				continue
			}
		case '\\':
			if i+1 < len(src) {
				var d byte
				switch src[i+1] {
				case '"', '\\', '/':
					d = src[i+1]
				case 'b':
					d = '\b'
				case 'f':
					d = '\f'
				case 'n':
					d = '\n'
				case 'r':
					d = '\r'
				case 't':
					d = '\t'
				case 'u':
					if cp, ok := hex4(src, i+2); ok {
						n := 6
						if cp >= 0xD800 && cp <= 0xDBFF && i+12 <= len(src) && src[i+6] == '\\' && src[i+7] == 'u' {
							if low, ok := hex4(src, i+8); ok && low >= 0xDC00 && low <= 0xDFFF {
								cp = 0x10000 + (cp-0xD800)<<10 + (low - 0xDC00)
								n = 12
							}
						}
						emitRune(cp, i) // a lone surrogate is U+FFFD
						changed = true
						i += n
						continue
					}
				}
				if d != 0 {
					emit(d, i)
					changed = true
					i += 2
					continue
				}
			}
		case '&':
			if cp, n := charRef(src[i:]); n > 0 {
				emitRune(cp, i)
				changed = true
				i += n
				continue
			}
		}
		emit(c, i)
		i++
	}
	return dst, changed
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
	for _, c := range b[i : i+4] {
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
			if bytes.HasPrefix(b, []byte(e.name)) {
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

// response redacts a converted response in place: its headers (names and
// values) and its body. A JSON body is redacted value by value, so that it
// stays valid JSON with its numbers as they were; one that does not parse,
// or whose secret spans several values, becomes text. It reports whether
// the body changed.
func (r *redactor) response(out *luau.SDKResponse) bool {
	if len(r.forms) == 0 {
		return false
	}
	for k, v := range out.Headers {
		if rk := r.string(k); rk != k {
			delete(out.Headers, k)
			out.Headers[rk] = Redacted
			continue
		}
		out.Headers[k] = r.string(v)
	}
	out.Message = r.string(out.Message)
	if out.Text != nil && r.found(out.Text, textLevels) {
		out.Text = r.redactBytes(out.Text, textLevels)
		return true
	}
	if out.JSON != nil && r.found(out.JSON, jsonLevels) {
		dec := json.NewDecoder(bytes.NewReader(out.JSON))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err == nil && !dec.More() {
			if data, err := json.Marshal(r.value(v)); err == nil && !r.found(data, jsonLevels) {
				out.JSON = data
				return true
			}
		}
		out.JSON, out.Text = nil, r.redactBytes(out.JSON, jsonLevels)
		return true
	}
	return false
}

func (r *redactor) value(v any) any {
	switch x := v.(type) {
	case string:
		return r.string(x)
	case json.Number: // a numeric secret echoed as a number
		if s := r.string(x.String()); s != x.String() {
			return Redacted
		}
	case []any:
		for i := range x {
			x[i] = r.value(x[i])
		}
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[r.string(k)] = r.value(e)
		}
		return m
	}
	return v
}

// redactedPrefix is prefix for a redacted text: the cut never splits the
// marker (which would only make the message harder to read).
func redactedPrefix(b []byte, n int) string {
	if len(b) > n {
		// A marker split by the cut starts within the marker's length
		// before it.
		lo, hi := max(0, n-len(Redacted)+1), min(len(b), n+len(Redacted)-1)
		if i := bytes.Index(b[lo:hi], []byte(Redacted)); i >= 0 && lo+i < n {
			n = lo + i
		}
	}
	return prefix(b, n)
}
