package mcpserver

import (
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestProgressReporter(t *testing.T) {
	// Time here is synctest's: the reports' spread and the reporter's
	// interval are exact, whatever the machine's load.
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var sent []progressUpdate
		var times []time.Time
		p := newProgressReporter(50*time.Millisecond, func(u progressUpdate) {
			mu.Lock()
			sent = append(sent, u)
			times = append(times, time.Now())
			mu.Unlock()
		})
		total := 1000.0
		start := time.Now()
		for i := 1; i <= 1000; i++ {
			p.report(float64(i), &total, "")
			if i == 500 {
				p.report(400, nil, "backwards") // skipped
				p.report(math.NaN(), nil, "")   // skipped
			}
			time.Sleep(300 * time.Microsecond) // the behaviour under test: reports spread over time
		}
		p.finish()
		elapsed := time.Since(start)
		p.report(2000, nil, "after finish") // nothing is sent after finish

		mu.Lock()
		defer mu.Unlock()
		if len(sent) == 0 || sent[len(sent)-1].Progress != 1000 {
			t.Fatalf("sent %+v: want the last update, 1000", sent)
		}
		// The reporter's own clock keeps updates an interval apart, so this
		// bound holds however loaded the machine is (a slower run has more
		// room): not a duration target.
		if max := int(elapsed/(50*time.Millisecond)) + 2; len(sent) > max {
			t.Errorf("%d updates in %s, more than %d", len(sent), elapsed, max)
		}
		for i := 1; i < len(sent); i++ {
			if sent[i].Progress <= sent[i-1].Progress {
				t.Errorf("progress went from %v to %v", sent[i-1].Progress, sent[i].Progress)
			}
			// All but the final flush keep the interval.
			if i < len(sent)-1 && times[i].Sub(times[i-1]) < 45*time.Millisecond {
				t.Errorf("updates %d and %d only %s apart", i-1, i, times[i].Sub(times[i-1]))
			}
		}
		if *sent[0].Total != 1000 {
			t.Errorf("total %v", *sent[0].Total)
		}
	})
}

func TestProgressReporterFirstAtOnce(t *testing.T) {
	got := make(chan progressUpdate, 10)
	p := newProgressReporter(time.Hour, func(u progressUpdate) { got <- u })
	p.report(1, nil, "first")
	select {
	case u := <-got:
		if u.Progress != 1 || u.Message != "first" || u.Total != nil {
			t.Errorf("first update %+v", u)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the first update waited")
	}
	p.report(2, nil, "second") // held back by the interval...
	p.finish()                 // ...and flushed at the end
	if u := <-got; u.Progress != 2 {
		t.Errorf("final update %+v", u)
	}
}

func TestProgressReporterUpstream(t *testing.T) {
	// An upstream's progress keeps the call's progress increasing and the
	// script's total, and says what the upstream reported; the script's
	// own later progress is still taken.
	got := make(chan progressUpdate, 10)
	p := newProgressReporter(time.Nanosecond, func(u progressUpdate) { got <- u })
	five := 5.0
	p.upstream("sdk.ev.op", 1, &five, "") // before the script reported anything: 0
	u := <-got
	if u.Progress != 0 || u.Total != nil || u.Message != "sdk.ev.op: 1/5" {
		t.Errorf("first upstream update %+v", u)
	}
	ten := 10.0
	p.report(3, &ten, "mine")
	<-got
	p.upstream("sdk.ev.op", 2, nil, "half")
	u = <-got
	if u.Progress <= 3 || u.Progress >= 3.000001 || u.Total == nil || *u.Total != 10 || u.Message != "sdk.ev.op: half (2)" {
		t.Errorf("upstream update after the script's %+v", u)
	}
	p.report(4, &ten, "mine again")
	if u := <-got; u.Progress != 4 {
		t.Errorf("the script's next update %+v", u)
	}
	p.finish()
}
