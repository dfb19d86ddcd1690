package sdkdocs

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Every answer of the docs fits a model's context: listings come in pages
// of compact lines, each page at most MaxAnswer characters, ending with
// how many are left and the cursor of the next page.
const (
	// MaxAnswer caps the characters of any one answer: a page, a
	// function's docs, a schema, an overview.
	MaxAnswer = 25000
	// DefaultPageLimit is how many lines a page holds when the caller
	// gives no limit; fewer when they would pass MaxAnswer.
	DefaultPageLimit = 100
	// MaxPageLimit caps a requested limit (larger ones are taken as it).
	MaxPageLimit = 1000
	// maxLine caps one line of a listing.
	maxLine = 600
	// maxCursor is longer than any cursor this package makes.
	maxCursor = 64
)

// ErrBadCursor is wrapped by the error of a cursor this server did not give.
var ErrBadCursor = errors.New("invalid cursor")

// PageRequest is where a listing starts and how long its page is.
type PageRequest struct {
	// Limit is the most lines of the page; 0 means DefaultPageLimit,
	// above MaxPageLimit means MaxPageLimit, negative is an error.
	Limit int
	// Cursor is "" for the first page, else the cursor a page ended with.
	Cursor string
}

// fingerprint identifies the catalog's functions and schemas: cursors
// carry it, so that a cursor outlives neither a change of the sdk nor a
// change of the listing it was made for.
func (d *Docs) fingerprintOf() [8]byte {
	h := sha256.New()
	for _, api := range d.cat.APIs {
		fmt.Fprintf(h, "%s\x00%s\x00%d\x00", api.Name, api.Kind, len(api.Schemas))
		for _, f := range api.Functions {
			fmt.Fprintf(h, "%s\x01", f.Name)
		}
		for _, n := range d.schemaNames[api.Name] {
			fmt.Fprintf(h, "%s\x02", n)
		}
	}
	var out [8]byte
	copy(out[:], h.Sum(nil))
	return out
}

// listingKey binds a cursor to one listing of one catalog: the listing's
// kind and arguments hashed with the catalog's fingerprint.
func (d *Docs) listingKey(parts ...string) [8]byte {
	h := sha256.New()
	h.Write(d.fingerprint[:])
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s", len(p), p)
	}
	var out [8]byte
	copy(out[:], h.Sum(nil))
	return out
}

// encodeCursor makes the cursor of the page starting at offset: opaque,
// and the same for the same listing of the same sdk.
func encodeCursor(key [8]byte, offset int) string {
	buf := make([]byte, 8, 8+binary.MaxVarintLen64)
	copy(buf, key[:])
	buf = binary.AppendUvarint(buf, uint64(offset))
	return base64.RawURLEncoding.EncodeToString(buf)
}

// decodeCursor checks a cursor against the listing's key and its length.
func decodeCursor(cursor string, key [8]byte, total int) (int, error) {
	if cursor == "" {
		return 0, nil
	}
	if len(cursor) > maxCursor {
		return 0, fmt.Errorf("%w: %d characters, not one this server gave (pass the cursor a page ended with, or none for the first page)", ErrBadCursor, len(cursor))
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || len(raw) < 9 {
		return 0, fmt.Errorf("%w %q: not one this server gave (pass the cursor a page ended with, or none for the first page)", ErrBadCursor, cursor)
	}
	off, n := binary.Uvarint(raw[8:])
	if n <= 0 || 8+n != len(raw) {
		return 0, fmt.Errorf("%w %q: not one this server gave (pass the cursor a page ended with, or none for the first page)", ErrBadCursor, cursor)
	}
	if [8]byte(raw[:8]) != key {
		return 0, fmt.Errorf("%w %q: it belongs to another listing (other arguments), or the sdk has changed since; start again without a cursor", ErrBadCursor, cursor)
	}
	if off == 0 || off > uint64(total) {
		return 0, fmt.Errorf("%w %q: past the end of the listing (%d entries); start again without a cursor", ErrBadCursor, cursor, total)
	}
	return int(off), nil
}

// pageLimit checks and clamps a requested limit.
func pageLimit(limit int) (int, error) {
	switch {
	case limit < 0:
		return 0, fmt.Errorf("limit must be at least 1, got %d", limit)
	case limit == 0:
		return DefaultPageLimit, nil
	case limit > MaxPageLimit:
		return MaxPageLimit, nil
	}
	return limit, nil
}

// Page is one page of a listing.
type Page struct {
	// Text is the page as a model reads it: a header line, the entries one
	// a line, and, when entries are left, a line with their number and
	// the next cursor. At most MaxAnswer characters.
	Text string
	// Shown is how many entries the page holds, from First (0-based).
	First, Shown int
	// Total is the length of the whole listing; Remaining what follows
	// this page.
	Total, Remaining int
	// NextCursor is "" on the last page.
	NextCursor string
}

// paginate renders the page of a listing of total entries that req asks
// for: line(i) renders entry i (only the page's entries are rendered),
// header the first line given the range shown, next how to ask for the
// next page given its cursor. The page stops before MaxAnswer.
func paginate(key [8]byte, total int, req PageRequest, line func(i int) string, header func(first, last, total int) string, next func(cursor string, remaining int) string) (Page, error) {
	limit, err := pageLimit(req.Limit)
	if err != nil {
		return Page{}, err
	}
	first, err := decodeCursor(req.Cursor, key, total)
	if err != nil {
		return Page{}, err
	}
	const reserve = 400 // header and footer
	var body strings.Builder
	shown := 0
	for i := first; i < total && shown < limit; i++ {
		l := capLine(line(i))
		if shown > 0 && body.Len()+len(l)+1 > MaxAnswer-reserve {
			break
		}
		body.WriteString(l)
		body.WriteByte('\n')
		shown++
	}
	p := Page{First: first, Shown: shown, Total: total, Remaining: total - first - shown}
	var b strings.Builder
	b.WriteString(header(first+1, first+shown, total))
	b.WriteString("\n")
	b.WriteString(body.String())
	if p.Remaining > 0 {
		p.NextCursor = encodeCursor(key, first+shown)
		b.WriteString(next(p.NextCursor, p.Remaining))
		b.WriteString("\n")
	}
	p.Text = b.String()
	return p, nil
}

// capLine cuts a line at maxLine characters (on a rune boundary).
func capLine(s string) string {
	if len(s) <= maxLine {
		return s
	}
	return cutRunes(s, maxLine-3) + "..."
}

// cutRunes cuts s to at most n bytes without splitting a rune.
func cutRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// capText cuts a whole answer at MaxAnswer characters, saying where the
// rest is.
func capText(s, rest string) string {
	if len(s) <= MaxAnswer {
		return s
	}
	note := "\n... (cut at " + strconv.Itoa(MaxAnswer) + " characters"
	if rest != "" {
		note += "; " + rest
	}
	note += ")\n"
	return cutRunes(s, MaxAnswer-len(note)) + note
}

// quote writes s as a double-quoted string for a page's footer.
func quote(s string) string { return strconv.Quote(s) }
