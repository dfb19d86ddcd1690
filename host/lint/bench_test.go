package lint_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/lint"
	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/internal/testruntime"
)

// benchScript returns a script of about lines lines in the style of real
// tool scripts: helpers, tables, loops, string and json work. Variant i
// makes the scripts differ.
func benchScript(i, lines int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "-- generated script %d\nlocal results = {}\nlocal total_%d = 0\n", i, i)
	n := 3
	for f := 0; n < lines-4; f++ {
		fmt.Fprintf(&b, `
local function step%d(rows, factor)
  local out = {}
  for index, row in ipairs(rows) do
    if row.value and row.value > %d then
      local name = string.format("%%s-%%d", row.name, index)
      out[#out + 1] = {name = name, value = row.value * factor}
    elseif row.value == nil then
      error("row " .. index .. " has no value")
    else
      table.insert(out, {name = row.name:upper(), value = math.floor(row.value / 2)})
    end
  end
  return out
end
results[%d] = step%d({{name = "a", value = %d}, {name = "b", value = 2}}, %d)
total_%d += #results[%d]
`, f, f%10, f+1, f, i+f, f+2, i, f+1)
		n += 18
	}
	fmt.Fprintf(&b, "print(json.encode(results))\nreturn total_%d\n", i)
	return []byte(b.String())
}

// BenchmarkLint1000 lints 1,000 scripts of 200 lines, the target of
// `toolscript lint` (at most 2 s on a 2-core machine), with a Runtime whose
// module is already compiled: the instances (one per worker) are created
// inside the measurement. It runs the module as `toolscript lint` runs it
// for files up to lint.SmallFileBytes (no-deadline) and for larger ones
// (deadline), in one run.
func BenchmarkLint1000(b *testing.B) {
	ctx := context.Background()
	sources := make([]lint.Source, 1000)
	for i := range sources {
		sources[i] = lint.Source{Name: fmt.Sprintf("s%d.luau", i), Text: benchScript(i, 200)}
	}
	if got := strings.Count(string(sources[0].Text), "\n"); got < 190 || got > 210 {
		b.Fatalf("scripts have %d lines", got)
	}
	// What the deadline's checks cost, in one run: the module as lint
	// uses it, and the same module without the checks.
	for _, mode := range []struct {
		name      string
		stoppable bool
	}{{"deadline", true}, {"no-deadline", false}} {
		b.Run(mode.name, func(b *testing.B) {
			rt := testruntime.New(b, luau.Config{StopOnContextDone: mode.stoppable})
			for b.Loop() {
				rep, err := lint.Run(ctx, rt, sources, lint.Options{})
				if err != nil {
					b.Fatal(err)
				}
				if len(rep.Diagnostics) != 0 {
					b.Fatalf("generated scripts have diagnostics: %+v", rep.Diagnostics[0])
				}
			}
		})
	}
}

// BenchmarkLint1000Cold adds creating the Runtime, as one `toolscript lint`
// process does (the compiled module comes from wazero's on-disk cache).
func BenchmarkLint1000Cold(b *testing.B) {
	ctx := context.Background()
	sources := make([]lint.Source, 1000)
	for i := range sources {
		sources[i] = lint.Source{Name: fmt.Sprintf("s%d.luau", i), Text: benchScript(i, 200)}
	}
	for b.Loop() {
		rt, err := luau.New(ctx, luau.Config{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := lint.Run(ctx, rt, sources, lint.Options{}); err != nil {
			b.Fatal(err)
		}
		rt.Close(ctx)
	}
}
