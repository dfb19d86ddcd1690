package config

import (
	"encoding/json"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/toolscript/toolscript/internal/testfile"
)

func TestSDKConfig(t *testing.T) {
	path := testfile.Temp(t, "toolscript.toml", `
[frozen_params]
api_version = "v2"
page_size = 50

[apis.petstore]
spec = "petstore.yaml"
base_url = "https://api.example"
auth_env = "PETSTORE_TOKEN"
timeout = "5s"
[apis.petstore.frozen_params]
tenant_id = "abc-123"
api_version = "v3"

[apis.legacy]
spec = "https://specs.example/legacy.json"
[apis.legacy.auth]
type = "basic"
username = "admin"
password_env = "LEGACY_PASSWORD"

[apis.keyed]
spec = "k.yaml"
[apis.keyed.auth]
type = "api_key"
value = "literal-key"
name = "X-Key"
in = "header"

[sdk]
max_calls = 7
max_response_bytes = 1000
max_parallel = 2

[limits]
max_host_bytes = 5000
max_host_bytes_total = 9000
`)
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"PETSTORE_TOKEN": "tok", "LEGACY_PASSWORD": "pw", "GH_TOKEN": "gh-secret"}
	cfg, err := ResolveSDK(f, SDKFlags{APIs: []string{"gh=gh.json"}, Auth: []string{"gh:GH_TOKEN"}}, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MaxCalls != 7 || cfg.MaxResponseBytes != 1000 || cfg.MaxParallel != 2 || cfg.MaxHostBytes != 5000 || cfg.MaxHostBytesTotal != 9000 {
		t.Errorf("limits %+v", cfg)
	}
	var names []string
	by := map[string]APISettings{}
	for _, a := range cfg.APIs {
		names = append(names, a.Name)
		by[a.Name] = a
	}
	if strings.Join(names, " ") != "gh keyed legacy petstore" {
		t.Errorf("apis %v", names)
	}
	p := by["petstore"]
	if p.Spec != "petstore.yaml" || p.Dir != filepath.Dir(path) || p.BaseURL != "https://api.example" || p.Timeout != 5*time.Second ||
		p.Auth == nil || p.Auth.Token.Reveal() != "tok" || p.Auth.Type != "" || p.Frozen["tenant_id"] != "abc-123" || p.Frozen["api_version"] != "v3" {
		t.Errorf("petstore %+v auth %+v", p, p.Auth)
	}
	if cfg.Frozen["api_version"] != "v2" || cfg.Frozen["page_size"] != json.Number("50") {
		t.Errorf("global frozen %v", cfg.Frozen)
	}
	if l := by["legacy"].Auth; l == nil || l.Type != "basic" || l.Username.Reveal() != "admin" || l.Password.Reveal() != "pw" {
		t.Errorf("legacy auth %+v", l)
	}
	if k := by["keyed"].Auth; k == nil || k.Type != "api_key" || k.Value.Reveal() != "literal-key" || k.Name != "X-Key" || k.In != "header" {
		t.Errorf("keyed auth %+v", k)
	}
	if g := by["gh"]; g.Spec != "gh.json" || g.Auth == nil || g.Auth.Token.Reveal() != "gh-secret" {
		t.Errorf("gh %+v", g)
	}
	// The variables credentials came from are withheld from MCP servers.
	if got := strings.Join(cfg.WithheldEnv, " "); got != "LEGACY_PASSWORD PETSTORE_TOKEN GH_TOKEN" {
		t.Errorf("withheld %q", got)
	}

	// Flags win: --api replaces the file's spec (relative to the working
	// directory), --max-calls the file's max_calls.
	cfg, err = ResolveSDK(f, SDKFlags{APIs: []string{"petstore=other.yaml"}, MaxCalls: 3}, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range cfg.APIs {
		if a.Name == "petstore" && (a.Spec != "other.yaml" || a.Dir != "" || a.BaseURL != "https://api.example") {
			t.Errorf("--api over the file: %+v", a)
		}
	}
	if cfg.MaxCalls != 3 {
		t.Errorf("--max-calls: %d", cfg.MaxCalls)
	}

	// Nothing set is zero: the sdk's defaults (host/app
	// TestSettingsDefaults).
	cfg, err = ResolveSDK(&File{}, SDKFlags{}, nil)
	if err != nil || cfg.MaxCalls != 0 || cfg.MaxResponseBytes != 0 || cfg.MaxParallel != 0 || len(cfg.APIs) != 0 {
		t.Errorf("nothing set %+v %v", cfg, err)
	}
}

func TestSDKConfigErrors(t *testing.T) {
	for _, c := range []struct {
		name, text string
		flags      SDKFlags
		want       string
	}{
		{"unset auth_env", "[apis.p]\nspec = \"x\"\nauth_env = \"NOPE\"\n", SDKFlags{}, "apis.p.auth_env: the environment variable NOPE is not set or empty"},
		{"unset password_env", "[apis.p]\nspec = \"x\"\n[apis.p.auth]\ntype = \"basic\"\nusername = \"u\"\npassword_env = \"NOPE\"\n", SDKFlags{}, "apis.p.auth.password_env"},
		{"bad type", "[apis.p]\nspec = \"x\"\n[apis.p.auth]\ntype = \"magic\"\n", SDKFlags{}, "apis.p.auth.type: \"magic\""},
		{"bad in", "[apis.p]\nspec = \"x\"\n[apis.p.auth]\ntype = \"api_key\"\nvalue = \"v\"\nin = \"body\"\n", SDKFlags{}, "apis.p.auth.in"},
		{"bearer without token", "[apis.p]\nspec = \"x\"\n[apis.p.auth]\ntype = \"bearer\"\n", SDKFlags{}, "bearer needs token"},
		{"bad --api", "", SDKFlags{APIs: []string{"petstore"}}, "want NAME=SPEC"},
		{"bad --api name", "", SDKFlags{APIs: []string{"1x=y"}}, "not a Luau identifier"},
		{"bad --auth", "", SDKFlags{APIs: []string{"p=x"}, Auth: []string{"p=TOKEN"}}, "want NAME:ENV_VAR"},
		{"--auth unknown api", "", SDKFlags{Auth: []string{"q:TOKEN"}}, "no API named q"},
		{"--auth unset", "", SDKFlags{APIs: []string{"p=x"}, Auth: []string{"p:NOPE"}}, "NOPE is not set or empty"},
		{"--max-calls", "", SDKFlags{MaxCalls: -1}, "--max-calls must be positive"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := loadText(t, c.text)
			_, err := ResolveSDK(f, c.flags, func(string) string { return "" })
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
	// No secret in a message.
	f, _ := Load(testfile.Temp(t, "toolscript.toml", "[apis.p]\nspec = \"x\"\n[apis.p.auth]\ntype = \"basic\"\nusername = \"u\"\npassword = \"hunter2-secret\"\npassword_env = \"X\"\n"))
	if _, err := ResolveSDK(f, SDKFlags{}, func(string) string { return "" }); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error %v", err)
	}
}

func TestMCPServerSecrets(t *testing.T) {
	f := loadText(t, `
[mcp_servers.remote]
url = "https://mcp.example/mcp?key=${REMOTE_KEY}"
headers = { Authorization = "Bearer ${REMOTE_TOKEN}", X-Team = "blue" }

[mcp_servers.loc]
command = "server"
args = ["${HOME}/data"]
env = { API_TOKEN = "${LOCAL_TOKEN}" }
`)
	env := map[string]string{"REMOTE_KEY": "key-1234", "REMOTE_TOKEN": "token-5678", "HOME": "/home/me", "LOCAL_TOKEN": "local-9012"}
	cfg, err := ResolveSDK(f, SDKFlags{}, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	secrets := map[string][]string{}
	for _, u := range cfg.Upstreams {
		for _, s := range u.Secrets {
			secrets[u.Name] = append(secrets[u.Name], s.Reveal())
		}
	}
	// What ${VAR} put into any field (a URL, a header, env, the
	// arguments), and the headers' values (whole, and their last word).
	has := func(list []string, want ...string) bool {
		for _, w := range want {
			found := false
			for _, s := range list {
				found = found || s == w
			}
			if !found {
				return false
			}
		}
		return true
	}
	if r := secrets["remote"]; !has(r, "key-1234", "token-5678", "Bearer token-5678", "blue") {
		t.Errorf("remote's secrets %q", r)
	}
	if l := secrets["loc"]; !has(l, "local-9012", "/home/me") {
		t.Errorf("loc's secrets %q", l)
	}
	got := append([]string(nil), cfg.WithheldEnv...)
	sort.Strings(got)
	if strings.Join(got, " ") != "HOME LOCAL_TOKEN REMOTE_KEY REMOTE_TOKEN" {
		t.Errorf("withheld %q", got)
	}
}

// [apis.NAME] and [mcp_servers.NAME] safe and unsafe reach the sdk's
// settings as they are (the sdk checks the names against the spec).
func TestSafetyConfig(t *testing.T) {
	f := loadText(t, `
[apis.p]
spec = "x.yaml"
safe = ["searchThings", "list_things"]
unsafe = ["getToken"]

[mcp_servers.m]
command = "srv"
safe = ["write_note"]
`)
	// --api and --mcp replace how an API or server is reached, and keep
	// the section's lists.
	cfg, err := ResolveSDK(f, SDKFlags{APIs: []string{"p=other.yaml"}, MCP: []string{"m=other-server --flag"}}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.APIs) != 1 || strings.Join(cfg.APIs[0].Safety.Safe, " ") != "searchThings list_things" || strings.Join(cfg.APIs[0].Safety.Unsafe, " ") != "getToken" {
		t.Errorf("apis: %+v", cfg.APIs)
	}
	if m := cfg.ToolSafety["m"]; strings.Join(m.Safe, " ") != "write_note" || len(m.Unsafe) != 0 || len(cfg.ToolSafety) != 1 {
		t.Errorf("tool safety: %+v", cfg.ToolSafety)
	}
}
