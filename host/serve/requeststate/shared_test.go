package requeststate_test

import (
	"errors"
	"fmt"
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
	if err := a.Spend("00ff", "u", now.Add(time.Minute), now); err != nil {
		t.Fatal(err)
	}
	if err := b.Spend("00ff", "u", now.Add(time.Minute), now); !errors.Is(err, requeststate.ErrSpent) {
		t.Errorf("the other replica resumed it too: %v", err)
	}
	// Past its expiry, the record no longer holds (the state it names is
	// expired, and refused for that).
	if err := b.Spend("00ff", "u", now.Add(3*time.Minute), now.Add(2*time.Minute)); err != nil {
		t.Errorf("an expired record: %v", err)
	}
	for _, id := range []string{"../x", "", "zz"} {
		if err := a.Spend(id, "u", now.Add(time.Minute), now); !errors.Is(err, requeststate.ErrMalformed) {
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

// TestSharedSweep: the sweep of the shared directory removes the records
// of expired states and only them: a file not named by a state's id (a
// kept prefix, here one whose bytes read as an expiry long past) is
// neither read whole nor removed.
func TestSharedSweep(t *testing.T) {
	dir := t.TempDir()
	now := time.Unix(1_800_000_000, 0)
	s, err := requeststate.NewSharedSpent(0, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Spend("00aa", "u", now.Add(time.Minute), now); err != nil {
		t.Fatal(err)
	}
	kept := filepath.Join(dir, "paused-0123-1-00bb.trace.zst")
	if err := os.WriteFile(kept, []byte("1"), 0o600); err != nil {
		t.Fatal(err)
	}
	later := now.Add(time.Hour)
	for i := range 256 { // a sweep comes every 256 spends
		if err := s.Spend(fmt.Sprintf("%04x", 0x1000+i), "u", later.Add(time.Minute), later); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "00aa")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the expired record is still there: %v", err)
	}
	if _, err := os.Stat(kept); err != nil {
		t.Errorf("the sweep removed a file that is not a record: %v", err)
	}
}
