package luau

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// TestDeadlinePauses: the limit counts only the time outside waits, with
// waits that overlap, and the caller's cancellation still ends it during
// a wait.
func TestDeadlinePauses(t *testing.T) {
	for _, tt := range []struct {
		name string
		// steps: run for a duration, or start ("+") or end ("-") a wait.
		steps []any
		// ends is how long after the start the limit of 10s passes.
		ends time.Duration
	}{
		{"no wait", nil, 10 * time.Second},
		{"one wait", []any{4 * time.Second, "+", time.Hour, "-"}, time.Hour + 10*time.Second},
		{"two waits", []any{"+", time.Minute, "-", time.Second, "+", time.Minute, "-"}, 2*time.Minute + 10*time.Second},
		{"overlapping waits", []any{"+", time.Minute, "+", time.Minute, "-", time.Minute, "-"}, 3*time.Minute + 10*time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				d := newDeadline(context.Background(), 10*time.Second)
				defer d.release()
				var resumes []func()
				for _, step := range tt.steps {
					switch s := step.(type) {
					case time.Duration:
						time.Sleep(s)
					case string:
						if s == "+" {
							resumes = append(resumes, d.pause())
						} else {
							resumes[len(resumes)-1]()
							resumes = resumes[:len(resumes)-1]
						}
					}
					if d.passed() {
						t.Fatalf("the limit passed at %s", time.Since(start))
					}
				}
				if at, ok := d.Deadline(); !ok || at.Sub(start) != tt.ends {
					t.Errorf("Deadline is %s after the start, want %s", at.Sub(start), tt.ends)
				}
				<-d.Done()
				if got := time.Since(start); got != tt.ends || !d.passed() || d.Err() != context.DeadlineExceeded {
					t.Errorf("ended after %s (%v), want %s", got, d.Err(), tt.ends)
				}
			})
		})
	}
}

func TestDeadlineCancelledDuringWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		d := newDeadline(ctx, time.Second)
		defer d.release()
		resume := d.pause()
		defer resume()
		go func() { time.Sleep(time.Hour); cancel() }()
		<-d.Done()
		if d.Err() != context.Canceled || d.passed() {
			t.Errorf("a cancellation during a wait: %v, passed %v", d.Err(), d.passed())
		}
	})
}
