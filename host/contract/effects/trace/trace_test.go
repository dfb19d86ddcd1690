package trace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
)

func sampleEntries() []*Entry {
	return []*Entry{
		{Op: OpSeed, Seed: 12345},
		{Op: OpClock, Clock: ClockWall, Sec: 1700000000, Nsec: 5},
		{Op: OpClock, Clock: ClockMono, Nanos: 42},
		{Op: OpCall, Function: "sdk.t.pets_create", Method: "POST", URL: "http://127.0.0.1/pets?x={key}",
			Body: []byte(`{"name":"a<b>"}`), Response: &Response{Status: 201, Headers: map[string]string{"content-type": "application/json"},
				JSON: Bytes(`{"id":1}`)}},
		{Op: OpCall, Function: "sdk.t.raw", Response: &Response{Fail: 3, Message: "sdk.t.raw: HTTP 500", Status: 500, Text: Bytes{0xff, 0, 1}}},
		{Op: OpIO, IO: &IO{Op: IOOpen, Path: "a.txt", Mode: "r", Result: 1}},
		{Op: OpIO, IO: &IO{Op: IORead, Handle: 1, Len: 8, Result: 3, Data: Bytes("abc")}},
		{Op: OpIO, IO: &IO{Op: IORead, Handle: 1, Len: 8, Result: 2, Data: Bytes{0x80, 0x81}}},
		{Op: OpIO, IO: &IO{Op: IOList, Path: ".", Result: 3, Pending: Bytes("a\x00b")}},
		{Op: OpEnd, Files: []byte(`[{"name":"a.txt","op":"write","bytes":3}]`)},
	}
}

// record writes entries to a trace of a test's header and returns its
// bytes.
func record(t testing.TB, entries []*Entry) []byte {
	t.Helper()
	return recordWith(t, Header{Toolscript: "test", ScriptSHA256: "s", ConfigSHA256: "c"}, entries)
}

// recordWith writes entries to a trace of header h and returns its bytes.
func recordWith(t testing.TB, h Header, entries []*Entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, h)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		w.Add(e)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func readAll(data []byte, maxLine, max int64) (Header, []*Entry, error) {
	r, h, err := newReader(bytes.NewReader(data), maxLine, max)
	if err != nil {
		return h, nil, err
	}
	var out []*Entry
	for {
		e, err := r.Next()
		if err == io.EOF {
			return h, out, nil
		}
		if err != nil {
			return h, out, err
		}
		out = append(out, e)
	}
}

// TestRoundTrip: what the writer writes, the reader reads back the same,
// binary bytes included.
func TestRoundTrip(t *testing.T) {
	want := sampleEntries()
	data := record(t, want)
	h, got, err := readAll(data, MaxLineBytes, MaxBytes)
	if err != nil {
		t.Fatal(err)
	}
	if h.Trace != Version || h.Toolscript != "test" || h.ScriptSHA256 != "s" {
		t.Errorf("header %+v", h)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read back:\n%+v\nwant\n%+v", got, want)
	}
	if !bytes.Contains(data, []byte(`"base64":`)) || !bytes.Contains(data, []byte(`a<b>`)) {
		t.Errorf("binary bytes are not base64, or HTML is escaped:\n%s", data)
	}
}

// TestRealTrace: a trace `toolscript run --record` wrote (format 2) reads
// whole, and writes back the same, byte for byte, but for its format
// (the writer's).
func TestRealTrace(t *testing.T) {
	data, err := os.ReadFile("testdata/real.trace")
	if err != nil {
		t.Fatal(err)
	}
	h, entries, err := readAll(data, MaxLineBytes, MaxBytes)
	if err != nil || len(entries) < 20 || entries[len(entries)-1].Op != OpEnd {
		t.Fatalf("%d entries, %v", len(entries), err)
	}
	got := recordWith(t, h, entries)
	want := bytes.Replace(data, []byte(`{"trace":2,`), []byte(fmt.Sprintf(`{"trace":%d,`, Version)), 1)
	if !bytes.Equal(got, want) {
		t.Errorf("written back:\n%s\nwant\n%s", got, want)
	}
}

