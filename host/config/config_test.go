package config

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolscript/toolscript/internal/testfile"
)

// loadText loads text as a configuration file; an error ends the test.
func loadText(t *testing.T, text string) *File {
	t.Helper()
	f, err := Load(testfile.Temp(t, "toolscript.toml", text))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestLoadErrors: a file Load refuses gets an error naming the key and
// what is wanted, section by section.
func TestLoadErrors(t *testing.T) {
	cases := []struct{ name, text, want string }{
		{"unknown section", "[nope]\nx = 1\n", "unknown key nope"},
		{"unknown key", "[limits]\ntimeot = \"1s\"\n", "unknown key limits.timeot"},
		{"unknown io key", "[io]\ndirectory = \"x\"\n", "unknown key io.directory"},
		{"bad duration", "[limits]\ntimeout = \"soon\"\n", "limits.timeout"},
		{"zero duration", "[limits]\ntimeout = \"0s\"\n", "limits.timeout"},
		{"negative memory", "[limits]\nmemory_limit_mb = -1\n", "limits.memory_limit_mb: must not be negative"},
		{"negative logs", "[limits]\nmax_log_lines = -5\n", "limits.max_log_lines"},
		{"negative max_bytes", "[io]\nmax_bytes = -1\n", "io.max_bytes: must not be negative"},
		{"dotdot dir", "[io]\ndir = \"../elsewhere\"\n", "io.dir: \"../elsewhere\" must not contain '..'"},
		{"dotdot output dir", "[output]\ndir = \"a/../../b\"\n", "output.dir"},
		{"wrong type", "[io]\nenabled = \"yes\"\n", "enabled"},
		{"not toml", "[limits\n", "toolscript.toml"},
		// [server] and [auth] (the hosted mode)
		{"bad grace", "[server]\nshutdown_grace = \"soon\"\n", "server.shutdown_grace"},
		{"bad queue wait", "[server]\nqueue_wait = \"-1s\"\n", "server.queue_wait"},
		{"negative rate", "[server]\nrate_limit = -1\n", "server.rate_limit: must not be negative"},
		{"negative per user", "[server]\nmax_concurrent_per_user = -1\n", "server.max_concurrent_per_user"},
		{"negative connections", "[server]\nmax_connections = -1\n", "server.max_connections: must not be negative"},
		{"negative connections per client", "[server]\nmax_connections_per_client = -5\n", "server.max_connections_per_client: must not be negative"},
		{"negative auth failures", "[server]\nauth_failures_per_minute = -1\n", "server.auth_failures_per_minute: must not be negative"},
		{"large_results neither", "[server]\nlarge_results = \"disk\"\n", `server.large_results: "disk" is neither "resource" nor "file"`},
		{"bad body timeout", "[server]\nbody_timeout = \"0s\"\n", "server.body_timeout"},
		{"body timeout not a duration", "[server]\nbody_timeout = 30\n", "body_timeout"},
		{"bad write timeout", "[server]\nwrite_timeout = \"-1s\"\n", "server.write_timeout"},
		{"negative unwritten bytes", "[server]\nmax_unwritten_bytes_per_user = -1\n", "server.max_unwritten_bytes_per_user: must not be negative"},
		{"negative inline result", "[server]\nmax_inline_result = -1\n", "server.max_inline_result: must not be negative"},
		{"negative results kept", "[server]\nresults_kept_per_user = -1\n", "server.results_kept_per_user: must not be negative"},
		{"negative kept bytes", "[server]\nresults_kept_bytes_total = -1\n", "server.results_kept_bytes_total: must not be negative"},
		{"kept for not a duration", "[server]\nresults_kept_for = \"an hour\"\n", "server.results_kept_for"},
		{"audience without authority", "[auth]\naudience = \"a\"\n", "need authority"},
		{"authority without audience", "[auth]\nauthority = \"https://i.example.com\"\n", "auth.audience"},
		{"unknown auth key", "[auth]\nissuer = \"x\"\n", "unknown key auth.issuer"},
		{"origins not a list", "[server]\nallowed_origins = \"https://a.example.com\"\n", "allowed_origins"},
		// [apis.NAME], [mcp_servers.NAME] and [sdk]
		{"unknown api key", "[apis.p]\nspec = \"x\"\nspecs = \"y\"\n", "unknown key apis.p.specs"},
		{"missing spec", "[apis.p]\nbase_url = \"https://x\"\n", "apis.p.spec: missing"},
		{"bad name", "[apis.my-api]\nspec = \"x\"\n", "apis.my-api: \"my-api\" is not a Luau identifier"},
		{"bad timeout", "[apis.p]\nspec = \"x\"\ntimeout = \"soon\"\n", "apis.p.timeout"},
		{"both auths", "[apis.p]\nspec = \"x\"\nauth = \"a\"\nauth_env = \"B\"\n", "give auth or auth_env, not both"},
		{"bad base", "[apis.p]\nspec = \"x\"\nbase_url = \"ftp://x\"\n", "apis.p.base_url"},
		{"unknown api auth key", "[apis.p]\nspec = \"x\"\n[apis.p.auth]\ntokn = \"a\"\n", "auth: unknown key tokn"},
		{"auth number", "[apis.p]\nspec = \"x\"\nauth = 5\n", "auth: must be a string or a table"},
		{"max_calls", "[sdk]\nmax_calls = 0\n", "sdk.max_calls: must be positive"},
		{"max_response_bytes", "[sdk]\nmax_response_bytes = -1\n", "sdk.max_response_bytes"},
		{"unknown sdk key", "[sdk]\nmax_call = 1\n", "unknown key sdk.max_call"},
		{"max_host_bytes", "[limits]\nmax_host_bytes = -1\n", "limits.max_host_bytes: must not be negative"},
		{"max_host_bytes_total", "[limits]\nmax_host_bytes_total = -5\n", "limits.max_host_bytes_total: must not be negative"},
		{"safe and unsafe", "[apis.p]\nspec = \"x\"\nsafe = [\"search\", \"createThing\"]\nunsafe = [\"createThing\"]\n", `apis.p: "createThing" is in both safe and unsafe`},
		{"empty safe name", "[apis.p]\nspec = \"x\"\nsafe = [\"\"]\n", "apis.p.safe: an empty name"},
		{"empty unsafe name", "[apis.p]\nspec = \"x\"\nunsafe = [\" \"]\n", "apis.p.unsafe: an empty name"},
		{"safe not a list", "[apis.p]\nspec = \"x\"\nsafe = \"search\"\n", "safe"},
		{"tool safe and unsafe", "[mcp_servers.m]\ncommand = \"srv\"\nsafe = [\"write\"]\nunsafe = [\"write\"]\n", `mcp_servers.m: "write" is in both safe and unsafe`},
		// [server] (serve)
		{"bad max_timeout", "[server]\nmax_timeout = \"later\"\n", "server.max_timeout"},
		{"zero max_timeout", "[server]\nmax_timeout = \"0s\"\n", "server.max_timeout"},
		{"negative concurrency", "[server]\nmax_concurrent = -1\n", "server.max_concurrent: must not be negative"},
		{"negative script size", "[server]\nmax_script_bytes = -1\n", "server.max_script_bytes: must not be negative"},
		{"unknown server key", "[server]\nport = 80\n", "unknown key server.port"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(testfile.Temp(t, "toolscript.toml", c.text))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error = %v, want it to contain %q", err, c.want)
			}
		})
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.toml")); err == nil {
		t.Error("a missing config file loaded")
	}
}

