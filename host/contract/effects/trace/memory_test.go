package trace

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/internal/syncbuf"
)

// TestMemoryPrefix: a memory recording's prefix of n entries is its
// header and those entries, each whole, however many more follow, and
// reads back as a trace; it waits for an entry reserved and not yet
// filled, as long as its context allows.
func TestMemoryPrefix(t *testing.T) {
	entries := sampleEntries()
	w := NewMemoryWriter(Header{Toolscript: "test"})
	late := w.Reserve() // filled last: entries after it wait behind it
	for _, e := range entries[1:] {
		w.Add(e)
	}
	if w.Reserved() != len(entries) {
		t.Fatalf("reserved %d", w.Reserved())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := w.Prefix(ctx, 2); err == nil || !strings.Contains(err.Error(), "still waiting") {
		t.Fatalf("a prefix whose first entry is not filled: %v", err)
	}
	header, err := w.Prefix(context.Background(), 0)
	if err != nil || !bytes.HasPrefix(header, fmt.Appendf(nil, `{"trace":%d`, Version)) || bytes.Count(header, []byte("\n")) != 1 {
		t.Fatalf("the empty prefix %q %v", header, err)
	}
	w.Fill(late, entries[0])
	for n := range len(entries) + 1 {
		prefix, err := w.Prefix(context.Background(), n)
		if err != nil {
			t.Fatal(err)
		}
		r, _, err := NewReader(bytes.NewReader(prefix), 0)
		if err != nil {
			t.Fatal(err)
		}
		var got []*Entry
		for {
			e, err := r.Next()
			if err != nil {
				break
			}
			got = append(got, e)
		}
		if len(got) != n || (n > 0 && !reflect.DeepEqual(got, entries[:n])) {
			t.Errorf("prefix of %d: %d entries", n, len(got))
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Prefix(context.Background(), len(entries)+1); err == nil {
		t.Error("a prefix longer than the closed recording")
	}
	whole, _ := w.Prefix(context.Background(), len(entries))
	if !bytes.Equal(whole, w.Bytes()) {
		t.Error("the whole prefix is not the recording")
	}
	var file bytes.Buffer
	fw, _ := NewWriter(&file, Header{})
	if _, err := fw.Prefix(context.Background(), 0); err == nil || fw.Bytes() != nil {
		t.Error("a writer to a file gave a prefix")
	}
	fw.Close()
}

// TestMemoryHeld: what a memory recording holds is counted as it grows
// (what a paused execution is charged for it), and a writer that is not
// one, or none, holds nothing.
func TestMemoryHeld(t *testing.T) {
	w := NewMemoryWriter(Header{Toolscript: "test"})
	for _, e := range sampleEntries() {
		w.Add(e)
	}
	if _, err := w.Prefix(context.Background(), len(sampleEntries())); err != nil {
		t.Fatal(err)
	}
	if held, all := w.Held(), int64(len(w.Bytes())); held != all {
		t.Errorf("a memory recording of %d bytes holds %d", all, held)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var file bytes.Buffer
	other, err := NewWriter(&file, Header{Toolscript: "test"})
	if err != nil {
		t.Fatal(err)
	}
	other.Add(sampleEntries()[0])
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	var none *Writer
	if other.Held() != 0 || none.Held() != 0 {
		t.Errorf("a recording to a file holds %d, none %d", other.Held(), none.Held())
	}
}

// TestMemoryReleased: a memory recording within a quota gives its bytes
// back once, however often Release is called.
func TestMemoryReleased(t *testing.T) {
	q := NewQuota(1<<20, 1<<20)
	other, err := NewWriterWithin(&syncbuf.Buffer{}, Header{Toolscript: "test"}, q, "alice")
	if err != nil {
		t.Fatal(err)
	}
	other.Close() // alice's other recording, still held
	w, err := NewWriterWithin(&syncbuf.Buffer{}, Header{Toolscript: "test"}, q, "alice")
	if err != nil {
		t.Fatal(err)
	}
	w.Add(sampleEntries()[0])
	w.Close()
	_, before := q.Used("alice")
	w.Release()
	w.Release()
	if _, after := q.Used("alice"); after != before-w.Held() || after <= 0 {
		t.Errorf("alice holds %d bytes before the release, %d after (the recording held %d)", before, after, w.Held())
	}
}
