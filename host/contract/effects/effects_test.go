package effects

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/toolscript/toolscript/host/contract/catalog"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		call Call
		want Safety
	}{
		{Call{Method: "GET"}, Safe},
		{Call{Method: "head"}, Safe},
		{Call{Method: "OPTIONS"}, Safe},
		{Call{Method: "POST"}, Unsafe},
		{Call{Method: "PUT"}, Unsafe},
		{Call{Method: "PATCH"}, Unsafe},
		{Call{Method: "DELETE"}, Unsafe},
		{Call{Method: "TRACE"}, Unsafe},
		{Call{}, Unsafe},             // an MCP tool without annotations
		{Call{ReadOnly: true}, Safe}, // readOnlyHint: true
		{Call{Method: "POST", Override: Safe}, Safe},
		{Call{Method: "GET", Override: Unsafe}, Unsafe},
	}
	for _, tt := range tests {
		if got := Classify(tt.call); got != tt.want {
			t.Errorf("Classify(%+v) = %s, want %s", tt.call, got, tt.want)
		}
	}
}

// OfFunction classifies a catalog function as its configuration declares,
// else by its method or readOnlyHint.
func TestOfFunction(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		f    catalog.Function
		want Safety
	}{
		{catalog.Function{Kind: catalog.OpenAPI, Method: "GET"}, Safe},
		{catalog.Function{Kind: catalog.OpenAPI, Method: "POST"}, Unsafe},
		{catalog.Function{Kind: catalog.OpenAPI, Method: "POST", Configured: &yes}, Safe},
		{catalog.Function{Kind: catalog.OpenAPI, Method: "GET", Configured: &no}, Unsafe},
		{catalog.Function{Kind: catalog.MCP}, Unsafe},
		{catalog.Function{Kind: catalog.MCP, Hints: &catalog.Hints{ReadOnly: &yes}}, Safe},
		{catalog.Function{Kind: catalog.MCP, Hints: &catalog.Hints{ReadOnly: &no}}, Unsafe},
		{catalog.Function{Kind: catalog.MCP, Hints: &catalog.Hints{ReadOnly: &yes}, Configured: &no}, Unsafe},
		{catalog.Function{Kind: catalog.MCP, Configured: &yes}, Safe},
	}
	for i, tt := range tests {
		if got := OfFunction(&tt.f); got != tt.want {
			t.Errorf("%d: OfFunction(%+v) = %s, want %s", i, tt.f, got, tt.want)
		}
		if ro := tt.f.ReadOnly(); ro != (tt.want == Safe) {
			t.Errorf("%d: catalog's ReadOnly %v disagrees with OfFunction %s", i, ro, tt.want)
		}
	}
}

func TestDecide(t *testing.T) {
	built := 0
	effect := func() Effect { built++; return Effect{Op: OpRemove, Path: fmt.Sprint("f", built)} }
	for _, r := range []*Run{nil, New(Real)} {
		if d := r.Decide(effect); d != Proceed || built != 0 {
			t.Errorf("a real run: %v, effect built %d times", d, built)
		}
		if log, _ := r.Effects(); log != nil {
			t.Errorf("a real run logged %v", log)
		}
	}
	r := New(DryRun)
	if !r.Stages() || New(Real).Stages() || (*Run)(nil).Stages() {
		t.Error("only a dry run stages io")
	}
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if r.Decide(func() Effect { return Effect{Op: OpCall, Function: "sdk.f"} }) != Hold {
				t.Error("a dry run proceeded")
			}
		})
	}
	wg.Wait()
	r.Decide(effect)
	log, omitted := r.Effects()
	if len(log) != 51 || omitted != 0 || log[50].Path != "f1" {
		t.Errorf("log: %d effects, %d omitted, last %+v", len(log), omitted, log[len(log)-1])
	}
}

