package policy_test

import (
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
