package heapfloor

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

func TestPercent(t *testing.T) {
	for _, c := range []struct {
		name        string
		base        int
		floor, live uint64
		want        int
	}{
		{"small heap: raised to the floor", 100, 32 << 20, 8 << 20, 400},
		{"rounded up", 100, 32 << 20, 3 << 20, 1067},
		{"live heap as large as the floor: the base", 100, 32 << 20, 32 << 20, 100},
		{"large heap: the base", 100, 32 << 20, 200 << 20, 100},
		{"a higher base is kept", 800, 32 << 20, 8 << 20, 800},
		{"nothing live yet: capped", 100, 32 << 20, 0, math.MaxInt32},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Percent(c.base, c.floor, c.live); got != c.want {
				t.Errorf("Percent(%d, %d, %d) = %d, want %d", c.base, c.floor, c.live, got, c.want)
			}
		})
	}
}

func gcPercent(t *testing.T) int {
	t.Helper()
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

// collect runs collections until the floor has adjusted the percentage
// after one that began after the call, and returns that percentage. The
// finalizer that adjusts it runs after a collection has found its
// sentinel; an adjustment already under way may have read an older
// collection's figures, so the second adjustment from now is taken: its
// sentinel was made by the first, so a later collection found it.
func collect(adjusted chan int) int {
	select {
	case <-adjusted:
	default:
	}
	var p int
	for range 2 {
		for received := false; !received; {
			runtime.GC()
			select {
			case p = <-adjusted:
				received = true
			default:
				runtime.Gosched()
			}
		}
	}
	return p
}

// TestFloorFollowsTheLiveHeap checks, in a process whose live heap is a
// few megabytes, that the percentage goes up after a collection so that
// the heap may grow by the floor, back to the base while a live heap
// larger than the floor is kept, and to the base for good after Stop.
func TestFloorFollowsTheLiveHeap(t *testing.T) {
	base := debug.SetGCPercent(100)
	defer debug.SetGCPercent(base)
	const floor = 64 << 20
	adjusted := make(chan int, 1)
	f := start(floor, adjusted)
	defer f.Stop()

	p := collect(adjusted)
	if p <= 100 || gcPercent(t) != p {
		t.Fatalf("with a small live heap and a floor of 64 MB the percentage is %d (set %d), want more than 100", p, gcPercent(t))
	}
	big := make([]byte, 2*floor)
	for i := range big {
		big[i] = 1
	}
	p = collect(adjusted)
	runtime.KeepAlive(big)
	if p != 100 {
		t.Fatalf("with a live heap of twice the floor the percentage is %d, want the base 100", p)
	}
	big = nil
	if p = collect(adjusted); p <= 100 {
		t.Fatalf("once the large heap is garbage the percentage is %d, want more than 100", p)
	}
	f.Stop()
	if got := gcPercent(t); got != 100 {
		t.Fatalf("after Stop the percentage is %d, want the base 100", got)
	}
	runtime.GC()
	runtime.GC()
	if got := gcPercent(t); got != 100 {
		t.Fatalf("collections after Stop changed the percentage to %d", got)
	}
}

// TestFloorLeavesGCOffAlone checks that a process with the collector off
// (GOGC=off) keeps it off.
func TestFloorLeavesGCOffAlone(t *testing.T) {
	base := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(base)
	adjusted := make(chan int, 1)
	f := start(32<<20, adjusted)
	runtime.GC()
	f.Stop()
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Fatalf("the percentage became %d, want -1 (off)", got)
	}
}
