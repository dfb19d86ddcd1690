package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/runtime/result"

	"github.com/toolscript/toolscript/host/sdk/sdkdocs"
)

// TestCheckAnswerBounded: however many and however long the diagnostics,
// check_script's text and structured content together stay within the
// docs tools' bound (sdkdocs.MaxAnswer), the counts stay whole and the
// diagnostics left out are counted.
func TestCheckAnswerBounded(t *testing.T) {
	for _, tc := range []struct {
		name          string
		count, length int
		omitted       bool
		unchecked     int // the length of why the types were not checked
	}{
		{"few", 3, 40, false, 0},
		{"many", 5000, 40, true, 0},
		{"long messages", 200, 100000, true, 0},
		{"escaped messages", 200, -1, true, 0},
		{"long reason unchecked", 3, 40, false, 100000},
	} {
		out := &CheckReport{Unchecked: strings.Repeat("r", tc.unchecked)}
		for i := range tc.count {
			sev := "error"
			if i%2 == 1 {
				sev = "warning"
			}
			out.Diagnostics = append(out.Diagnostics, CheckDiagnostic{Line: i + 1, Column: 1, EndLine: i + 1, EndColumn: 2,
				Severity: sev, Rule: "type", Message: message(tc.length)})
		}
		answer := boundedAnswer(out, sdkdocs.MaxAnswer-1000)
		structured, err := json.Marshal(answer)
		if err != nil {
			t.Fatal(err)
		}
		text := checkText(answer)
		if n := len([]rune(text)) + len([]rune(string(structured))); n > sdkdocs.MaxAnswer {
			t.Errorf("%s: %d characters", tc.name, n)
		}
		if answer.Errors+answer.Warnings != tc.count || len(answer.Diagnostics)+answer.Omitted != tc.count || (answer.Omitted > 0) != tc.omitted {
			t.Errorf("%s: %d errors, %d warnings, %d listed, %d omitted", tc.name, answer.Errors, answer.Warnings, len(answer.Diagnostics), answer.Omitted)
		}
		if tc.omitted && !strings.Contains(text, "more not listed") {
			t.Errorf("%s: the text does not say some are left out", tc.name)
		}
	}
}

// message is a message of n characters, or with n < 0 one of characters
// JSON escapes as six.
func message(n int) string {
	if n < 0 {
		return strings.Repeat("\x01", 900)
	}
	return strings.Repeat("é", n)
}

// failingChecker is a checker that cannot check: the module did not
// compile, say.
type failingChecker struct{ refusal *CheckReport }

func (f failingChecker) CheckScript(ctx context.Context, _ *sdkdocs.Docs, _ []byte, _ bool) (*CheckReport, error) {
	if f.refusal != nil {
		return f.refusal, nil
	}
	return nil, errors.New("compiling the checker module: out of memory")
}

func (failingChecker) MaxTypedBytes() int { return 1 << 16 }

// TestCheckThatFailsRunsUnchecked: with check: true, a script whose check
// itself failed (not the script's fault, and not a cancellation) runs,
// with a warning that says so; a refusal stops it with kind type.
func TestCheckThatFailsRunsUnchecked(t *testing.T) {
	for _, tc := range []struct {
		name    string
		checker failingChecker
		want    []string
	}{
		{"check failed", failingChecker{}, []string{`"result":2`, "the script was run unchecked: the check failed: compiling the checker module: out of memory"}},
		{"refused", failingChecker{refusal: &CheckReport{Refusal: &result.Error{Kind: result.Type, Message: "the script was not run"}}},
			[]string{`"kind":"type"`, "the script was not run"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, w, out := testStdio(t, Config{Checker: tc.checker})
			s.run(handle(s, w, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_script","arguments":{"script":"return 1 + 1","check":true}}}`))
			text := out.String()
			for _, want := range tc.want {
				if !strings.Contains(text, want) {
					t.Errorf("the answer lacks %q: %s", want, text)
				}
			}
		})
	}
}
