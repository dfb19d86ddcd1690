package app

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/config"
	"github.com/toolscript/toolscript/host/contract/effects/trace"
	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/host/sdk"
	"github.com/toolscript/toolscript/host/sdk/upstream"
	"github.com/toolscript/toolscript/host/serve/mcpserver"
	"github.com/toolscript/toolscript/internal/testfile"
)

// TestSettingsDefaults: what the configuration leaves unset becomes the
// default of the package that uses it when app maps the settings.
func TestSettingsDefaults(t *testing.T) {
	s, err := config.Resolve(nil, config.Flags{}, func(string) string { return "" }, config.Run)
	if err != nil {
		t.Fatal(err)
	}
	if got := scriptLimits(s.Limits); got != (luau.Limits{}).WithDefaults() {
		t.Errorf("limits %+v, want the runtime's defaults", got)
	}
	if got := scriptIO(s.IO); got == nil || *got != (luau.IO{Dir: config.DefaultIODir, MaxBytes: luau.DefaultIOMaxBytes}) {
		t.Errorf("io %+v, want the default directory and budget", got)
	}
	zero := int64(0)
	if got := scriptIO(&config.IOSettings{Dir: "d", MaxBytes: &zero, MaxFiles: 3}); *got != (luau.IO{Dir: "d", MaxBytes: 0, MaxFiles: 3}) {
		t.Errorf("io %+v: a budget set (even 0) is kept", got)
	}

	stdio, err := config.ResolveServer(nil, config.ServerFlags{})
	if err != nil {
		t.Fatal(err)
	}
	want := config.ServerSettings{MaxConcurrent: mcpserver.DefaultMaxConcurrent}
	if got := serverLimits(stdio); got != want {
		t.Errorf("stdio %+v, want %+v (no queue bound)", got, want)
	}
	hostedSrv, err := config.ResolveServer(nil, config.ServerFlags{HTTP: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if got := serverLimits(hostedSrv); got.QueueWait != DefaultQueueWait || got.MaxConcurrent != mcpserver.DefaultMaxConcurrent {
		t.Errorf("hosted %+v, want the queue wait %s", got, DefaultQueueWait)
	}
	set, err := config.ResolveServer(nil, config.ServerFlags{MaxConcurrent: 2, QueueWait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if got := serverLimits(set); got.MaxConcurrent != 2 || got.QueueWait != time.Second {
		t.Errorf("set %+v: what is set is kept", got)
	}

	if got := maxResponseBytes(nil); got != sdk.DefaultMaxResponseBytes {
		t.Errorf("max_response_bytes %d, want the sdk's default", got)
	}
}

// TestRecordBounds: the bounds of record_dir are the trace package's
// defaults unless set.
func TestRecordBounds(t *testing.T) {
	f, err := config.Load(testfile.Temp(t, "toolscript.toml", "[effects]\nrecord_dir = \"t\"\nrecord_max_bytes_per_user = 1024\n"))
	if err != nil {
		t.Fatal(err)
	}
	if total, perUser := recordBounds(f); total != trace.DefaultDirBytes || perUser != 1024 {
		t.Errorf("bounds %d, %d", total, perUser)
	}
	if total, perUser := recordBounds(nil); total != 1<<30 || perUser != 256<<20 {
		t.Errorf("default bounds %d, %d", total, perUser)
	}
}

// TestConfigWordsMatchTheirPackages: the words the configuration file
// uses for what another package defines are that package's.
func TestConfigWordsMatchTheirPackages(t *testing.T) {
	for _, c := range [][2]string{
		{config.AuthBearer, sdk.AuthBearer},
		{config.AuthBasic, sdk.AuthBasic},
		{config.AuthAPIKey, sdk.AuthAPIKey},
		{config.StderrInherit, upstream.StderrInherit},
		{config.StderrDiscard, upstream.StderrDiscard},
	} {
		if c[0] != c[1] {
			t.Errorf("config says %q where its package says %q", c[0], c[1])
		}
	}
}

// TestLoadConfigLintRules: lint's rule names in [lint] disable are checked
// when the file is loaded, with the key and the rule named.
func TestLoadConfigLintRules(t *testing.T) {
	for _, c := range []struct{ name, text, want string }{
		{"unknown rule", "[lint]\ndisable = [\"nope\"]\n", `lint.disable: lint: unknown rule "nope"`},
		{"syntax", "[lint]\ndisable = [\"syntax\"]\n", "cannot be disabled"},
		{"unknown key", "[lint]\nrules = 1\n", "unknown key lint.rules"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := testfile.Temp(t, "toolscript.toml", c.text)
			_, err := LoadConfig(path)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("error = %v, want it to name %s and contain %q", err, path, c.want)
			}
		})
	}
	if _, err := LoadConfig(testfile.Temp(t, "toolscript.toml", "[lint]\ndisable = [\"unused_local\"]\n")); err != nil {
		t.Errorf("a known rule: %v", err)
	}
	if _, err := LintOptions(config.ResolveLint(nil, config.LintFlags{Disable: []string{"nope"}})); err == nil {
		t.Error("LintOptions accepted an unknown rule")
	}
	o, err := LintOptions(config.LintSettings{Disable: []string{"unused_local"}, IO: true})
	if err != nil || !o.IO || len(o.Disable) != 1 || o.Disable[0] != "unused_local" {
		t.Errorf("options %+v, %v", o, err)
	}
}

// TestBaseURLUserinfoRedacted: the basic credential a base_url's user and
// password become is redacted as what it sends, the Authorization
// header's value, by the redactor every sink gets.
func TestBaseURLUserinfoRedacted(t *testing.T) {
	f, err := config.Load(testfile.Temp(t, "toolscript.toml", "[apis.a]\nspec = \"x\"\nbase_url = \"https://svc:${PW}@api.example/v1\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := resolveSDK(f, SDKOptions{Getenv: func(k string) string { return map[string]string{"PW": "p@ss:w0rd"}[k] }})
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.cfg.APIs[0]
	if a.BaseURL != "https://api.example/v1" || a.Auth == nil || a.Auth.Type != sdk.AuthBasic || a.Auth.Username != "svc" || a.Auth.Password != "p@ss:w0rd" {
		t.Errorf("base URL %q, auth %+v", a.BaseURL, a.Auth)
	}
	basic := base64.StdEncoding.EncodeToString([]byte("svc:p@ss:w0rd"))
	if got := cfg.cfg.Redactor.String(basic); got != "[REDACTED]" {
		t.Errorf("the basic header's value is not redacted: %q", got)
	}
}
