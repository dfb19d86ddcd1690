package upstream

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

var errTrip = errors.New("tripped")

// messages splits in the way f frames it: the offset and length of each
// message (a newline that ends one not counted).
func messages(in []byte, f framing) (starts, sizes []int) {
	switch f {
	case whole:
		return []int{0}, []int{len(in)}
	case lines:
		at := 0
		for _, line := range bytes.Split(in, []byte("\n")) {
			starts, sizes = append(starts, at), append(sizes, len(line))
			at += len(line) + 1
		}
		return starts, sizes
	}
	// events: a line of only '\r' bytes ended by a newline ends the event
	// (that newline not counted; every other byte is).
	start, at := 0, 0
	for _, line := range bytes.SplitAfter(in, []byte("\n")) {
		at += len(line)
		if bytes.HasSuffix(line, []byte("\n")) && len(bytes.Trim(line, "\r\n")) == 0 {
			starts, sizes = append(starts, start), append(sizes, at-1-start)
			start = at
		}
	}
	return append(starts, start), append(sizes, at-start)
}

// want is what a limitReader passes of in: all of it, or the bytes up to
// the cap of the first message above it (and then a trip).
func want(in []byte, f framing, max int) ([]byte, bool) {
	starts, sizes := messages(in, f)
	for i, size := range sizes {
		if size > max {
			return in[:starts[i]+max], true
		}
	}
	return in, false
}

// chunks is a reader returning in in reads of the sizes given (cycled).
type chunks struct {
	in    []byte
	sizes []byte
	i     int
}

func (c *chunks) Read(p []byte) (int, error) {
	if len(c.in) == 0 {
		return 0, io.EOF
	}
	n := len(p)
	if len(c.sizes) > 0 {
		n = min(n, int(c.sizes[c.i%len(c.sizes)])+1)
		c.i++
	}
	n = copy(p, c.in[:min(n, len(c.in))])
	c.in = c.in[n:]
	return n, nil
}

// drain reads r to its end, and says whether it tripped.
func drain(t *testing.T, r *limitReader) ([]byte, bool) {
	t.Helper()
	got, err := io.ReadAll(r)
	switch {
	case err == nil:
		return got, false
	case errors.Is(err, errTrip):
		if _, again := r.Read(make([]byte, 8)); !errors.Is(again, errTrip) {
			t.Fatalf("a read after the trip: %v", again)
		}
		return got, true
	}
	t.Fatalf("read: %v", err)
	return nil, false
}

func TestLimitReader(t *testing.T) {
	for _, tc := range []struct {
		name  string
		in    string
		f     framing
		max   int
		out   string
		fails bool
	}{
		{name: "lines under", in: "abc\ndef\n", f: lines, max: 3, out: "abc\ndef\n"},
		{name: "line at the cap, unterminated", in: "abc\nabc", f: lines, max: 3, out: "abc\nabc"},
		{name: "line over", in: "abc\nabcd\nx", f: lines, max: 3, out: "abc\nabc", fails: true},
		{name: "first line over", in: "abcdef", f: lines, max: 2, out: "ab", fails: true},
		{name: "empty lines", in: "\n\n\n", f: lines, max: 0, out: "\n\n\n"},
		{name: "cap 0", in: "\nx", f: lines, max: 0, out: "\n", fails: true},
		{name: "events under", in: "data: 12\n\ndata: 34\n\n", f: events, max: 9, out: "data: 12\n\ndata: 34\n\n"},
		{name: "event of many data lines", in: "data: 1\ndata: 2\ndata: 3\n\n", f: events, max: 20, out: "data: 1\ndata: 2\ndata", fails: true},
		{name: "CRLF events", in: "data: 1\r\n\r\ndata: 2\r\n\r\n", f: events, max: 10, out: "data: 1\r\n\r\ndata: 2\r\n\r\n"},
		{name: "blank line of CRs", in: "data: 1\n\r\r\ndata: 2\n", f: events, max: 10, out: "data: 1\n\r\r\ndata: 2\n"},
		{name: "event newline at the cap", in: "abc\n\n", f: events, max: 3, out: "abc", fails: true},
		{name: "whole under", in: "{\n\"a\": 1\n}", f: whole, max: 10, out: "{\n\"a\": 1\n}"},
		{name: "whole over across lines", in: "{\n\"a\": 1\n}", f: whole, max: 4, out: "{\n\"a", fails: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range []io.Reader{strings.NewReader(tc.in), iotest.OneByteReader(strings.NewReader(tc.in))} {
				trips := 0
				got, tripped := drain(t, newLimitReader(r, tc.f, int64(tc.max), func(overKind) error { trips++; return errTrip }))
				if string(got) != tc.out || tripped != tc.fails || trips != map[bool]int{true: 1}[tc.fails] {
					t.Errorf("passed %q, tripped %v (%d trips); want %q, %v", got, tripped, trips, tc.out, tc.fails)
				}
			}
		})
	}
}

