package requeststate_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/serve/requeststate"
)

// TestSharedSpent: two replicas sharing a state directory resume a state
// once between them; an expired record does not hold a new state back;
// an id that is not hex is refused before it names a file.
func TestSharedSpent(t *testing.T) {
	dir := t.TempDir()
	now := time.Unix(1_800_000_000, 0)
	replica := func() *requeststate.Spent {
		s, err := requeststate.NewSharedSpent(0, dir)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := replica(), replica()
	if err := a.Spend("00ff", now.Add(time.Minute), now); err != nil {
		t.Fatal(err)
	}
	if err := b.Spend("00ff", now.Add(time.Minute), now); !errors.Is(err, requeststate.ErrSpent) {
		t.Errorf("the other replica resumed it too: %v", err)
	}
	// Past its expiry, the record no longer holds (the state it names is
	// expired, and refused for that).
	if err := b.Spend("00ff", now.Add(3*time.Minute), now.Add(2*time.Minute)); err != nil {
		t.Errorf("an expired record: %v", err)
	}
	for _, id := range []string{"../x", "", "zz"} {
		if err := a.Spend(id, now.Add(time.Minute), now); !errors.Is(err, requeststate.ErrMalformed) {
			t.Errorf("id %q: %v", id, err)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "x")); err == nil {
		t.Error("an id named a file outside the directory")
	}
	if _, err := requeststate.NewSharedSpent(0, filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing directory was taken")
	}
}
