package policy

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/contract/effects"
)

func TestCompileErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rules []Rule
		want  []string
	}{
		{"undefined field", []Rule{{Name: "r", When: `effect.methd == "DELETE"`, Action: "deny", Line: 7}},
			[]string{`[[policy]] 1 "r" (line 7): when: 1:7: undefined field 'methd'`, `did you mean "method"?`}},
		{"position on line 2", []Rule{{Name: "a", When: "true", Action: "allow"}, {Name: "b", When: "effect.kind == \"write\" &&\n  effect.byts > 3", Action: "deny"}},
			[]string{`[[policy]] 2 "b": when: 2:9: undefined field 'byts'`, `did you mean "bytes"?`}},
		{"not bool", []Rule{{Name: "r", When: `effect.kind`, Action: "deny"}}, []string{`when is of type string: it must be bool`}},
		{"type mismatch", []Rule{{Name: "r", When: `effect.bytes > "x"`, Action: "deny"}}, []string{`1:14: found no matching overload for '_>_' applied to '(int, string)'`}},
		{"syntax", []Rule{{Name: "r", When: `effect.kind == `, Action: "deny"}}, []string{`"r": when: 1:`}},
		{"unknown variable", []Rule{{Name: "r", When: `request.method == "GET"`, Action: "deny"}}, []string{`undeclared reference to 'request'`}},
		{"action", []Rule{{Name: "r", When: `true`, Action: "alow"}}, []string{`action: "alow" is not an action: want allow, deny or ask`, `did you mean "allow"?`}},
		{"no name", []Rule{{When: `true`, Action: "deny"}}, []string{`[[policy]] 1: name is empty`}},
		{"same name", []Rule{{Name: "r", When: `true`, Action: "deny"}, {Name: "r", When: `false`, Action: "deny"}}, []string{`name "r" is also rule 1's`}},
		{"no when", []Rule{{Name: "r", Action: "deny"}}, []string{`when is empty`}},
		{"long when", []Rule{{Name: "r", When: strings.Repeat("true && ", 1000) + "true", Action: "deny"}}, []string{`when is 8004 bytes, more than 4096`}},
		{"deep", []Rule{{Name: "r", When: strings.Repeat("(", 200) + "true" + strings.Repeat(")", 200), Action: "deny"}}, []string{`"r": when: `}},
		{"user claim typo", []Rule{{Name: "r", When: `user.claim.org == "x"`, Action: "deny"}}, []string{`undefined field 'claim'`, `did you mean "claims"?`}},
		{"two bad rules", []Rule{{Name: "a", When: `effect.x`, Action: "deny"}, {Name: "b", When: `effect.y`, Action: "deny"}}, []string{`"a"`, `"b"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile(tc.rules, effects.ActionAllow)
			if err == nil {
				t.Fatalf("Compile succeeded, want an error with %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
		})
	}
}

func TestTooManyRules(t *testing.T) {
	rules := make([]Rule, MaxRules+1)
	if _, err := Compile(rules, effects.ActionAllow); err == nil || !strings.Contains(err.Error(), "more than 10000") {
		t.Fatalf("err = %v", err)
	}
}

func mustCompile(t testing.TB, def effects.Action, rules ...Rule) *Set {
	t.Helper()
	s, err := Compile(rules, def)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var standard = []Rule{
	{Name: "no deletes", When: `effect.method == "DELETE"`, Action: "deny"},
	{Name: "outside our org", When: `effect.function == "sdk.gh.issues_create" && effect.params.owner != "our-org"`, Action: "ask"},
	{Name: "reports only", When: `effect.kind == "write" && !effect.path.startsWith("reports/")`, Action: "deny"},
	{Name: "big bodies", When: `effect.kind == "call" && has(effect.body.title) && effect.body.title.size() > 10`, Action: "deny"},
	{Name: "admins", When: `"admin" in user.claims && user.claims.admin == true`, Action: "allow"},
	{Name: "old clients", When: `client.name == "old" && client.version.startsWith("0.")`, Action: "deny"},
	{Name: "tool args", When: `effect.args.path.startsWith("/etc")`, Action: "deny"},
	{Name: "optional", When: `effect.params.?team.orValue("") == "red"`, Action: "deny"},
}

func TestDecide(t *testing.T) {
	set := mustCompile(t, effects.ActionAsk, standard...)
	who := &Who{Sub: "ann", Claims: map[string]any{}}
	for _, tc := range []struct {
		name   string
		facts  effects.Facts
		who    *Who
		action effects.Action
		rule   string
		reason string
	}{
		{"delete denied", effects.Facts{Kind: "call", Method: "DELETE"}, who, effects.ActionDeny, "no deletes", ""},
		{"first match wins", effects.Facts{Kind: "call", Method: "DELETE", Function: "sdk.gh.issues_create", Params: map[string]any{"owner": "x"}}, who, effects.ActionDeny, "no deletes", ""},
		{"ask outside org", effects.Facts{Kind: "call", Method: "POST", Function: "sdk.gh.issues_create", Params: map[string]any{"owner": "x"}, Body: map[string]any{}}, who, effects.ActionAsk, "outside our org", ""},
		{"our org falls to default", effects.Facts{Kind: "call", Method: "POST", Function: "sdk.gh.issues_create", Params: map[string]any{"owner": "our-org"}, Body: map[string]any{}, Args: map[string]any{"path": "/tmp"}}, who, effects.ActionAsk, "", ""},
		{"write outside reports", effects.Facts{Kind: "write", Path: "x.csv"}, who, effects.ActionDeny, "reports only", ""},
		{"write in reports", effects.Facts{Kind: "write", Path: "reports/x.csv"}, &Who{Sub: "root", Claims: map[string]any{"admin": true}}, effects.ActionAllow, "admins", ""},
		{"body title", effects.Facts{Kind: "call", Method: "POST", Body: map[string]any{"title": "a very long title"}}, who, effects.ActionDeny, "big bodies", ""},
		{"client", effects.Facts{Kind: "mkdir", Path: "d"}, &Who{ClientName: "old", ClientVersion: "0.9"}, effects.ActionDeny, "old clients", ""},
		{"optional field", effects.Facts{Kind: "mkdir", Path: "d", Args: map[string]any{"path": "/x"}, Params: map[string]any{"team": "red"}}, who, effects.ActionDeny, "optional", ""},
		{"runtime error denies", effects.Facts{Kind: "call", Method: "POST", Function: "sdk.gh.issues_create", Body: map[string]any{}}, who, effects.ActionDeny, "outside our org", "its when failed: no such key: owner"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.facts
			v := set.Decide(&f, tc.who)
			if v.Action != tc.action || v.Rule != tc.rule || v.Reason != tc.reason {
				t.Fatalf("Decide = %+v, want %v by %q (%q)", v, tc.action, tc.rule, tc.reason)
			}
		})
	}
}

func TestDefaultActions(t *testing.T) {
	for _, def := range []effects.Action{effects.ActionAllow, effects.ActionDeny, effects.ActionAsk} {
		set := mustCompile(t, def, Rule{Name: "never", When: "false", Action: "deny"})
		if v := set.Decide(&effects.Facts{Kind: "write"}, &Who{}); v.Action != def || v.Rule != "" {
			t.Errorf("default %v: Decide = %+v", def, v)
		}
	}
}

func TestCostLimitDenies(t *testing.T) {
	// Each level multiplies the work by the list's length: about 100^3
	// steps, far past the cost limit.
	when := `[` + strings.Repeat("1,", 99) + `1].all(a, [` + strings.Repeat("1,", 99) + `1].all(b, [` + strings.Repeat("1,", 99) + `1].all(c, a + b + c > 0)))`
	set := mustCompile(t, effects.ActionAllow, Rule{Name: "slow", When: when, Action: "allow"})
	v := set.Decide(&effects.Facts{Kind: "write"}, &Who{})
	if v.Action != effects.ActionDeny || v.Rule != "slow" || !strings.Contains(v.Reason, "cost limit") {
		t.Fatalf("Decide = %+v, want deny by slow for its cost", v)
	}
}

func TestDecidesSafe(t *testing.T) {
	for _, tc := range []struct {
		when string
		safe bool
	}{
		{`effect.method == "GET"`, false},
		{`effect.safe && effect.url.contains("secret")`, true},
		{`"effect.safe" == effect.path`, false},
		{`[1].exists(x, !effect.safe)`, true},
	} {
		set := mustCompile(t, effects.ActionAllow, Rule{Name: "r", When: tc.when, Action: "deny"})
		if set.DecidesSafe() != tc.safe {
			t.Errorf("%s: DecidesSafe = %v, want %v", tc.when, set.DecidesSafe(), tc.safe)
		}
	}
}

func TestTenThousandRules(t *testing.T) {
	rules := make([]Rule, MaxRules)
	for i := range rules {
		rules[i] = Rule{Name: fmt.Sprintf("rule %d", i), When: fmt.Sprintf(`effect.function == "sdk.api.f%d" && effect.params.n > %d`, i, i), Action: "deny"}
	}
	start := time.Now()
	set := mustCompile(t, effects.ActionAllow, rules...)
	t.Logf("10,000 rules compiled in %s", time.Since(start))
	if set.Len() != MaxRules {
		t.Fatalf("Len = %d", set.Len())
	}
	v := set.Decide(&effects.Facts{Kind: "call", Function: "sdk.api.f9999", Params: map[string]any{"n": 10000}}, &Who{})
	if v.Action != effects.ActionDeny || v.Rule != "rule 9999" {
		t.Fatalf("Decide = %+v", v)
	}
}

func TestFor(t *testing.T) {
	set := mustCompile(t, effects.ActionAllow, Rule{Name: "ann only", When: `user.sub != "ann"`, Action: "deny"})
	if v := set.For(Who{Sub: "bob"}).Decide(&effects.Facts{Kind: "write"}); v.Rule != "ann only" {
		t.Errorf("bob: %+v", v)
	}
	if v := set.For(Who{Sub: "ann"}).Decide(&effects.Facts{Kind: "write"}); v.Action != effects.ActionAllow || v.Rule != "" {
		t.Errorf("ann: %+v", v)
	}
	var none *Set
	if none.For(Who{}) != nil {
		t.Error("a nil Set gives rules")
	}
}

func FuzzCompile(f *testing.F) {
	for _, r := range standard {
		f.Add(r.When, r.Action)
	}
	f.Add(`effect.kind == `, "deny")
	f.Add(`[1,2].map(x, x * 2).size() > 1`, "ask")
	f.Fuzz(func(t *testing.T, when, action string) {
		set, err := Compile([]Rule{{Name: "f", When: when, Action: action}}, effects.ActionAllow)
		if err != nil {
			if !strings.Contains(err.Error(), `[[policy]] 1 "f"`) {
				t.Fatalf("error does not name the rule: %v", err)
			}
			return
		}
		// Whatever it says, it decides without panicking.
		v := set.Decide(&effects.Facts{Kind: "call", Params: map[string]any{"a": 1.0}, Body: map[string]any{"b": []any{"c"}}}, &Who{})
		if v.Rule != "" && v.Rule != "f" {
			t.Fatalf("rule %q", v.Rule)
		}
	})
}

func BenchmarkDecideOneRule(b *testing.B) {
	set := mustCompile(b, effects.ActionAllow, standard[1])
	who := &Who{Sub: "ann"}
	b.ReportAllocs()
	for b.Loop() {
		f := effects.Facts{Kind: "call", Method: "POST", Function: "sdk.gh.issues_create", Params: map[string]any{"owner": "our-org"}}
		set.Decide(&f, who)
	}
}

// Static decides a call from its function alone: a rule on the method
// decides; one on the arguments (or the user) depends on them.
func TestStatic(t *testing.T) {
	set := mustCompile(t, effects.ActionAsk, standard...)
	for _, tc := range []struct {
		name  string
		facts effects.Facts
		rule  string
		known bool
	}{
		{"method", effects.Facts{Kind: "call", Method: "DELETE"}, "no deletes", true},
		{"arguments", effects.Facts{Kind: "call", Method: "POST", Function: "sdk.gh.issues_create"}, "outside our org", false},
		{"body", effects.Facts{Kind: "call", Method: "POST", Function: "sdk.gh.other"}, "big bodies", false},
	} {
		v, known := set.Static(&tc.facts)
		if v.Rule != tc.rule || known != tc.known {
			t.Errorf("%s: Static = %+v, %v; want %q, %v", tc.name, v, known, tc.rule, tc.known)
		}
	}
	byMethod := mustCompile(t, effects.ActionAsk, standard[0])
	if v, known := byMethod.Static(&effects.Facts{Kind: "call", Method: "POST"}); !known || v.Rule != "" || v.Action != effects.ActionAsk {
		t.Errorf("the default: %+v %v", v, known)
	}
}

// A rule skipped by its guards decides what its evaluation would: the
// same verdicts with the guards as without them.
func TestGuardsChangeNothing(t *testing.T) {
	rules := append(append([]Rule{}, standard...),
		Rule{Name: "reversed", When: `"PATCH" == effect.method && effect.params.x == 1`, Action: "deny"},
		Rule{Name: "or", When: `effect.method == "PUT" || effect.kind == "mkdir"`, Action: "deny"},
		Rule{Name: "nested", When: `(effect.kind == "call" && effect.api == "gh") && effect.body.x == 2`, Action: "ask"})
	guarded := mustCompile(t, effects.ActionAllow, rules...)
	plain := mustCompile(t, effects.ActionAllow, rules...)
	n := 0
	for i := range plain.rules {
		n += len(plain.rules[i].guards)
		plain.rules[i].guards = nil
	}
	if n < 7 {
		t.Fatalf("only %d guards found", n)
	}
	for _, f := range []effects.Facts{
		{Kind: "call", Method: "PATCH"},
		{Kind: "call", Method: "PATCH", Params: map[string]any{"x": int64(1)}},
		{Kind: "call", Method: "PUT"},
		{Kind: "mkdir", Path: "d"},
		{Kind: "call", API: "gh", Method: "POST", Body: map[string]any{"x": 2.0}},
		{Kind: "call", API: "gh", Method: "POST"},
		{Kind: "write", Path: "reports/a"},
		{Kind: "call", Function: "sdk.gh.issues_create", Method: "POST"},
	} {
		a, b := f, f
		if g, p := guarded.Decide(&a, &Who{}), plain.Decide(&b, &Who{}); g != p {
			t.Errorf("%+v: guarded %+v, plain %+v", f, g, p)
		}
	}
}

// NeedsRequest is whether a rule looks into a call's request.
func TestNeedsRequest(t *testing.T) {
	for _, tc := range []struct {
		when string
		want bool
	}{
		{`effect.method == "GET" && effect.function == "x"`, false},
		{`effect.kind == "write" && effect.bytes > 3`, false},
		{`effect.params.owner == "x"`, true},
		{`has(effect.body.title)`, true},
		{`effect.url.contains("admin")`, true},
		{`effect.headers.exists(k, k == "X")`, true},
		{`effect.args.path == "/"`, true},
		{`effect.path.startsWith("reports/")`, true},
	} {
		set := mustCompile(t, effects.ActionAllow, Rule{Name: "r", When: tc.when, Action: "deny"})
		if set.NeedsRequest() != tc.want {
			t.Errorf("%s: NeedsRequest = %v, want %v", tc.when, set.NeedsRequest(), tc.want)
		}
	}
}