func TestMaxMessageBytes(t *testing.T) {
	if got := maxMessageBytes(0); got != 0 {
		t.Errorf("no max_response_bytes: cap %d", got)
	}
	if got := maxMessageBytes(10 << 20); got != 41<<20 {
		t.Errorf("10 MiB: cap %d", got)
	}
}

// FuzzLimitReader checks the limitReader against the plain definition of
// its framings (messages), read in chunks of any sizes: it passes exactly
// the input when no message is above the cap, and otherwise exactly the
// input up to the cap of the first one that is, then fails.
func FuzzLimitReader(f *testing.F) {
	f.Add([]byte("abc\ndef\n"), []byte{0, 3}, uint8(3), uint8(0))
	f.Add([]byte("data: 1\r\ndata: 2\r\n\r\ndata: 33\n\n"), []byte{1}, uint8(9), uint8(1))
	f.Add([]byte("\n\r\n\r\r\nxx\n\n"), []byte{}, uint8(1), uint8(1))
	f.Add([]byte("{\n}"), []byte{2}, uint8(2), uint8(2))
	f.Fuzz(func(t *testing.T, in, sizes []byte, max, mode uint8) {
		fr := framing(mode % 3)
		out, fails := want(in, fr, int(max))
		trips := 0
		r := newLimitReader(&chunks{in: in, sizes: sizes}, fr, int64(max), func(overKind) error { trips++; return errTrip })
		got, tripped := drain(t, r)
		if !bytes.Equal(got, out) || tripped != fails || (fails && trips != 1) {
			t.Fatalf("framing %d, cap %d: passed %q, tripped %v; want %q, %v", fr, max, got, tripped, out, fails)
		}
	})
}

func TestLimitReaderScan(t *testing.T) {
	// With a scan, a body's JSON, or an event's data lines, past a bound
	// trips the reader right after the byte that passes it.
	deep := strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1)
	half := strings.Repeat("[", maxDepth/2+1) + strings.Repeat("]", maxDepth/2+1)
	blocks := `{"result":{"content":[` + strings.Repeat(`{},`, maxBlocks) + `{}]}}`
	for _, tc := range []struct {
		name string
		in   string
		f    framing
		out  string // what passes
		why  overKind
	}{
		{"whole deep", deep, whole, deep[:maxDepth+1], overDepth},
		{"whole at the bound", deep[1 : len(deep)-1], whole, deep[1 : len(deep)-1], notOver},
		{"whole blocks", blocks, whole, blocks[:22+3*maxBlocks+1], overBlocks},
		{"event deep", "event: message\ndata: " + deep + "\n\n", events, "event: message\ndata: " + deep[:maxDepth+1], overDepth},
		{"event deep without a space", "data:" + deep + "\n\n", events, "data:" + deep[:maxDepth+1], overDepth},
		{"event deep over data lines", "data: " + half + "\ndata: " + half[:len(half)/2] + "\n\n", events,
			"data: " + half + "\ndata: " + half[:len(half)/2] + "\n\n", notOver},
		{"event deep across data lines", "data: " + deep[:maxDepth/2] + "\ndata: " + deep[maxDepth/2:] + "\n\n", events,
			"data: " + deep[:maxDepth/2] + "\ndata: " + deep[maxDepth/2:maxDepth+1], overDepth},
		{"events each within", "data: " + half + "\n\ndata: " + half + "\n\n", events, "data: " + half + "\n\ndata: " + half + "\n\n", notOver},
		{"a comment is no data", ": " + deep + "\n\n", events, ": " + deep + "\n\n", notOver},
		{"another field is no data", "id: " + deep + "\n\n", events, "id: " + deep + "\n\n", notOver},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range []io.Reader{strings.NewReader(tc.in), iotest.OneByteReader(strings.NewReader(tc.in))} {
				why := notOver
				lr := newLimitReader(r, tc.f, 1<<30, func(w overKind) error { why = w; return errTrip })
				lr.scan = &scan{}
				got, _ := io.ReadAll(lr)
				if string(got) != tc.out || why != tc.why {
					t.Errorf("passed %d bytes (%.40q...), tripped %d; want %d bytes, %d", len(got), got, why, len(tc.out), tc.why)
				}
			}
		})
	}
}
