package app_test

import (
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/app"
	"github.com/toolscript/toolscript/host/config"
	"github.com/toolscript/toolscript/host/runtime/result"
	"github.com/toolscript/toolscript/internal/testapi"
	"github.com/toolscript/toolscript/internal/testfile"
	"github.com/toolscript/toolscript/internal/testwait"
)

const petRules = `
[[policy]]
name = "no deletes"
when = 'effect.method == "DELETE"'
action = "deny"

[[policy]]
name = "ask about new pets"
when = 'effect.operation == "createPet"'
action = "ask"
`

// TestRunRules: the configuration's rules decide a real run's calls: a
// denied call never reaches the API and the script may catch its error;
// one that escapes is kind denied; an ask with nobody to ask (no
// terminal) is a denial saying so; the result lists every decision.
func TestRunRules(t *testing.T) {
	for _, tc := range []struct {
		name, source string
		value        string
		kind         result.Kind
		decisions    string
	}{
		{name: "caught", source: `local ok, err = pcall(sdk.delete_pet, {petId = 7}) return {ok, tostring(err):match("denied by rule \"no deletes\"") ~= nil, sdk.get_pet({petId = 7}).id}`,
			value: `[false,true,7]`, decisions: "DELETE denied no deletes"},
		{name: "escaped", source: `sdk.delete_pet({petId = 7})`, kind: result.Denied, decisions: "DELETE denied no deletes"},
		// No terminal and no --approve: nobody can be asked, and ask is deny.
		{name: "nobody to ask", source: `local ok, err = pcall(sdk.create_pet, {name = "Rex"}) return {ok, tostring(err):match("nobody can be asked here") ~= nil}`,
			value: `[false,true]`, decisions: "POST denied ask about new pets"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := testapi.New(t)
			file := petsConfig(t, api, petRules)
			res, err := app.Run(testwait.Context(t), app.RunConfig{File: file, Settings: settings(t, file, config.Run),
				SDK: app.SDKOptions{Stderr: io.Discard}, Source: []byte(tc.source)})
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.kind == "" && (res.Error != nil || string(res.Value) != tc.value):
				t.Fatalf("result %s %+v, want %s", res.Value, res.Error, tc.value)
			case tc.kind != "" && (res.Error == nil || res.Error.Kind != tc.kind):
				t.Fatalf("error %+v, want kind %s", res.Error, tc.kind)
			}
			var got []string
			for _, e := range res.Effects {
				got = append(got, e.Method+" "+e.Decision+" "+e.Rule)
			}
			if strings.Join(got, ",") != tc.decisions {
				t.Errorf("effects %q, want %q", got, tc.decisions)
			}
			want := int64(0)
			if strings.Contains(tc.source, "get_pet") {
				want = 1
			}
			if n := api.Requests.Load(); n != want {
				t.Errorf("the API got %d requests, want %d", n, want)
			}
		})
	}
}

// TestLoadConfigRules: a rule that does not compile is an error when the
// configuration loads, naming the file, the rule, its line and the
// position in its when, with a suggestion.
func TestLoadConfigRules(t *testing.T) {
	for _, c := range []struct{ name, text, want string }{
		{"field", "\n[[policy]]\nname = \"x\"\nwhen = 'effect.methd == \"DELETE\"'\naction = \"deny\"\n",
			`[[policy]] 1 "x" (line 2): when: 1:7: undefined field 'methd' (did you mean "method"?)`},
		{"action", "[[policy]]\nname = \"x\"\nwhen = 'true'\naction = \"dney\"\n", `action: "dney" is not an action: want allow, deny or ask (did you mean "deny"?)`},
		{"default", "[effects]\ndefault = \"alow\"\n", `effects.default: "alow" is not an action`},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := testfile.Temp(t, "toolscript.toml", c.text)
			_, err := app.LoadConfig(path)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("error = %v, want it to name %s and contain %q", err, path, c.want)
			}
		})
	}
}

// TestServeHostedRules: in the hosted mode the rules decide every
// execution's calls: a denied one never reaches the API, the result has
// kind denied and lists the decisions, and the access log line counts
// them.
func TestServeHostedRules(t *testing.T) {
	api := testapi.New(t)
	file := petsConfig(t, api, petRules)
	h := serveHosted(t, file)
	got := execute(t, h.client, `pcall(sdk.delete_pet, {petId = 7}) sdk.delete_pet({petId = 8})`)
	for _, want := range []string{`"kind":"denied"`, `"decision":"denied","function":"sdk.pets.delete_pet"`, `"rule":"no deletes","url":"http://127.0.0.1`, `/pets/8"`} {
		if !strings.Contains(got, want) {
			t.Errorf("structured content %s lacks %s", got, want)
		}
	}
	if n := api.Requests.Load(); n != 0 {
		t.Errorf("the API got %d requests", n)
	}
	if stderr := h.stop(); !strings.Contains(stderr, `"decisions":{"denied":2}`) {
		t.Errorf("the access log lacks the decisions: %s", stderr)
	}
}

