package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "toolscript.toml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// loadError is a configuration (text) Load refuses, with a part of the
// error it should give (want).
type loadError struct{ name, text, want string }

// checkLoadErrors loads each case's text and checks its error.
func checkLoadErrors(t *testing.T, cases []loadError) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(writeConfig(t, c.text))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error = %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	checkLoadErrors(t, []loadError{
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
	})
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