func TestLogBounds(t *testing.T) {
	r := New(DryRun)
	for range MaxEffects + 7 {
		r.Decide(func() Effect { return Effect{Op: OpMkdir, Path: "d"} })
	}
	if log, omitted := r.Effects(); len(log) != MaxEffects || omitted != 7 {
		t.Errorf("count bound: %d kept, %d omitted", len(log), omitted)
	}
	// Past the byte bound diffs go first, then whole effects.
	r = New(DryRun)
	diff := strings.Repeat("+x\n", 100<<10)
	for range 20 {
		r.Decide(func() Effect { return Effect{Op: OpWrite, Path: "f", Diff: diff} })
	}
	log, omitted := r.Effects()
	withDiff := 0
	for _, e := range log {
		if e.Diff != "" {
			withDiff++
		}
	}
	if len(log) != 20 || omitted != 0 || withDiff == 0 || withDiff == 20 {
		t.Errorf("byte bound: %d kept (%d with their diff), %d omitted", len(log), withDiff, omitted)
	}
	r = New(DryRun)
	url := strings.Repeat("u", 1<<20)
	for range 6 {
		r.Decide(func() Effect { return Effect{Op: OpCall, URL: url} })
	}
	if log, omitted := r.Effects(); len(log) != 3 || omitted != 3 {
		t.Errorf("byte bound on whole effects: %d kept, %d omitted", len(log), omitted)
	}
}

func TestSetBody(t *testing.T) {
	big := `"` + strings.Repeat("a", MaxBodyBytes) + `"`
	tests := []struct {
		name, data, body string
		size             int64
	}{
		{"empty", "", "", 0},
		{"json", `{"a":[1,2]}`, `{"a":[1,2]}`, 0},
		{"text", "a=1&b=2", `"a=1\u0026b=2"`, 0},
		{"binary", "\xff\x00", "", 2},
		{"large", big, "", int64(len(big))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e Effect
			e.SetBody([]byte(tt.data))
			if string(e.Body) != tt.body || e.BodyBytes != tt.size || (tt.size > 0) != (len(e.BodySHA256) == 64) {
				t.Errorf("body %q, %d bytes, sha256 %q", e.Body, e.BodyBytes, e.BodySHA256)
			}
			if _, err := json.Marshal(e); err != nil {
				t.Error(err)
			}
		})
	}
}

// The diffs of one run are bounded in total: two sides of MaxDiffLines
// lines each cost MaxDiffLines², and maxDiffWork allows a handful of them.
func TestDiffBudget(t *testing.T) {
	var a, b strings.Builder
	for i := range MaxDiffLines - 1 {
		fmt.Fprintf(&a, "%d\n", i)
		fmt.Fprintf(&b, "%d\n", i*7)
	}
	r := New(DryRun)
	made := 0
	for range 20 {
		if r.Diff("f", []byte(a.String()), []byte(b.String())) != "" {
			made++
		}
	}
	if want := maxDiffWork / (MaxDiffLines * MaxDiffLines); made != want {
		t.Errorf("%d diffs made, want %d", made, want)
	}
	if r.Diff("f", []byte("a\n"), []byte("b\n")) != "" {
		t.Error("a diff past the budget")
	}
}

func TestDiff(t *testing.T) {
	tests := []struct {
		name     string
		old, new []byte
		want     string
	}{
		{"append", []byte("a\nb\n"), []byte("a\nb\nc\n"), "--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,3 @@\n a\n b\n+c\n"},
		{"new file", nil, []byte("hello\n"), "--- /dev/null\n+++ b/f.txt\n@@ -0,0 +1 @@\n+hello\n"},
		{"no final newline", []byte("a"), []byte("b"), "--- a/f.txt\n+++ b/f.txt\n@@ -1 +1 @@\n-a\n+b\n"},
		{"equal", []byte("a\n"), []byte("a\n"), ""},
		{"binary", []byte("a\n"), []byte("a\x00\n"), ""},
		{"not UTF-8", []byte("\xff"), []byte("a\n"), ""},
		{"too large", []byte("a\n"), []byte(strings.Repeat("a\n", MaxDiffBytes/2+1)), ""},
		{"too many lines", []byte("a\n"), []byte(strings.Repeat("b\n", MaxDiffLines)), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Diff("f.txt", tt.old, tt.new); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