func TestResolve(t *testing.T) {
	env := func(vars map[string]string) func(string) string {
		return func(k string) string { return vars[k] }
	}
	noEnv := env(nil)
	ptr := func(s string) *string { return &s }
	boolPtr := func(b bool) *bool { return &b }
	int64Ptr := func(n int64) *int64 { return &n }

	cases := []struct {
		name     string
		file     *File
		flags    Flags
		getenv   func(string) string
		mode     Mode
		wantIO   *ioWant
		wantWarn string
	}{
		{name: "run defaults on", mode: Run, getenv: noEnv, wantIO: &ioWant{Dir: DefaultIODir}},
		{name: "stdio defaults on", mode: Stdio, getenv: noEnv, wantIO: &ioWant{Dir: DefaultIODir}},
		{name: "hosted defaults off", mode: Hosted, getenv: noEnv},
		{name: "hosted enabled by config", mode: Hosted, getenv: noEnv, file: &File{IO: &IO{Enabled: boolPtr(true)}},
			wantIO: &ioWant{Dir: DefaultIODir}},
		{name: "hosted enabled by --io-dir", mode: Hosted, getenv: noEnv, flags: Flags{IODir: "files"},
			wantIO: &ioWant{Dir: "files"}},
		{name: "disabled by config", mode: Run, getenv: noEnv, file: &File{IO: &IO{Enabled: boolPtr(false)}}},
		{name: "--io-dir beats enabled=false", mode: Run, getenv: noEnv, file: &File{IO: &IO{Enabled: boolPtr(false)}}, flags: Flags{IODir: "d"},
			wantIO: &ioWant{Dir: "d"}},
		{name: "--no-io wins", mode: Run, getenv: noEnv, flags: Flags{IODir: "d", NoIO: true}},
		{name: "config dir", mode: Run, getenv: noEnv, file: &File{IO: &IO{Dir: ptr("cfg"), MaxBytes: int64Ptr(10), MaxFiles: intPtr(7)}},
			wantIO: &ioWant{Dir: "cfg", MaxBytes: 10, MaxFiles: 7}},
		{name: "env beats config", mode: Run, getenv: env(map[string]string{EnvIODir: "fromenv"}), file: &File{IO: &IO{Dir: ptr("cfg")}},
			wantIO: &ioWant{Dir: "fromenv"}},
		{name: "flag beats env", mode: Run, getenv: env(map[string]string{EnvIODir: "fromenv"}), flags: Flags{IODir: "flag", MaxBytes: 99},
			wantIO: &ioWant{Dir: "flag", MaxBytes: 99}},
		{name: "legacy output section", mode: Run, getenv: noEnv, file: &File{Output: &IO{Dir: ptr("out"), MaxBytes: int64Ptr(7)}},
			wantIO: &ioWant{Dir: "out", MaxBytes: 7}, wantWarn: "[output] is deprecated"},
		{name: "io beats legacy output", mode: Run, getenv: noEnv, file: &File{IO: &IO{Dir: ptr("new")}, Output: &IO{Dir: ptr("old")}},
			wantIO: &ioWant{Dir: "new"}, wantWarn: "[output] is deprecated"},
		{name: "~/ in --io-dir", mode: Stdio, getenv: env(map[string]string{"HOME": "/home/me"}), flags: Flags{IODir: "~/files"},
			wantIO: &ioWant{Dir: "/home/me/files"}},
		{name: "~/ in the environment", mode: Stdio, getenv: env(map[string]string{"HOME": "/home/me", EnvIODir: "~/env/files"}),
			wantIO: &ioWant{Dir: "/home/me/env/files"}},
		{name: "~/ in [io] dir", mode: Stdio, getenv: env(map[string]string{"HOME": "/home/me"}), file: &File{IO: &IO{Dir: ptr("~/cfg")}},
			wantIO: &ioWant{Dir: "/home/me/cfg"}},
		{name: "~ alone", mode: Stdio, getenv: env(map[string]string{"HOME": "/home/me"}), flags: Flags{IODir: "~"},
			wantIO: &ioWant{Dir: "/home/me"}},
		{name: "~ inside a name stays", mode: Stdio, getenv: env(map[string]string{"HOME": "/home/me"}), flags: Flags{IODir: "a~/~b"},
			wantIO: &ioWant{Dir: "a~/~b"}},
		{name: "~user stays", mode: Stdio, getenv: env(map[string]string{"HOME": "/home/me"}), flags: Flags{IODir: "~other/x"},
			wantIO: &ioWant{Dir: "~other/x"}},
		{name: "legacy --output-dir", mode: Hosted, getenv: noEnv, flags: Flags{OutputDir: "legacy"},
			wantIO: &ioWant{Dir: "legacy"}, wantWarn: "--output-dir is deprecated; use --io-dir"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Resolve(c.file, c.flags, c.getenv, c.mode)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case c.wantIO == nil && s.IO != nil:
				t.Errorf("io = %+v, want disabled", *s.IO)
			case c.wantIO != nil && (s.IO == nil || viewIO(s.IO) != *c.wantIO):
				t.Errorf("io = %+v, want %+v", s.IO, *c.wantIO)
			}
			if got := strings.Join(s.Warnings, "\n"); !strings.Contains(got, c.wantWarn) || (c.wantWarn == "" && got != "") {
				t.Errorf("warnings = %q, want %q", got, c.wantWarn)
			}
		})
	}
}

