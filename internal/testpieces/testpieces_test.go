package testpieces_test

import (
	"bytes"
	"testing"

	"github.com/toolscript/toolscript/internal/testpieces"
)

// FuzzCut: the pieces join into the message; each is 1 to 256 bytes,
// the size sizes gives it in turn but for the last; no sizes is one piece.
func FuzzCut(f *testing.F) {
	f.Add([]byte(`{"id":1}`), []byte{0, 2})
	f.Add([]byte("x"), []byte{})
	f.Add([]byte{}, []byte{5})
	f.Fuzz(func(t *testing.T, msg, sizes []byte) {
		pieces := testpieces.Cut(msg, sizes)
		if got := bytes.Join(pieces, nil); !bytes.Equal(got, msg) {
			t.Fatalf("the pieces join into %q, want %q", got, msg)
		}
		if len(sizes) == 0 && len(msg) > 0 && len(pieces) != 1 {
			t.Fatalf("%d pieces without sizes, want 1", len(pieces))
		}
		for i, p := range pieces {
			want := len(p)
			if len(sizes) > 0 {
				want = int(sizes[i%len(sizes)]) + 1
			}
			if len(p) == 0 || len(p) > 256 || (i < len(pieces)-1 && len(p) != want) || len(p) > want {
				t.Fatalf("piece %d is %d bytes, want %d", i, len(p), want)
			}
		}
	})
}
