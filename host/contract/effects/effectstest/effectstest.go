// Package effectstest owns how tests turn a dry run's effects into the
// plan a person approves: written as JSON, as a dry run's result holds
// them, and read back as a plan file is. Any failure ends the test.
package effectstest

import (
	"encoding/json"
	"testing"

	"github.com/toolscript/toolscript/host/contract/effects"
)

// Plan is the approved plan of log.
func Plan(tb testing.TB, log []effects.Effect) *effects.Approved {
	tb.Helper()
	text, err := json.Marshal(log)
	if err != nil {
		tb.Fatal(err)
	}
	plan, err := effects.ParsePlan(text)
	if err != nil {
		tb.Fatal(err)
	}
	return plan
}
