package limit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
)

// Bytes is a budget of bytes held at once, such as the responses a
// script's calls hold on the host: a weighted semaphore whose waiters are
// served in the order they came (a large request is not starved by small
// ones). Its name ("max_host_bytes") goes into its errors. A Bytes is safe
// for concurrent use.
type Bytes struct {
	name string
	size int64
	sem  *semaphore.Weighted
	held atomic.Int64

	mu      sync.Mutex
	waiters int
	changed chan struct{} // closed when waiters changes
}

// NewBytes returns a budget of size bytes named name; size must be
// positive.
func NewBytes(name string, size int64) (*Bytes, error) {
	if size <= 0 {
		return nil, fmt.Errorf("limit: %s: a budget of %d bytes: it must be positive", name, size)
	}
	return &Bytes{name: name, size: size, sem: semaphore.NewWeighted(size), changed: make(chan struct{})}, nil
}

// Name is the budget's name; Size its bytes.
func (b *Bytes) Name() string { return b.name }
func (b *Bytes) Size() int64  { return b.size }

// BytesError is a request of bytes a budget did not grant.
type BytesError struct {
	// Name and Size are the budget's.
	Name string
	Size int64
	// Need is how many bytes were asked for.
	Need int64
	// Waited is set when the request fitted the budget but its context
	// ended while it waited for other holders to release (the context's
	// error), or when it did not wait (ErrFull). When nil, Need alone is
	// more than Size.
	Waited error
}

func (e *BytesError) Error() string {
	if e.Waited == ErrFull {
		return fmt.Sprintf("%d bytes do not fit in what is left of %s (%d)", e.Need, e.Name, e.Size)
	}
	if e.Waited != nil {
		return fmt.Sprintf("waited for %d bytes of %s (%d) until the wait ended: %v", e.Need, e.Name, e.Size, e.Waited)
	}
	return fmt.Sprintf("%d bytes are more than %s (%d)", e.Need, e.Name, e.Size)
}

func (e *BytesError) Unwrap() error { return e.Waited }

// Acquire takes n bytes, waiting while the others' holdings leave too few,
// as long as ctx lives. It fails at once with a *BytesError when n is more
// than the whole budget, and with one wrapping ctx's error when ctx ends
// first.
func (b *Bytes) Acquire(ctx context.Context, n int64) error {
	if n <= 0 {
		return nil
	}
	if n > b.size {
		return &BytesError{Name: b.name, Size: b.size, Need: n}
	}
	if b.sem.TryAcquire(n) {
		b.held.Add(n)
		return nil
	}
	b.addWaiters(1)
	err := b.sem.Acquire(ctx, n)
	b.addWaiters(-1)
	if err != nil {
		return &BytesError{Name: b.name, Size: b.size, Need: n, Waited: err}
	}
	b.held.Add(n)
	return nil
}

// TryAcquire takes n bytes if the others' holdings leave enough now, and
// fails at once with a *BytesError otherwise (Waited is ErrFull when n
// would fit the whole budget).
func (b *Bytes) TryAcquire(n int64) error {
	if n <= 0 {
		return nil
	}
	if n > b.size {
		return &BytesError{Name: b.name, Size: b.size, Need: n}
	}
	if !b.sem.TryAcquire(n) {
		return &BytesError{Name: b.name, Size: b.size, Need: n, Waited: ErrFull}
	}
	b.held.Add(n)
	return nil
}

// ErrFull is why TryAcquire did not take bytes that fit the budget: the
// others hold too much of it.
var ErrFull = errors.New("the budget is held by others")

// Release gives back n bytes taken by Acquire or TryAcquire.
func (b *Bytes) Release(n int64) {
	if n > 0 {
		b.held.Add(-n)
		b.sem.Release(n)
	}
}

// Held is how many bytes are taken and not yet given back.
func (b *Bytes) Held() int64 { return b.held.Load() }

// Waiters is how many Acquire calls are waiting; Changed is closed when
// that number next changes (for observers that wait for it).
func (b *Bytes) Waiters() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waiters
}

func (b *Bytes) Changed() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.changed
}

func (b *Bytes) addWaiters(d int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.waiters += d
	close(b.changed)
	b.changed = make(chan struct{})
}

