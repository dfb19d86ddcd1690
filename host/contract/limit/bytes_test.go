package limit

import (
	"context"
	"errors"
	"testing"

	"github.com/toolscript/toolscript/internal/testwait"
)

func TestBytes(t *testing.T) {
	tests := []struct {
		name    string
		size    int64
		held    []int64 // acquired first
		need    int64
		ok      bool
		tooMuch bool // fails at once: more than the whole budget
	}{
		{name: "free", size: 10, need: 10, ok: true},
		{name: "what is left", size: 10, held: []int64{4, 3}, need: 3, ok: true},
		{name: "nothing", size: 10, held: []int64{10}, need: 0, ok: true},
		{name: "more than the budget", size: 10, need: 11, tooMuch: true},
		{name: "more than the budget, others holding", size: 10, held: []int64{5}, need: 11, tooMuch: true},
		{name: "more than is left", size: 10, held: []int64{8}, need: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := NewBytes("max_test_bytes", tt.size)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range tt.held {
				if err := b.Acquire(context.Background(), n); err != nil {
					t.Fatal(err)
				}
			}
			// A request that must wait fails when its context ends.
			ctx, cancel := context.WithCancel(context.Background())
			if !tt.ok && !tt.tooMuch {
				go func() {
					testwait.Waiters(t, b, 1)
					cancel()
				}()
			}
			err = b.Acquire(ctx, tt.need)
			cancel()
			if tt.ok {
				if err != nil {
					t.Fatalf("Acquire(%d): %v", tt.need, err)
				}
				return
			}
			var be *BytesError
			if !errors.As(err, &be) || be.Name != "max_test_bytes" || be.Size != tt.size || be.Need != tt.need {
				t.Fatalf("Acquire(%d): %v, want a BytesError of the budget", tt.need, err)
			}
			if tt.tooMuch != (be.Waited == nil) || (!tt.tooMuch && !errors.Is(err, context.Canceled)) {
				t.Errorf("Acquire(%d): %v (waited: %v)", tt.need, err, be.Waited)
			}
			if b.Waiters() != 0 {
				t.Errorf("%d waiters left", b.Waiters())
			}
		})
	}
	if _, err := NewBytes("x", 0); err == nil {
		t.Error("NewBytes(0): no error")
	}
}

// TestBytesWaitsForRelease: a request waits while others hold the budget,
// and gets its bytes once they are released.
func TestBytesWaitsForRelease(t *testing.T) {
	b, _ := NewBytes("max_test_bytes", 10)
	if err := b.Acquire(context.Background(), 8); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- b.Acquire(context.Background(), 5) }()
	testwait.Waiters(t, b, 1)
	select {
	case err := <-done:
		t.Fatalf("Acquire returned while the budget was held: %v", err)
	default:
	}
	b.Release(8)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if b.Waiters() != 0 {
		t.Errorf("%d waiters left", b.Waiters())
	}
	if !b.sem.TryAcquire(5) || b.sem.TryAcquire(1) {
		t.Error("after releasing 8 and taking 5, 5 bytes should be left")
	}
}

// TestHold: a Hold takes from every budget, grows and shrinks as one, and
// on a failure holds what it held before.
func TestHold(t *testing.T) {
	exec, _ := NewBytes("max_host_bytes", 10)
	total, _ := NewBytes("max_host_bytes_total", 15)
	left := func(b *Bytes) int64 {
		var n int64
		for b.sem.TryAcquire(1) {
			n++
		}
		b.Release(n)
		return n
	}
	h, err := Reserve(context.Background(), 6, exec, nil, total)
	if err != nil {
		t.Fatal(err)
	}
	if h.Held() != 6 || left(exec) != 4 || left(total) != 9 {
		t.Fatalf("held %d; left %d and %d, want 6; 4 and 9", h.Held(), left(exec), left(total))
	}
	// More than one budget: nothing more is held.
	var be *BytesError
	if err := h.Resize(context.Background(), 11); !errors.As(err, &be) || be.Name != "max_host_bytes" || be.Waited != nil {
		t.Fatalf("Resize(11): %v", err)
	}
	if h.Held() != 6 || left(exec) != 4 || left(total) != 9 {
		t.Fatalf("after a failed Resize: held %d; left %d and %d", h.Held(), left(exec), left(total))
	}
	// The second budget short: the first gives back what it took.
	other, err := Reserve(context.Background(), 7, total)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		testwait.Waiters(t, total, 1)
		cancel()
	}()
	if err := h.Resize(ctx, 9); !errors.As(err, &be) || be.Name != "max_host_bytes_total" || !errors.Is(err, context.Canceled) {
		t.Fatalf("Resize(9) with the total short: %v", err)
	}
	if h.Held() != 6 || left(exec) != 4 {
		t.Fatalf("after a failed Resize: held %d, left %d", h.Held(), left(exec))
	}
	other.Release()
	if err := h.Resize(context.Background(), 2); err != nil || left(exec) != 8 || left(total) != 13 {
		t.Fatalf("Resize(2): %v; left %d and %d", err, left(exec), left(total))
	}
	h.Release()
	h.Release()
	var none *Hold
	none.Release()
	if left(exec) != 10 || left(total) != 15 {
		t.Errorf("after Release: left %d and %d", left(exec), left(total))
	}
}

// TestKeyedBytes: a key's budget refuses at once what it cannot hold,
// leaving the shared budget untouched; within it, the shared budget is
// waited for; releases give both back, and a key that holds nothing is
// forgotten.
func TestKeyedBytes(t *testing.T) {
	shared, err := NewBytes("total", 100)
	if err != nil {
		t.Fatal(err)
	}
	keyed, err := NewKeyedBytes[string]("per_user", 60)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	releaseA, err := keyed.Reserve(ctx, "a", 50, shared)
	if err != nil {
		t.Fatal(err)
	}
	var be *BytesError
	if _, err := keyed.Reserve(ctx, "a", 20, shared); !errors.As(err, &be) || be.Waited != ErrFull || be.Name != "per_user" {
		t.Fatalf("over a's budget: %v", err)
	}
	if _, err := keyed.Reserve(ctx, "b", 61, shared); !errors.As(err, &be) || be.Waited != nil {
		t.Fatalf("more than a key's budget: %v", err)
	}
	if shared.Held() != 50 || keyed.Held("a") != 50 || keyed.Held("b") != 0 {
		t.Fatalf("held %d shared, %d by a, %d by b; want 50, 50, 0", shared.Held(), keyed.Held("a"), keyed.Held("b"))
	}
	// b fits its own budget and waits for the shared one.
	got := make(chan error, 1)
	go func() {
		release, err := keyed.Reserve(ctx, "b", 60, shared)
		if err == nil {
			release()
		}
		got <- err
	}()
	testwait.Waiters(t, shared, 1)
	releaseA()
	releaseA() // once
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if shared.Held() != 0 || len(keyed.keys) != 0 {
		t.Errorf("after the releases: %d shared held, %d keys kept", shared.Held(), len(keyed.keys))
	}
	// A wait that ends holds nothing.
	release, _ := keyed.Reserve(ctx, "a", 60, shared)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := keyed.Reserve(cancelled, "b", 60, shared); !errors.As(err, &be) || be.Waited == nil || be.Name != "total" {
		t.Fatalf("a cancelled wait: %v", err)
	}
	if keyed.Held("b") != 0 || shared.Held() != 60 {
		t.Errorf("after a cancelled wait: b holds %d, %d shared held", keyed.Held("b"), shared.Held())
	}
	release()
}
