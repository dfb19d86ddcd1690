// Package testrules holds the [[policy]] rule sets the benchmarks of
// rules share, so that each measures the same rules.
package testrules

import (
	"fmt"

	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/contract/policy"
)

// Hundred are 100 rules on functions and methods, the first naming
// effect.safe (so that safe calls are decided too), none matching a call
// of the test API (sdk.pets.*).
func Hundred() []policy.Rule {
	rules := make([]policy.Rule, 100)
	for i := range rules {
		rules[i] = policy.Rule{Name: fmt.Sprintf("rule %d", i), When: fmt.Sprintf(`effect.function == "sdk.other.f%d" && effect.method == "POST"`, i), Action: "deny"}
	}
	rules[0].When = `!effect.safe && effect.function == "sdk.other.f0"`
	return rules
}

// HundredSet is Hundred compiled, as a configuration's load compiles its
// rules: once, not per execution.
func HundredSet(tb interface{ Fatal(...any) }) *policy.Set {
	set, err := policy.Compile(Hundred(), effects.ActionAllow)
	if err != nil {
		tb.Fatal(err)
	}
	return set
}

// HundredRun is a real run whose effects pass Hundred, for user "bench".
func HundredRun(tb interface{ Fatal(...any) }) *effects.Run {
	return RunOf(HundredSet(tb))
}

// RunOf is a real run, for user "bench", whose effects pass set: what
// each execution of a server with those rules gets.
func RunOf(set *policy.Set) *effects.Run {
	return effects.New(effects.Real).WithRules(set.For(policy.Who{Sub: "bench"}), nil)
}
