package effects

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
)

// scripted is an Asker that gives its answers in order and counts the
// Questions it was put.
type scripted struct {
	answers []Answer
	asked   []Question
}

func (s *scripted) Ask(q Question) (Answer, error) {
	s.asked = append(s.asked, q)
	a := s.answers[0]
	s.answers = s.answers[1:]
	return a, nil
}

func post(url string) Effect {
	return Effect{Op: OpCall, Function: "sdk.shop.add_pet", Method: "POST", URL: url, Headers: map[string]string{}, Body: []byte(`{"name":"Rex"}`)}
}

func TestRunAskWithoutAsker(t *testing.T) {
	var nilRun *Run
	for _, r := range []*Run{nilRun, New(Real), New(Real).WithAsker(nil)} {
		if _, err := r.Ask(Question{Rule: "x"}); !errors.Is(err, ErrNoAsker) {
			t.Errorf("Ask without an Asker: %v, want ErrNoAsker", err)
		}
	}
	if a, err := Refuse.Ask(Question{}); a != Unasked || err != nil {
		t.Errorf("Refuse: %v, %v", a, err)
	}
}

type failing struct{}

func (failing) Ask(Question) (Answer, error) { return Approve, errNoAnswer }

var errNoAnswer = errors.New("no answer within 10m0s")

func TestRunAskError(t *testing.T) {
	a, err := New(Real).WithAsker(failing{}).Ask(Question{Effect: post("http://x/pets"), Rule: "posts need a person"})
	if !errors.Is(err, errNoAnswer) || a != Decline {
		t.Errorf("got %v, %v; want the Asker's error and Decline", a, err)
	}
}

// TestRunAskStopsTheClock: the runtime's hook is told when the wait
// starts and when it ends, around the question.
func TestRunAskStopsTheClock(t *testing.T) {
	var events []string
	person := asker(func(Question) (Answer, error) { events = append(events, "asked"); return Approve, nil })
	r := New(Real).WithAsker(person)
	r.OnWait(func() func() {
		events = append(events, "clock stopped")
		return func() { events = append(events, "clock started") }
	})
	if _, err := r.Ask(Question{Rule: "x"}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(events, ", "); got != "clock stopped, asked, clock started" {
		t.Errorf("events: %s", got)
	}
}

type asker func(Question) (Answer, error)

func (f asker) Ask(q Question) (Answer, error) { return f(q) }

// TestRunAskOneAtATime: questions asked at once (parallel sdk calls) are
// put one after the other; the second waits for the first's answer.
func TestRunAskOneAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var inside, most atomic.Int32
		answers := make(chan Answer)
		person := asker(func(Question) (Answer, error) {
			n := inside.Add(1)
			if n > most.Load() {
				most.Store(n)
			}
			defer inside.Add(-1)
			return <-answers, nil
		})
		r := New(Real).WithAsker(person)
		got := make(chan Answer, 3)
		for range 3 {
			go func() {
				a, _ := r.Ask(Question{Rule: "x"})
				got <- a
			}()
		}
		for i := range 3 {
			synctest.Wait() // every asker is blocked: one on its answer, the others on their turn
			if n := inside.Load(); n != 1 {
				t.Fatalf("before answer %d, %d questions are being asked", i+1, n)
			}
			answers <- Approve
			<-got
		}
		if most.Load() != 1 {
			t.Errorf("%d questions were asked at once", most.Load())
		}
	})
}

func TestPlanAsker(t *testing.T) {
	pets, other := post("http://x/pets"), post("http://x/owners")
	write := Effect{Op: OpWrite, Path: "a.txt", SHA256: shaA}
	plan, err := PlanOf(raws(t, []Effect{pets, write}))
	if err != nil {
		t.Fatal(err)
	}
	person := &scripted{answers: []Answer{Approve, Cancel}}
	for _, tt := range []struct {
		name   string
		next   Asker
		asks   []Effect
		want   []Answer
		person int // how many of the asks reached the person
	}{
		{"held effects are approved", nil, []Effect{write, pets}, []Answer{Approve, Approve}, 0},
		{"each entry approves one effect", nil, []Effect{pets, pets}, []Answer{Approve, Unasked}, 0},
		{"what the plan does not hold is nobody's to approve", nil, []Effect{other, {Op: OpWrite, Path: "a.txt", SHA256: shaB}}, []Answer{Unasked, Unasked}, 0},
		{"or asked of the next asker", person, []Effect{other, pets, other}, []Answer{Approve, Approve, Cancel}, 2},
	} {
		a := plan.Asker(tt.next)
		for i, e := range tt.asks {
			if got, err := a.Ask(Question{Effect: e, Rule: "r"}); err != nil || got != tt.want[i] {
				t.Errorf("%s: ask %d: %v, %v; want %v", tt.name, i+1, got, err, tt.want[i])
			}
		}
		if tt.next != nil && len(person.asked) != tt.person {
			t.Errorf("%s: the person was asked %d times, want %d", tt.name, len(person.asked), tt.person)
		}
	}
}