// TestWriterKeepsReservedOrder: an entry reserved first is written first,
// however late it is filled; one never filled is left out.
func TestWriterKeepsReservedOrder(t *testing.T) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, Header{})
	slots := make([]Slot, 20)
	for i := range slots {
		slots[i] = w.Reserve()
	}
	var wg sync.WaitGroup
	for i := len(slots) - 1; i >= 0; i-- {
		if i == 7 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.Fill(slots[i], &Entry{Op: OpSeed, Seed: uint64(i + 1)})
		}()
	}
	wg.Wait()
	w.Add(&Entry{Op: OpSeed, Seed: 100})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	_, got, err := readAll(buf.Bytes(), MaxLineBytes, MaxBytes)
	if err != nil {
		t.Fatal(err)
	}
	var seeds []uint64
	for _, e := range got {
		seeds = append(seeds, e.Seed)
	}
	want := []uint64{1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 100}
	if !reflect.DeepEqual(seeds, want) {
		t.Errorf("order %v, want %v", seeds, want)
	}
}

// TestBadTraces: a truncated, garbage, hostile or oversized trace is an
// *Error naming its line.
func TestBadTraces(t *testing.T) {
	good := record(t, sampleEntries())
	lines := strings.SplitAfter(string(good), "\n")
	header := lines[0]
	cases := []struct {
		name    string
		data    string
		maxLine int64
		max     int64
		line    int
		reason  string
	}{
		{"empty", "", 0, 0, 1, "empty"},
		{"garbage header", "\x00\x01garbage\n", 0, 0, 1, "not a trace header"},
		{"header of another format", `{"trace":1,"toolscript":"x","script_sha256":"","config_sha256":""}` + "\n", 0, 0, 1, "trace format 1, this toolscript reads formats 2 to 3"},
		{"header of an unknown mode", `{"trace":2,"toolscript":"x","script_sha256":"","config_sha256":"","mode":"yolo"}` + "\n", 0, 0, 1, "unknown mode"},
		{"header with an unknown field", `{"trace":1,"evil":true}` + "\n", 0, 0, 1, "unknown field"},
		{"truncated", strings.Join(lines[:4], "") + lines[4][:len(lines[4])/2], 0, 0, 5, "cut short"},
		{"garbage line", header + `{"op":"seed","seed":1}` + "\n" + "not json\n", 0, 0, 3, "not a trace entry"},
		{"two values on a line", header + `{"op":"seed"} {"op":"seed"}` + "\n", 0, 0, 2, "more than one"},
		{"unknown op", header + `{"op":"launch"}` + "\n", 0, 0, 2, "unknown op"},
		{"call without response", header + `{"op":"call","function":"sdk.a.b"}` + "\n", 0, 0, 2, "without a response"},
		{"bad base64", header + `{"op":"io","io":{"op":"read","len":4,"result":1,"data":{"base64":"!!"}}}` + "\n", 0, 0, 2, "not a trace entry"},
		{"read more than asked", header + `{"op":"io","io":{"op":"read","len":1,"result":3,"data":"abc"}}` + "\n", 0, 0, 2, "more than it asked"},
		{"a read's result past its data", header + `{"op":"io","io":{"op":"read","len":8,"result":1000,"data":"abc"}}` + "\n", 0, 0, 2, "not the size of its data"},
		{"a listing's result past its names", header + `{"op":"io","io":{"op":"list","result":10,"pending":"a"}}` + "\n", 0, 0, 2, "not its size"},
		{"an unknown failure status", header + `{"op":"io","io":{"op":"open","path":"a","result":-7}}` + "\n", 0, 0, 2, "below -2"},
		{"an unknown fail", header + `{"op":"call","function":"sdk.a.b","response":{"fail":9}}` + "\n", 0, 0, 2, "not one of 0 to 3"},
		{"negative nanos", header + `{"op":"clock","clock":"mono","nanos":-1}` + "\n", 0, 0, 2, "negative"},
		{"empty line", header + "\n", 0, 0, 2, "empty line"},
		{"deep nesting", header + `{"op":"end","files_touched":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + "}\n", 0, 0, 2, "not a trace entry"},
		{"line too long", header + `{"op":"seed","seed":1}` + "\n" + `{"op":"end","files_touched":"` + strings.Repeat("x", 200) + `"}` + "\n", 100, 0, 3, "longer than 100"},
		{"trace too large", string(good), 0, int64(len(good) - 10), len(lines) - 1, "larger than"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			maxLine, max := c.maxLine, c.max
			if maxLine == 0 {
				maxLine = MaxLineBytes
			}
			if max == 0 {
				max = MaxBytes
			}
			_, _, err := readAll([]byte(c.data), maxLine, max)
			var te *Error
			if !errors.As(err, &te) {
				t.Fatalf("error %v, want a *trace.Error", err)
			}
			if te.Line != c.line || !strings.Contains(te.Reason, c.reason) {
				t.Errorf("error %q at line %d, want line %d and %q", te.Reason, te.Line, c.line, c.reason)
			}
		})
	}
}

// TestWriterStopsPastMaxBytes: a recording that would grow past the bound
// stops with ErrTooLarge, and what it wrote is still within the bound.
func TestWriterStopsPastMaxBytes(t *testing.T) {
	var n countOnly
	w, _ := NewWriter(&n, Header{})
	big := &Entry{Op: OpIO, IO: &IO{Op: IORead, Len: 1 << 20, Result: 1 << 20, Data: Bytes(strings.Repeat("a", 1<<20))}}
	for range 300 {
		w.Add(big)
	}
	if err := w.Close(); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Close: %v, want ErrTooLarge", err)
	}
	if n > MaxBytes {
		t.Errorf("%d bytes written, more than %d", n, MaxBytes)
	}
}

type countOnly int64

func (c *countOnly) Write(p []byte) (int, error) { *c += countOnly(len(p)); return len(p), nil }

// FuzzReader: whatever the bytes, reading them gives entries or an
// *Error with a line number, never a panic; what it accepts, it writes
// back readable.
func FuzzReader(f *testing.F) {
	good := record(f, sampleEntries())
	f.Add(good)
	// A real trace: `toolscript run --record` of a script that reads,
	// writes, removes, lists, calls an API (a parallel batch included) and
	// reads the clocks.
	real, err := os.ReadFile("testdata/real.trace")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(real)
	for _, line := range bytes.SplitAfter(real, []byte("\n"))[1:] {
		f.Add(append(bytes.SplitAfter(real, []byte("\n"))[0], line...))
	}
	lines := bytes.SplitAfter(good, []byte("\n"))
	for i := range lines {
		f.Add(bytes.Join(lines[:i], nil))
		f.Add(append(bytes.Join(lines[:i], nil), []byte(`{"op":"io","io":{"op":"read","len":2,"data":{"base64":"AAA="},"result":1}}`+"\n")...))
	}
	f.Add([]byte("{}\n{}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, entries, err := readAll(data, 1<<16, 1<<20)
		if err != nil {
			var te *Error
			if !errors.As(err, &te) || te.Line < 1 {
				t.Fatalf("error %v is not a *trace.Error with a line", err)
			}
			return
		}
		if _, again, err := readAll(recordWith(t, h, entries), MaxLineBytes, MaxBytes); err != nil || len(again) != len(entries) {
			t.Fatalf("rewritten trace: %v (%d entries, want %d)", err, len(again), len(entries))
		}
	})
}

// countingReader counts the bytes read from it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// endless is a line that never ends: `{"op":"end","files_touched":"xxx...`.
type endless struct{ started bool }

func (e *endless) Read(p []byte) (int, error) {
	if !e.started {
		e.started = true
		return copy(p, `{"op":"end","files_touched":"`), nil
	}
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// TestReaderRefusesALongLineAsItReadsIt: a line longer than the reader's
// bound is refused as soon as it passes the bound: no more of it is read
// than the bound and one buffer, however long it is (here: endless).
func TestReaderRefusesALongLineAsItReadsIt(t *testing.T) {
	header := record(t, nil)
	for _, maxLine := range []int64{100, 1 << 20, LineBytesFor(1 << 20)} {
		src := &countingReader{r: io.MultiReader(bytes.NewReader(header), &endless{})}
		r, _, err := NewReader(src, maxLine)
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.Next()
		var te *Error
		if !errors.As(err, &te) || te.Line != 2 || !strings.Contains(te.Reason, "longer than") {
			t.Fatalf("bound %d: error %v, want line 2 longer than the bound", maxLine, err)
		}
		if most := int64(len(header)) + maxLine + 1 + 64<<10; src.n > most {
			t.Errorf("bound %d: %d bytes read, more than %d", maxLine, src.n, most)
		}
	}
	if LineBytesFor(1<<20) >= 16<<20 || LineBytesFor(1<<40) != MaxLineBytes {
		t.Errorf("LineBytesFor(1 MiB) = %d, LineBytesFor(1 TiB) = %d", LineBytesFor(1<<20), LineBytesFor(1<<40))
	}
}

// TestQuotaCutsAtWholeLines: writers sharing a quota write no more than
// its bounds together, each user's and all of them; a trace past a bound
// ends at its last whole line (it reads back, cut short of its end) and
// says which bound it met.
func TestQuotaCutsAtWholeLines(t *testing.T) {
	const perUser, total = 300 << 10, 500 << 10
	q := NewQuota(total, perUser)
	q.Add("carol", 50<<10) // already in the directory
	big := &Entry{Op: OpIO, IO: &IO{Op: IORead, Len: 10 << 10, Result: 10 << 10, Data: Bytes(strings.Repeat("a", 10<<10))}}
	write := func(user string) ([]byte, error) {
		var buf bytes.Buffer
		w, err := NewWriterWithin(&buf, Header{Toolscript: "t"}, q, user)
		if err != nil {
			t.Fatal(err)
		}
		for range 20 {
			w.Add(big)
		}
		err = w.Close()
		return buf.Bytes(), err
	}
	var written int64
	for i, c := range []struct {
		user    string
		perUser bool // the bound met: the user's, or the total
	}{{"alice", false}, {"alice", true}, {"bob", false}, {"carol", false}} {
		data, err := write(c.user)
		written += int64(len(data))
		var qe *QuotaError
		if i == 0 {
			if err != nil {
				t.Fatalf("the first trace is within the bounds: %v", err)
			}
			continue
		}
		if !errors.As(err, &qe) || qe.PerUser != c.perUser {
			t.Errorf("trace %d of %s: %v", i, c.user, err)
		}
		if len(data) > 0 && data[len(data)-1] != '\n' {
			t.Errorf("trace %d of %s does not end at a whole line", i, c.user)
		}
		if _, _, err := readAll(data, MaxLineBytes, MaxBytes); len(data) > 0 && err != nil {
			t.Errorf("trace %d of %s does not read back: %v", i, c.user, err)
		}
	}
	used, alice := q.Used("alice")
	if used > total || alice > perUser || written+50<<10 != used {
		t.Errorf("used %d (written %d), alice %d; bounds %d, %d", used, written, alice, total, perUser)
	}
	small := NewQuota(10, 5)
	small.Add("x", 5)
	var qe *QuotaError
	if err := small.Full("x"); !errors.As(err, &qe) || !qe.PerUser || small.Full("y") != nil {
		t.Errorf("x is full (%v), y is not (%v)", err, small.Full("y"))
	}
	small.Add("y", 5)
	if err := small.Full("z"); !errors.As(err, &qe) || qe.PerUser {
		t.Errorf("the total is full: %v", err)
	}
}

// FuzzBytes: any bytes are written no larger than their base64 object and
// read back the same.
func FuzzBytes(f *testing.F) {
	for _, s := range []string{"", "plain", "\x00\x01\x02", "\"\\\"", "\xff\xfe", "\u2028 é \n\t", strings.Repeat("\x01", 3000)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := Bytes(data).MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(out)) > base64Len(int64(len(data))) {
			t.Fatalf("%d bytes written as %d: %s", len(data), len(out), out)
		}
		var back Bytes
		if err := back.UnmarshalJSON(out); err != nil || !bytes.Equal(back, data) {
			t.Fatalf("read back %q (%v), want %q", back, err, data)
		}
	})
}