// Hold is bytes held in several budgets at once (an execution's and the
// server's), which grows and shrinks as one.
type Hold struct {
	budgets []*Bytes

	mu   sync.Mutex
	held int64
}

// Reserve takes n bytes from each of budgets, in order (waiting for each
// as Acquire does, holding the earlier ones meanwhile); on failure nothing
// is held. Nil budgets are skipped.
func Reserve(ctx context.Context, n int64, budgets ...*Bytes) (*Hold, error) {
	h := &Hold{budgets: make([]*Bytes, 0, len(budgets))}
	for _, b := range budgets {
		if b != nil {
			h.budgets = append(h.budgets, b)
		}
	}
	if err := h.Resize(ctx, n); err != nil {
		return nil, err
	}
	return h, nil
}

// Held is how many bytes h holds in each budget.
func (h *Hold) Held() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.held
}

// Resize makes h hold n bytes: growing waits as Reserve does, and fails at
// once when n is more than a whole budget (on failure h holds what it
// held); shrinking gives the difference back at once.
func (h *Hold) Resize(ctx context.Context, n int64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	n = max(n, 0)
	d := n - h.held
	if d <= 0 {
		for _, b := range h.budgets {
			b.Release(-d)
		}
		h.held = n
		return nil
	}
	for _, b := range h.budgets {
		if n > b.size { // would never fit, whatever the others release
			return &BytesError{Name: b.name, Size: b.size, Need: n}
		}
	}
	for i, b := range h.budgets {
		if err := b.Acquire(ctx, d); err != nil {
			for _, got := range h.budgets[:i] {
				got.Release(d)
			}
			return err
		}
	}
	h.held = n
	return nil
}

// Release gives back everything h holds; h may be released again, or be
// nil.
func (h *Hold) Release() {
	if h == nil {
		return
	}
	_ = h.Resize(context.Background(), 0) // shrinking: no error
}

// KeyedBytes are budgets of bytes of one size, one for each key (such as
// a user), kept while the key holds any. Safe for concurrent use.
type KeyedBytes[K comparable] struct {
	name string
	size int64

	mu   sync.Mutex
	keys map[K]*keyedBudget
}

type keyedBudget struct {
	bytes *Bytes
	refs  int // holds not yet released
}

// NewKeyedBytes returns budgets of size bytes per key, named name; size
// must be positive.
func NewKeyedBytes[K comparable](name string, size int64) (*KeyedBytes[K], error) {
	if size <= 0 {
		return nil, fmt.Errorf("limit: %s: a budget of %d bytes: it must be positive", name, size)
	}
	return &KeyedBytes[K]{name: name, size: size, keys: map[K]*keyedBudget{}}, nil
}

// Size is the bytes of each key's budget.
func (k *KeyedBytes[K]) Size() int64 { return k.size }

// Held is how many bytes key holds.
func (k *KeyedBytes[K]) Held(key K) int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	if kb := k.keys[key]; kb != nil {
		return kb.bytes.Held()
	}
	return 0
}

// Reserve takes n bytes of key's budget at once, failing with a
// *BytesError when key holds too much of it (a key never waits for its
// own), and then n bytes of each of shared, waiting for them as Reserve
// does as long as ctx lives. release gives all of them back, once; on
// failure nothing is held.
func (k *KeyedBytes[K]) Reserve(ctx context.Context, key K, n int64, shared ...*Bytes) (release func(), err error) {
	k.mu.Lock()
	kb := k.keys[key]
	if kb == nil {
		b, _ := NewBytes(k.name, k.size) // positive: NewKeyedBytes
		kb = &keyedBudget{bytes: b}
		k.keys[key] = kb
	}
	kb.refs++
	err = kb.bytes.TryAcquire(n)
	k.mu.Unlock()
	var h *Hold
	if err == nil {
		if h, err = Reserve(ctx, n, shared...); err != nil {
			kb.bytes.Release(n)
		}
	}
	done := func() {
		k.mu.Lock()
		defer k.mu.Unlock()
		if kb.refs--; kb.refs == 0 {
			delete(k.keys, key)
		}
	}
	if err != nil {
		done()
		return nil, err
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			h.Release()
			kb.bytes.Release(n)
			done()
		})
	}, nil
}