func TestResolveLimits(t *testing.T) {
	f := &File{Limits: Limits{Timeout: "5s", MemoryLimitMB: 16, MaxLogLines: 3, MaxLogBytes: 100, MaxResultBytes: 1000, MaxOutputBytes: 5000}}
	s, err := Resolve(f, Flags{}, nil, Run)
	if err != nil {
		t.Fatal(err)
	}
	want := ExecLimits{Timeout: 5 * time.Second, HeapBytes: 16 << 20, MaxLogLines: 3, MaxLogBytes: 100, MaxResultBytes: 1000, MaxOutputBytes: 5000}
	if s.Limits != want {
		t.Errorf("limits = %+v, want %+v", s.Limits, want)
	}
	s, _ = Resolve(f, Flags{Timeout: time.Second, MemoryLimitMB: 32}, nil, Run)
	if s.Limits.Timeout != time.Second || s.Limits.HeapBytes != 32<<20 {
		t.Errorf("flags did not override: %+v", s.Limits)
	}
	s, _ = Resolve(nil, Flags{}, nil, Run)
	if s.Limits != (ExecLimits{}) {
		t.Errorf("no limit set = %+v, want all zero (the runtime's defaults)", s.Limits)
	}
	for _, flags := range []Flags{{Timeout: -time.Second}, {MemoryLimitMB: -1}, {MemoryLimitMB: 5000}, {MaxBytes: -1}, {IODir: "a/../.."}} {
		if _, err := Resolve(nil, flags, nil, Run); err == nil {
			t.Errorf("flags %+v were accepted", flags)
		}
	}
}

func intPtr(v int) *int { return &v }

// ioWant is what IOSettings hold, comparable; MaxBytes 0 is none set
// (the runtime's default).
type ioWant struct {
	Dir      string
	MaxBytes int64
	MaxFiles int
}

func viewIO(s *IOSettings) ioWant {
	v := ioWant{Dir: s.Dir, MaxFiles: s.MaxFiles}
	if s.MaxBytes != nil {
		v.MaxBytes = *s.MaxBytes
	}
	return v
}
