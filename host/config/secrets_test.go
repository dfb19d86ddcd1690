package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/contract/redact"
	"github.com/toolscript/toolscript/internal/testfile"
)

// redactorOf is a redactor of the secrets s holds: Secrets, the APIs'
// credentials' and the servers' secrets. The process's one redactor is
// the sdk's Config.NewRedactor, which adds what a credential sends (a
// basic header): host/app's tests check it.
func redactorOf(s SDKSettings) *redact.Redactor {
	all := append([]redact.Secret(nil), s.Secrets...)
	for _, a := range s.APIs {
		if c := a.Auth; c != nil {
			all = append(all, c.Token, c.Password, c.Value)
		}
	}
	for _, u := range s.Upstreams {
		all = append(all, u.Secrets...)
	}
	return redact.New(all...)
}

// TestEveryValueReadIsASecret: a ${VAR} in any field that takes one
// (command, args, cwd, url, headers, env, base_url, auth), auth_env, the
// auth table's *_env keys and --auth are read as secrets: the variable is
// withheld from every MCP server's environment and its value is redacted
// by the configuration's redactor; so is the password of a URL's userinfo.
func TestEveryValueReadIsASecret(t *testing.T) {
	for _, tc := range []struct {
		field, toml string
		flags       SDKFlags
		env, value  string
	}{
		{"mcp command", "[mcp_servers.s]\ncommand = \"${V}\"\n", SDKFlags{}, "V", "/opt/secret-server"},
		{"mcp args", "[mcp_servers.s]\ncommand = \"srv\"\nargs = [\"--token\", \"${V}\"]\n", SDKFlags{}, "V", "ghp_args0123"},
		{"mcp cwd", "[mcp_servers.s]\ncommand = \"srv\"\ncwd = \"/work/${V}\"\n", SDKFlags{}, "V", "secret-dir-9"},
		{"mcp env", "[mcp_servers.s]\ncommand = \"srv\"\nenv = { T = \"${V}\" }\n", SDKFlags{}, "V", "env-token-1"},
		{"mcp url", "[mcp_servers.s]\nurl = \"http://h/mcp?token=${V}\"\n", SDKFlags{}, "V", "url-token-2"},
		{"mcp url password", "[mcp_servers.s]\nurl = \"http://u:${V}@h/mcp\"\n", SDKFlags{}, "V", "url-pass-3"},
		{"mcp headers", "[mcp_servers.s]\nurl = \"http://h/mcp\"\nheaders = { X = \"k ${V}\" }\n", SDKFlags{}, "V", "hdr-token-4"},
		{"api base_url", "[apis.a]\nspec = \"x\"\nbase_url = \"https://${V}/v1\"\n", SDKFlags{}, "V", "internal-host-5"},
		{"api base_url password", "[apis.a]\nspec = \"x\"\nbase_url = \"https://svc:${V}@h/v1\"\n", SDKFlags{}, "V", "base-pass-6"},
		{"api auth", "[apis.a]\nspec = \"x\"\nauth = \"${V}\"\n", SDKFlags{}, "V", "auth-token-7"},
		{"api auth table", "[apis.a]\nspec = \"x\"\nauth = { type = \"api_key\", value = \"${V}\" }\n", SDKFlags{}, "V", "auth-key-8"},
		{"api auth *_env", "[apis.a]\nspec = \"x\"\nauth = { type = \"basic\", username = \"u\", password_env = \"V\" }\n", SDKFlags{}, "V", "auth-pass-9"},
		{"api auth_env", "[apis.a]\nspec = \"x\"\nauth_env = \"V\"\n", SDKFlags{}, "V", "auth-env-10"},
		{"--auth", "[apis.a]\nspec = \"x\"\n", SDKFlags{Auth: []string{"a:V"}}, "V", "flag-token-11"},
		{"effects state_key_env", "[effects]\nstate_key_env = \"V\"\n", SDKFlags{}, "V", strings.Repeat("ab", 32)},
		{"effects state_key", "[effects]\nstate_key = \"${V}\"\n", SDKFlags{}, "V", strings.Repeat("cd", 32)},
		{"effects previous_state_keys", "[effects]\nstate_key_env = \"K\"\nprevious_state_keys = [\"${V}\"]\n", SDKFlags{}, "V", strings.Repeat("ef", 32)},
	} {
		t.Run(tc.field, func(t *testing.T) {
			f := loadText(t, tc.toml)
			env := map[string]string{tc.env: tc.value}
			cfg, err := ResolveSDK(f, tc.flags, func(k string) string { return env[k] })
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(cfg.WithheldEnv, tc.env) {
				t.Errorf("%s is not withheld from the MCP servers: %q", tc.env, cfg.WithheldEnv)
			}
			if got := redactorOf(cfg).String("shown: " + tc.value); got != "shown: [REDACTED]" {
				t.Errorf("the redactor leaves %q", got)
			}
		})
	}
}

// TestBaseURLUserinfo: a user and password in base_url become the API's
// basic credential and leave the URL; with auth besides, it is an error.
func TestBaseURLUserinfo(t *testing.T) {
	f := loadText(t, "[apis.a]\nspec = \"x\"\nbase_url = \"https://svc:${PW}@api.example/v1\"\n")
	cfg, err := ResolveSDK(f, SDKFlags{}, func(k string) string { return map[string]string{"PW": "p@ss:w0rd"}[k] })
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.APIs[0]
	if a.BaseURL != "https://api.example/v1" || a.Auth == nil || a.Auth.Type != "basic" || a.Auth.Username.Reveal() != "svc" || a.Auth.Password.Reveal() != "p@ss:w0rd" {
		t.Errorf("base URL %q, auth %+v", a.BaseURL, a.Auth)
	}
	if got := redactorOf(cfg).String("p@ss:w0rd"); got != "[REDACTED]" {
		t.Errorf("the password is not a secret: %q", got)
	}
	f, _ = Load(testfile.Temp(t, "toolscript.toml", "[apis.a]\nspec = \"x\"\nbase_url = \"https://svc:hunter2-pass@api.example/v1\"\nauth = \"tok-0123\"\n"))
	if _, err := ResolveSDK(f, SDKFlags{}, func(string) string { return "" }); err == nil ||
		!strings.Contains(err.Error(), "apis.a: base_url holds a user and password, and auth is given too") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("err %v", err)
	}
}
