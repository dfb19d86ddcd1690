// Package heapfloor keeps the Go heap's room to grow between two
// collections at least a floor, for a long-running server whose live heap
// is small.
//
// Go collects when the heap has grown by GOGC percent (100 by default) of
// what the last collection left live. A server that keeps a few megabytes
// live but allocates fast (every script execution of toolscript makes and
// drops a wasm instance) then collects many times a second, and each
// collection costs CPU whatever it finds. After every collection, a Floor
// raises the GC percentage so that the next collection comes only once the
// heap has grown by at least the floor, and lowers it back to the base
// percentage as soon as the live heap is large enough for the base to
// allow that much: memory use grows by at most the floor, and only while
// the live heap is smaller than it. A memory limit (GOMEMLIMIT) still
// applies, and GOGC=off is left alone.
package heapfloor

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// Floor adjusts the GC percentage after each collection until Stop.
type Floor struct {
	floor uint64
	// base is the GC percentage the process started with (GOGC).
	base int

	mu      sync.Mutex
	stopped bool
	samples []metrics.Sample
	// adjusted, when set, is sent the percentage after each adjustment
	// (tests).
	adjusted chan int
}

const liveMetric = "/gc/heap/live:bytes"

// Start keeps the heap's growth between collections at least floor bytes
// until Stop. It does nothing (and Stop restores nothing) when the
// collector is off (GOGC=off).
func Start(floor uint64) *Floor {
	return start(floor, nil)
}

func start(floor uint64, adjusted chan int) *Floor {
	f := &Floor{floor: floor, samples: []metrics.Sample{{Name: liveMetric}}, adjusted: adjusted}
	// SetGCPercent returns the current percentage; set it straight back.
	f.base = debug.SetGCPercent(100)
	debug.SetGCPercent(f.base)
	if f.base < 0 {
		f.stopped = true
		return f
	}
	f.arm()
	return f
}

// sentinel is an object that becomes garbage at once: its finalizer runs
// after the collection that found it, and arms the next one. It holds a
// pointer so that it is not a tiny allocation, whose finalizer may never
// run.
type sentinel struct{ f *Floor }

func (f *Floor) arm() {
	runtime.SetFinalizer(&sentinel{f: f}, func(s *sentinel) {
		if s.f.adjust() {
			s.f.arm()
		}
	})
}

// adjust sets the percentage for the live heap the last collection left,
// and reports whether the floor is still running.
func (f *Floor) adjust() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return false
	}
	metrics.Read(f.samples)
	live := uint64(0)
	if f.samples[0].Value.Kind() == metrics.KindUint64 {
		live = f.samples[0].Value.Uint64()
	}
	p := Percent(f.base, f.floor, live)
	debug.SetGCPercent(p)
	if f.adjusted != nil {
		select {
		case f.adjusted <- p:
		default:
		}
	}
	return true
}

// Percent is the GC percentage that lets a heap of live bytes grow by at
// least floor bytes, and never less than base.
func Percent(base int, floor, live uint64) int {
	if live == 0 {
		live = 1
	}
	need := float64(floor) * 100 / float64(live)
	if need <= float64(base) {
		return base
	}
	return int(min(math.Ceil(need), math.MaxInt32))
}

// Stop ends the adjustments and restores the base percentage.
func (f *Floor) Stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.stopped {
		f.stopped = true
		debug.SetGCPercent(f.base)
	}
}
