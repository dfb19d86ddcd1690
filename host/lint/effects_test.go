package lint_test

import (
	"context"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/lint"
)

// With Options.Effects, each script's effects come beside its diagnostics,
// never among them: each thing once, at the place first named (a script
// naming a function many times costs one record), with Functions deciding
// what is unsafe (a function it does not know is). Without it, no effects.
func TestEffectsRecords(t *testing.T) {
	rt := newRuntime(t)
	source := "pirnt(1)\n" + strings.Repeat("sdk.create_pet({})\nsdk.pets.get_pet({pet_id = 1})\n", 2000) + "sdk.files.read_file({path = 'a'})\n"
	src := []lint.Source{{Name: "many.luau", Text: []byte(source)}}
	functions := func(name string) (lint.Function, bool) {
		switch name {
		case "sdk.pets.create_pet":
			return lint.Function{Unsafe: true, Does: "POST /pets"}, true
		case "sdk.pets.get_pet":
			return lint.Function{Does: "GET /pets/{pet_id}"}, true
		}
		return lint.Function{}, false
	}
	report, err := lint.Run(context.Background(), rt, src, lint.Options{IO: true, Effects: true, Functions: functions})
	if err != nil {
		t.Fatal(err)
	}
	if len(report.Diagnostics) != 1 || report.Diagnostics[0].Rule != lint.RuleUnknownGlobal {
		t.Errorf("diagnostics %+v", report.Diagnostics)
	}
	if len(report.Effects) != 1 {
		t.Fatalf("effects %+v", report.Effects)
	}
	e := report.Effects[0]
	if len(e.Unsafe) != 2 || e.Unsafe[0] != (lint.Reach{What: "sdk.pets.create_pet", Does: "POST /pets", Line: 2, Column: 1}) ||
		e.Unsafe[1].What != "sdk.files.read_file" || e.Unsafe[1].Line != 4002 ||
		len(e.Safe) != 1 || e.Safe[0] != (lint.Reach{What: "sdk.pets.get_pet", Does: "GET /pets/{pet_id}", Line: 3, Column: 1}) {
		t.Errorf("effects %+v", e)
	}

	report, err = lint.Run(context.Background(), rt, src, lint.Options{IO: true})
	if err != nil || report.Effects != nil || len(report.Diagnostics) != 1 {
		t.Errorf("without Effects: %+v %v", report, err)
	}
}
