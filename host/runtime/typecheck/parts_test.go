package typecheck_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolscript/toolscript/host/runtime/typecheck"
	"github.com/toolscript/toolscript/internal/testwait"
)

// partsOf are definitions with one part per name, each an API sdk.<name>
// with a function get answering a type of its own; the parts bad names
// declare a type the checker rejects, and those huge names one over
// hugeBytes. Loose types the parts it is given any, as sdkdocs does.
func partsOf(names, bad, huge []string, hugeBytes int) typecheck.Parts {
	text := func(loose []string) []byte {
		var types, fields strings.Builder
		for _, n := range names {
			if slices.Contains(loose, n) {
				fmt.Fprintf(&fields, "\t%s: any,\n", n)
				continue
			}
			switch {
			case slices.Contains(bad, n):
				fmt.Fprintf(&types, "type T_%s = { n: NoSuchType }\n", n)
			case slices.Contains(huge, n):
				fmt.Fprintf(&types, "type T_%s = { n: number } -- %s\n", n, strings.Repeat("x", hugeBytes))
			default:
				fmt.Fprintf(&types, "type T_%s = { n: number }\n", n)
			}
			fmt.Fprintf(&fields, "\t%s: { get: (id: number) -> T_%s },\n", n, n)
		}
		return []byte(types.String() + "declare sdk: {\n" + fields.String() + "}\n")
	}
	return typecheck.Parts{Text: text(nil), Names: names, Loose: text}
}

// TestPartsThatDoNotLoad: definitions one part of which does not load
// (the checker rejects it, or it is over the cap) leave that part's calls
// unchecked, not every script: the other parts' misuse is still found,
// the failing part's calls are accepted, OnLoose and Loose name it; the
// search is bounded; definitions that load take one load.
func TestPartsThatDoNotLoad(t *testing.T) {
	many := make([]string, 40)
	for i := range many {
		many[i] = fmt.Sprintf("api%02d", i)
	}
	tests := []struct {
		name            string
		names, bad      []string
		huge            []string
		wantLoose       []string
		wantUntried     bool // some parts are declared loosely untried
		maxLoads        int
		checkedPart     string
		wantLooseReason string
	}{
		{"all load", []string{"good", "other"}, nil, nil, nil, false, 1, "good", ""},
		{"rejected by the checker", []string{"good", "bad"}, []string{"bad"}, nil, []string{"bad"}, false, 4, "good", "NoSuchType"},
		{"over the cap", []string{"huge", "good"}, nil, []string{"huge"}, []string{"huge"}, false, 4, "good", "over the limit"},
		{"one of many", many, []string{"api17"}, nil, []string{"api17"}, false, 1 + 12 + 1, "api03", "NoSuchType"},
		{"search bounded", many, many[:30], nil, nil, true, 1 + typecheck.MaxPartLoads + 1, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var told [][]typecheck.PartError
			c := newChecker(t, typecheck.Config{MaxDefinitionsBytes: 16 << 10, OnLoose: func(p []typecheck.PartError) {
				mu.Lock()
				told = append(told, p)
				mu.Unlock()
			}})
			var loads atomic.Int32
			typecheck.SetBeforeLoad(c, func() { loads.Add(1) })
			if err := c.LoadParts(partsOf(tc.names, tc.bad, tc.huge, 32<<10)); err != nil {
				t.Fatal(err)
			}
			ctx := testwait.Context(t)
			// A checked part's misuse is found.
			script := fmt.Sprintf("local r = sdk.%s.get(\"one\")\nreturn r.n\n", tc.checkedPart)
			if tc.checkedPart == "" {
				script = "return 1\n"
			}
			diags, loose, err := c.CheckLoose(ctx, script)
			if err != nil {
				t.Fatal(err)
			}
			if tc.checkedPart != "" && len(diags) == 0 {
				t.Errorf("sdk.%s.get(\"one\") is accepted: that part is unchecked", tc.checkedPart)
			}
			names, untried := looseParts(t, loose, tc.wantLooseReason)
			if !tc.wantUntried && !slices.Equal(names, tc.wantLoose) {
				t.Errorf("loose parts %v, want %v", names, tc.wantLoose)
			}
			if tc.wantUntried && untried == 0 {
				t.Errorf("loose parts %v, want some untried", loose)
			}
			// A loose part's calls are accepted, unchecked.
			for _, p := range loose {
				diags, err := c.Check(ctx, fmt.Sprintf("local r = sdk.%s.get(\"one\")\nreturn r.anything\n", p.Part))
				if err != nil || len(diags) > 0 {
					t.Errorf("sdk.%s, declared loosely: %+v, %v; want accepted", p.Part, diags, err)
				}
			}
			if n := int(loads.Load()); n > tc.maxLoads || tc.maxLoads == 1 && n != 1 {
				t.Errorf("%d loads, want at most %d", n, tc.maxLoads)
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case len(loose) == 0 && len(told) > 0:
				t.Errorf("OnLoose told %v, with no part loose", told)
			case len(loose) > 0 && (len(told) != 1 || len(told[0]) != len(loose)):
				t.Errorf("OnLoose told %v, want once the %d loose parts", told, len(loose))
			}
		})
	}
}

// looseParts are the names of the parts of loose that were tried, and
// how many were not; each tried one's error names it and says reason.
func looseParts(t *testing.T, loose []typecheck.PartError, reason string) (names []string, untried int) {
	t.Helper()
	for _, p := range loose {
		if strings.Contains(p.Error(), "not tried") {
			untried++
			continue
		}
		names = append(names, p.Part)
		if !strings.Contains(p.Error(), reason) || !strings.Contains(p.Error(), p.Part) {
			t.Errorf("part %s: %q, want its name and %q", p.Part, p.Error(), reason)
		}
	}
	return names, untried
}

// TestPartsNoneLoads: definitions none of whose texts load (the part they
// share is at fault) leave every check unchecked, with the whole's error.
func TestPartsNoneLoads(t *testing.T) {
	c := newChecker(t, typecheck.Config{})
	parts := partsOf([]string{"a", "b"}, nil, nil, 0)
	loose := parts.Loose
	broken := func(names []string) []byte { return append(loose(names), "type Broken = Missing\n"...) }
	parts.Text, parts.Loose = broken(nil), broken
	if err := c.LoadParts(parts); err != nil {
		t.Fatal(err)
	}
	_, err := c.Check(context.Background(), "return 1\n")
	if err == nil || !strings.Contains(err.Error(), "Missing") {
		t.Fatalf("check: %v, want the definitions' error", err)
	}
}
