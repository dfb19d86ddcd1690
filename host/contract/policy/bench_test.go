package policy_test

import (
	"fmt"
	"testing"

	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/contract/policy"
	"github.com/toolscript/toolscript/internal/testrules"
)

// BenchmarkDecideHundredRules: a safe GET decided by 100 rules, none
// matching (target for one rule: at most 5 µs).
func BenchmarkDecideHundredRules(b *testing.B) {
	set, err := policy.Compile(testrules.Hundred(), effects.ActionAllow)
	if err != nil {
		b.Fatal(err)
	}
	who := &policy.Who{Sub: "ann"}
	b.ReportAllocs()
	for b.Loop() {
		f := effects.Facts{Kind: "call", Safe: true, Method: "GET", Function: "sdk.pets.get_pet", Params: map[string]any{"petId": int64(7)}}
		if v := set.Decide(&f, who); v.Rule != "" {
			b.Fatal(v)
		}
	}
}

// BenchmarkDecideHundredRulesEvaluated: the same call decided by 100
// rules that no guard passes over (none compares a field with ==):
// CEL evaluates every one.
func BenchmarkDecideHundredRulesEvaluated(b *testing.B) {
	rules := make([]policy.Rule, 100)
	for i := range rules {
		rules[i] = policy.Rule{Name: fmt.Sprintf("rule %d", i), When: fmt.Sprintf(`effect.url.contains("/other%d/") && effect.method.startsWith("P")`, i), Action: "deny"}
	}
	rules[0].When = `!effect.safe && effect.url.contains("/other/")`
	set, err := policy.Compile(rules, effects.ActionAllow)
	if err != nil {
		b.Fatal(err)
	}
	who := &policy.Who{Sub: "ann"}
	b.ReportAllocs()
	for b.Loop() {
		f := effects.Facts{Kind: "call", Safe: true, Method: "GET", Function: "sdk.pets.get_pet", URL: "http://127.0.0.1/pets/7", Params: map[string]any{"petId": int64(7)}}
		if v := set.Decide(&f, who); v.Rule != "" {
			b.Fatal(v)
		}
	}
}
