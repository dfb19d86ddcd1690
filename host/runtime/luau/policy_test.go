package luau_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/contract/policy"
	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/host/runtime/result"
)

// Rules decide a script's io in a real run: a denial the script catches
// lets it go on, one that escapes is kind denied; an effect that asks
// with nobody to ask stops the script with kind approval, which pcall
// does not catch; the result lists every decision.
func TestRulesInAScript(t *testing.T) {
	set, err := policy.Compile([]policy.Rule{
		{Name: "keep", When: `effect.kind == "remove" && effect.path == "keep.txt"`, Action: "deny"},
		{Name: "ask", When: `effect.kind == "remove" && effect.path == "ask.txt"`, Action: "ask"},
	}, effects.ActionAllow)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, source string
		want         string
		kind         result.Kind
		message      string
		decisions    string
	}{
		{name: "caught", source: `local ok, err = pcall(os.remove, "keep.txt")
			local f = assert(io.open("out.txt", "w")); f:write("x"); f:close()
			return {ok, err}`,
			want: `[false,"os.remove: 'keep.txt': denied by rule \"keep\""]`, decisions: "remove keep.txt denied keep,write out.txt allowed "},
		{name: "escaped", source: `assert(os.remove("keep.txt"))`, kind: result.Denied, message: `denied by rule "keep"`, decisions: "remove keep.txt denied keep"},
		{name: "nobody to ask", source: `local ok = pcall(os.remove, "ask.txt") return "went on"`, kind: result.Approval,
			message: `remove ask.txt, which rule "ask" asks a person about: nobody can be asked here`, decisions: "remove ask.txt ask ask"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, name := range []string{"keep.txt", "ask.txt"} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(name), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			run := effects.New(effects.Real).WithRules(set.For(policy.Who{Sub: "ann"}), nil)
			res := shared.Get(t).Execute(context.Background(), luau.Script{Source: []byte(tc.source), IO: &luau.IO{Dir: dir}, Effects: run})
			switch {
			case tc.kind == "" && (res.Error != nil || string(res.Value) != tc.want):
				t.Fatalf("result %s %+v, want %s", res.Value, res.Error, tc.want)
			case tc.kind != "" && (res.Error == nil || res.Error.Kind != tc.kind || !strings.Contains(res.Error.Message, tc.message)):
				t.Fatalf("error %+v, want kind %s with %q", res.Error, tc.kind, tc.message)
			}
			var got []string
			for _, e := range res.Effects {
				got = append(got, string(e.Op)+" "+e.Path+" "+e.Decision+" "+e.Rule)
			}
			if strings.Join(got, ",") != tc.decisions {
				t.Errorf("effects %q, want %q", strings.Join(got, ","), tc.decisions)
			}
			for _, name := range []string{"keep.txt", "ask.txt"} {
				if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
					t.Errorf("%s: %v", name, err)
				}
			}
		})
	}
}
