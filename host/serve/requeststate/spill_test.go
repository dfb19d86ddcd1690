package requeststate_test

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/serve/requeststate"
)

// TestSpillBounds: the spill directory keeps no prefix of an expired
// state (a new sealer, and every spill, prunes them, and leaves files not
// its own), and holds at most MaxSpillUserBytes of one user's prefixes
// and MaxSpillDirBytes in all: past them Seal refuses to spill, saying
// which bound, and writes nothing. (The files standing for other
// prefixes are sparse: their size is what counts.)
func TestSpillBounds(t *testing.T) {
	dir := t.TempDir()
	wall := time.Now()
	file := func(name string, size int64) string {
		t.Helper()
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := f.Truncate(size); err != nil {
			t.Fatal(err)
		}
		return name
	}
	listing := func() []string {
		t.Helper()
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return names
	}
	expired := file(requeststate.SpillName("alice", wall.Add(-time.Hour), "old"), 1<<20)
	foreign := file("spent-7f", 10)
	alices := file(requeststate.SpillName("alice", wall.Add(time.Hour), "live"), requeststate.MaxSpillUserBytes-(1<<20))
	s := newSealer(t, dir, newKey(t))
	if got := listing(); slices.Contains(got, expired) || !slices.Contains(got, foreign) || !slices.Contains(got, alices) {
		t.Fatalf("after NewSealer the directory holds %q: want the expired prefix gone, the others kept", got)
	}

	prefix := make([]byte, 3<<20) // random: it does not compress
	rand.Read(prefix)
	stateOf := func(user string) *requeststate.State {
		st := newState(prefix)
		st.Binding.User = user
		st.Expiry = wall.Add(10 * time.Minute)
		return st
	}
	before := listing()
	if _, err := s.Seal(stateOf("alice")); err == nil || !strings.Contains(err.Error(), "of this user's paused executions' prefixes") ||
		!strings.Contains(err.Error(), "512 MiB") {
		t.Errorf("alice's spill past her bound: %v", err)
	}
	if got := listing(); !slices.Equal(got, before) {
		t.Errorf("a refused spill changed the directory: %q, was %q", got, before)
	}
	bob := stateOf("bob")
	if _, err := s.Seal(bob); err != nil || bob.Spill == nil {
		t.Fatalf("bob's spill: %v (%+v)", err, bob.Spill)
	}

	// The directory as a whole: carol's prefixes fill it.
	file(requeststate.SpillName("carol", wall.Add(time.Hour), "big"), requeststate.MaxSpillDirBytes-requeststate.MaxSpillUserBytes)
	again := file(requeststate.SpillName("dave", wall.Add(-time.Hour), "old"), 1<<20)
	if _, err := s.Seal(stateOf("bob")); err == nil || !strings.Contains(err.Error(), "state_dir holds") || !strings.Contains(err.Error(), "2 GiB") {
		t.Errorf("a spill past the directory's bound: %v", err)
	}
	if slices.Contains(listing(), again) {
		t.Error("a spill left an expired state's prefix")
	}
}