// TestRunRulesThatFail: a rule whose when fails as it runs (a missing
// key, CEL's cost limit) denies the effect, and the script's error says
// why; the call never reaches the API.
func TestRunRulesThatFail(t *testing.T) {
	list := `[` + strings.Repeat("1,", 99) + `1]`
	for _, tc := range []struct {
		name, when string
		says       []string
	}{
		{"missing key", `effect.body.owner == "x"`, []string{`denied by rule "broken": its when failed: no such key: owner`}},
		{"cost limit", list + `.all(a, ` + list + `.all(b, ` + list + `.all(c, a + b + c > 0)))`, []string{`denied by rule "broken": its when failed`, "cost limit"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := testapi.New(t)
			file := petsConfig(t, api, "[[policy]]\nname = \"broken\"\nwhen = '"+tc.when+"'\naction = \"allow\"\n")
			res, err := app.Run(testwait.Context(t), app.RunConfig{File: file, Settings: settings(t, file, config.Run),
				SDK: app.SDKOptions{Stderr: io.Discard}, Source: []byte(`sdk.create_pet({name = "Rex"})`)})
			if err != nil {
				t.Fatal(err)
			}
			if res.Error == nil || res.Error.Kind != result.Denied {
				t.Fatalf("error %+v, want kind denied", res.Error)
			}
			for _, want := range tc.says {
				if !strings.Contains(res.Error.Message, want) {
					t.Errorf("error %q does not say %q", res.Error.Message, want)
				}
			}
			if n := api.Requests.Load(); n != 0 {
				t.Errorf("the API got %d requests", n)
			}
		})
	}
}

// TestRunRulesSeeTheLocalUser: under run a rule sees the OS user as
// user.sub and toolscript as the client.
func TestRunRulesSeeTheLocalUser(t *testing.T) {
	me, err := user.Current()
	if err != nil {
		t.Skipf("no OS user: %v", err)
	}
	api := testapi.New(t)
	file := petsConfig(t, api, "[[policy]]\nname = \"the local user\"\n"+
		"when = 'user.sub == "+strconv.Quote(me.Username)+" && client.name == \"toolscript\" && client.version != \"\"'\naction = \"deny\"\n")
	res, err := app.Run(testwait.Context(t), app.RunConfig{File: file, Settings: settings(t, file, config.Run), Version: "1.2.3",
		SDK: app.SDKOptions{Stderr: io.Discard}, Source: []byte(`sdk.create_pet({name = "Rex"})`)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Error == nil || res.Error.Kind != result.Denied || !strings.Contains(res.Error.Message, `denied by rule "the local user"`) {
		t.Fatalf("error %+v, want the rule on the local user to deny", res.Error)
	}
}

// TestRunRulesSeeTheFileALinkChanges: in `run`, whose io directory is the
// user's own and may hold symbolic links, a rule on secret/ denies a
// write through a link into secret/ (the file stays as it was), and a dry
// run lists the file the link leads to, and reports no other touched.
func TestRunRulesSeeTheFileALinkChanges(t *testing.T) {
	dir := t.TempDir()
	for name, err := range map[string]error{
		"secret": os.Mkdir(filepath.Join(dir, "secret"), 0o755),
		"public": os.Mkdir(filepath.Join(dir, "public"), 0o755),
	} {
		if err != nil {
			t.Fatal(name, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "secret", "keys.txt"), []byte("keys\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../secret/keys.txt", filepath.Join(dir, "public", "notes.txt")); err != nil {
		t.Fatal(err)
	}
	file := configFile(t, "[[policy]]\nname = \"secret\"\nwhen = 'effect.path.startsWith(\"secret/\")'\naction = \"deny\"\n")
	s, err := config.Resolve(file, config.Flags{IODir: dir}, os.Getenv, config.Run)
	if err != nil {
		t.Fatal(err)
	}
	source := `local f = assert(io.open("public/notes.txt", "w")) f:write("gone") local ok, err = pcall(f.close, f) return {ok == true, tostring(err)}`
	for _, dry := range []bool{false, true} {
		res, err := app.Run(testwait.Context(t), app.RunConfig{File: file, Settings: s, SDK: app.SDKOptions{Stderr: io.Discard},
			Source: []byte(source), DryRun: dry})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range res.Effects {
			got = append(got, string(e.Op)+" "+e.Path+" "+e.Decision)
		}
		for _, f := range res.FilesTouched {
			if f.Name != "secret/keys.txt" {
				t.Errorf("dry run %v: touched %s", dry, f.Name)
			}
		}
		want := `[false,"close: 'secret/keys.txt': denied by rule \"secret\""]`
		if string(res.Value) != want || strings.Join(got, ",") != "write secret/keys.txt denied" {
			t.Errorf("dry run %v: %s %+v, effects %q; want %s and the write of secret/keys.txt denied", dry, res.Value, res.Error, got, want)
		}
		if data, _ := os.ReadFile(filepath.Join(dir, "secret", "keys.txt")); string(data) != "keys\n" {
			t.Errorf("dry run %v: secret/keys.txt is %q", dry, data)
		}
	}
}
