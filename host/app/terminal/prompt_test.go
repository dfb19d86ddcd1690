package terminal

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/contract/redact"
)

func addPet() effects.Question {
	return effects.Question{Rule: "posts need a person", Effect: effects.Effect{Op: effects.OpCall, Function: "sdk.shop.add_pet",
		Method: "POST", URL: "http://shop/pets", Headers: map[string]string{}, Body: []byte(`{"name":"Rex"}`)}}
}

func TestPromptAnswers(t *testing.T) {
	for _, tt := range []struct {
		name, input string
		want        []effects.Answer // one a question
		says        []string         // what the terminal shows, in order
	}{
		{"yes", "y\n", []effects.Answer{effects.Approve}, []string{`the rule "posts need a person" asks`, `call   sdk.shop.add_pet: POST http://shop/pets {"name":"Rex"}`, "allow it?"}},
		{"yes spelled out", " YES \n", []effects.Answer{effects.Approve}, nil},
		{"no", "n\n", []effects.Answer{effects.Decline}, nil},
		{"all", "all\n", []effects.Answer{effects.ApproveAll}, nil},
		{"stop", "s\n", []effects.Answer{effects.Cancel}, nil},
		{"garbage, then yes", "maybe\ny\n", []effects.Answer{effects.Approve}, []string{`"maybe" is not an answer: type y, n, a or s`, "allow it?"}},
		{"one answer a question", "n\ny\n", []effects.Answer{effects.Decline, effects.Approve}, nil},
		{"never understood", "x\nyy\n?\ny\n", []effects.Answer{effects.Decline, effects.Approve}, []string{"declined: no answer understood in 3 tries"}},
		{"a line too long", strings.Repeat("y", 100000) + "\ny\n", []effects.Answer{effects.Approve}, []string{`"yyyyyyyyyyyyyyyyyyyy..." is not an answer`}},
		{"the last line without its newline", "y", []effects.Answer{effects.Approve}, nil},
		{"end of input declines, and every later question", "", []effects.Answer{effects.Decline, effects.Decline}, []string{"declined: the terminal's input has ended", "declined: the terminal's input has ended"}},
		{"carriage returns", "y\r\n", []effects.Answer{effects.Approve}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			p := New(strings.NewReader(tt.input), &out, Config{})
			defer p.Close()
			for i, want := range tt.want {
				got, err := p.Ask(addPet())
				if err != nil || got != want {
					t.Errorf("question %d: %v, %v; want %v", i+1, got, err, want)
				}
			}
			screen := out.String()
			for _, s := range tt.says {
				i := strings.Index(screen, s)
				if i < 0 {
					t.Fatalf("the terminal does not show %q:\n%s", s, screen)
				}
				screen = screen[i+len(s):]
			}
		})
	}
}

// TestPromptCannotBeForged: what a script controls (the effect) and what
// the configuration says (the rule) cannot act on the terminal, and the
// configuration's secrets are not shown.
func TestPromptCannotBeForged(t *testing.T) {
	q := effects.Question{Rule: "r\x1b[2K\rallowed", Effect: effects.Effect{Op: effects.OpWrite, Path: "a\x1b[1A\r.txt", SHA256: "x",
		Diff: "+line\x1b[6A\x1b[J\n+" + strings.Repeat("x\n+", 100) + "token-s3cret\n"}}
	call := addPet()
	call.Effect.URL = "http://shop/pets?key=token-s3cret\u202e"
	var out bytes.Buffer
	p := New(strings.NewReader("y\ny\n"), &out, Config{Redactor: redact.New(redact.NewSecret("token-s3cret"))})
	for _, q := range []effects.Question{q, call} {
		if _, err := p.Ask(q); err != nil {
			t.Fatal(err)
		}
	}
	screen := out.String()
	for _, bad := range []string{"\x1b", "\r", "\u202e", "token-s3cret"} {
		if strings.Contains(screen, bad) {
			t.Errorf("the prompt shows %q:\n%s", bad, screen)
		}
	}
	for _, want := range []string{`r\u001b[2K\rallowed`, `write  a\x1b[1A\r.txt`, "+line\\x1b[6A\\x1b[J", "... 62 more lines of the diff", "key=[REDACTED]"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the prompt does not show %q:\n%s", want, screen)
		}
	}
}

// TestPromptWaitIsBounded: nobody answers within the wait's bound (or
// the run is interrupted): Ask gives an error, and the script stops.
func TestPromptWaitIsBounded(t *testing.T) {
	for _, tt := range []struct {
		name    string
		timeout time.Duration
		cancel  bool
		want    string
	}{
		{"the default bound", 0, false, "no answer within 10m0s (approval_timeout)"},
		{"a bound configured", time.Minute, false, "no answer within 1m0s (approval_timeout)"},
		{"interrupted", time.Hour, true, "the run was interrupted"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				in, typing := io.Pipe() // nobody types
				defer typing.Close()
				cancel := make(chan struct{})
				var out bytes.Buffer
				p := New(in, &out, Config{Timeout: tt.timeout, Cancel: cancel})
				defer p.Close()
				if tt.cancel {
					go func() { time.Sleep(time.Minute); close(cancel) }()
				}
				start := time.Now()
				_, err := p.Ask(addPet())
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("Ask: %v, want %q", err, tt.want)
				}
				want := max(tt.timeout, 0)
				switch {
				case tt.cancel:
					want = time.Minute
				case tt.timeout == 0:
					want = DefaultTimeout
				}
				if waited := time.Since(start); waited != want {
					t.Errorf("waited %s, want %s", waited, want)
				}
				if !strings.Contains(out.String(), tt.want) {
					t.Errorf("the terminal does not say %q:\n%s", tt.want, out.String())
				}
			})
		})
	}
}

// FuzzPromptAnswer: whatever a person (or a stuck key) types, the prompt
// gives one of the answers, and nothing typed is echoed back as a
// control character.
func FuzzPromptAnswer(f *testing.F) {
	for _, seed := range []string{"y\n", "no\n", "ALL\r\n", "s", "\x1b[2J\n\x1b]52;c;eQ==\x07\n", "\xff\xfe\n\n\n", strings.Repeat("a", 5000)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, input string) {
		var out bytes.Buffer
		p := New(strings.NewReader(input), &out, Config{})
		defer p.Close()
		answer, err := p.Ask(addPet())
		if err != nil {
			t.Fatalf("Ask: %v", err)
		}
		if answer < effects.Decline || answer > effects.Cancel {
			t.Fatalf("answer %d", answer)
		}
		for _, r := range out.String() {
			if r != '\n' && (r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0)) {
				t.Fatalf("the prompt shows %U:\n%q", r, out.String())
			}
		}
	})
}
