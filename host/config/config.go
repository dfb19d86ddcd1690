// Package config reads toolscript.toml and resolves, with command-line flags
// and the environment, the settings one surface (run, serve, lint, sdk)
// runs with: the execution limits, the io directory and the sdk's APIs,
// serve's limits (server.go) and the hosted mode's settings (hosted.go).
//
// The settings are plain values: config imports none of the packages that
// use them. A setting left unset is zero (or nil) and means the default of
// the package that uses it, which host/app fills in when it maps the
// settings into that package's Config; what config checks beyond the
// file's own shape (lint's rule names) host/app checks after Load.
package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// File is the content of a toolscript.toml. Every section is optional.
type File struct {
	Limits Limits `toml:"limits"`
	IO     *IO    `toml:"io"`
	// Output is the deprecated [output] section, read as [io].
	Output *IO `toml:"output"`
	// Server is the [server] section (server.go).
	Server Server `toml:"server"`
	// Auth is the [auth] section (hosted.go).
	Auth Auth `toml:"auth"`
	// Lint is the [lint] section (lint.go).
	Lint Lint `toml:"lint"`
	// APIs, FrozenParams and SDK are the sdk's sections (sdk.go).
	APIs         map[string]API `toml:"apis"`
	FrozenParams map[string]any `toml:"frozen_params"`
	SDK          SDK            `toml:"sdk"`
	// MCPServers are the upstream MCP servers (mcp.go).
	MCPServers map[string]MCPServer `toml:"mcp_servers"`
	// Effects is the [effects] section (effects.go).
	Effects Effects `toml:"effects"`
	// Policy are the [[policy]] rules, in order (effects.go).
	Policy []Policy `toml:"policy"`

	// path is the file read; dir is its directory: relative spec paths
	// start there.
	path, dir string
	// policyLines are the lines of the [[policy]] headers.
	policyLines []int
}

// Limits is the [limits] section.
type Limits struct {
	Timeout        string `toml:"timeout" kind:"duration"`
	MemoryLimitMB  int64  `toml:"memory_limit_mb"`
	MaxLogLines    int    `toml:"max_log_lines"`
	MaxLogBytes    int    `toml:"max_log_bytes"`
	MaxResultBytes int    `toml:"max_result_bytes"`
	MaxOutputBytes int    `toml:"max_output_bytes"`
	// MaxHostBytes and MaxHostBytesTotal bound the bytes of sdk responses
	// the host holds at once, for one execution and for all (sdk.Config);
	// 0 is the sdk's default.
	MaxHostBytes      int64 `toml:"max_host_bytes"`
	MaxHostBytesTotal int64 `toml:"max_host_bytes_total"`
}

// IO is the [io] section (and the deprecated [output] one).
type IO struct {
	Dir      *string `toml:"dir"`
	MaxBytes *int64  `toml:"max_bytes"`
	MaxFiles *int    `toml:"max_files"`
	Enabled  *bool   `toml:"enabled"`
}

// DefaultFileName is the config file read from the working directory when
// no --config is given.
const DefaultFileName = "toolscript.toml"

// DefaultIODir is the io directory when nothing names one.
const DefaultIODir = "./toolscript-files"

// EnvIODir is the environment variable that overrides [io] dir.
const EnvIODir = "TOOLSCRIPT_IO_DIR"

// Load reads and checks a config file. Unknown sections and keys are errors
// that name them.
func Load(path string) (*File, error) {
	var f File
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	meta, err := toml.Decode(string(data), &f)
	if err != nil {
		if explained := wrongType(string(data)); explained != nil {
			return nil, fmt.Errorf("config %s: %w", path, explained)
		}
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	if undecoded := meta.Undecoded(); len(undecoded) > 0 {
		return nil, fmt.Errorf("config %s: %w", path, unknownKeys(string(data), undecoded))
	}
	if err := f.check(); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	f.path, f.dir = path, filepath.Dir(path)
	f.policyLines = policyLines(string(data))
	return &f, nil
}

// Path is the file f was read from; "" when no file was read.
func (f *File) Path() string { return f.path }

// LoadDefault loads path, or DefaultFileName if path is empty and that file
// exists; with neither it returns an empty File.
func LoadDefault(path string) (*File, error) {
	if path == "" {
		if _, err := os.Stat(DefaultFileName); err != nil {
			return &File{}, nil
		}
		path = DefaultFileName
	}
	return Load(path)
}

// count is one whole-number setting of the file: its key and its value.
type count struct {
	key   string
	value int64
}

// checkNotNegative refuses the first of counts below zero, naming its key.
func checkNotNegative(counts ...count) error {
	for _, c := range counts {
		if c.value < 0 {
			return fmt.Errorf("%s: must not be negative (got %d)", c.key, c.value)
		}
	}
	return nil
}

func (f *File) check() error {
	l := f.Limits
	if err := checkDuration("limits.timeout", l.Timeout, "30s"); err != nil {
		return err
	}
	if err := checkNotNegative(
		count{"limits.memory_limit_mb", l.MemoryLimitMB},
		count{"limits.max_log_lines", int64(l.MaxLogLines)},
		count{"limits.max_log_bytes", int64(l.MaxLogBytes)},
		count{"limits.max_result_bytes", int64(l.MaxResultBytes)},
		count{"limits.max_output_bytes", int64(l.MaxOutputBytes)},
		count{"limits.max_host_bytes", l.MaxHostBytes},
		count{"limits.max_host_bytes_total", l.MaxHostBytesTotal},
	); err != nil {
		return err
	}
	if err := f.Effects.check(); err != nil {
		return err
	}

	if err := f.Server.check(); err != nil {
		return err
	}
	if err := f.Auth.check(); err != nil {
		return err
	}
	if err := f.checkSDK(); err != nil {
		return err
	}
	for name, section := range map[string]*IO{"io": f.IO, "output": f.Output} {
		if section == nil {
			continue
		}
		if section.MaxBytes != nil && *section.MaxBytes < 0 {
			return fmt.Errorf("%s.max_bytes: must not be negative (got %d)", name, *section.MaxBytes)
		}
		if section.MaxFiles != nil && *section.MaxFiles < 1 {
			return fmt.Errorf("%s.max_files: must be at least 1 (got %d)", name, *section.MaxFiles)
		}
		if section.Dir != nil {
			if err := checkDir(*section.Dir); err != nil {
				return fmt.Errorf("%s.dir: %w", name, err)
			}
		}
	}
	return nil
}

// expandHome replaces a leading "~" (alone or before a separator) with the
// home directory, as a shell would: MCP clients start servers without one,
// so `--io-dir ~/files` would otherwise name a directory called "~". The
// home directory is $HOME (%USERPROFILE% on Windows), else the system's.
func expandHome(dir string, getenv func(string) string) (string, error) {
	if dir != "~" && !strings.HasPrefix(dir, "~/") && !strings.HasPrefix(dir, "~"+string(filepath.Separator)) {
		return dir, nil
	}
	home := ""
	if getenv != nil {
		if runtime.GOOS == "windows" {
			home = getenv("USERPROFILE")
		} else {
			home = getenv("HOME")
		}
	}
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("%q starts with ~, but the home directory is unknown: %w", dir, err)
		}
		home = h
	}
	return filepath.Join(home, dir[1:]), nil
}

func checkDir(dir string) error {
	if dir == "" {
		return errors.New("must not be empty")
	}
	for _, part := range strings.Split(filepath.ToSlash(dir), "/") {
		if part == ".." {
			return fmt.Errorf("%q must not contain '..'", dir)
		}
	}
	return nil
}

// Mode is the surface settings are resolved for: it decides defaults.
type Mode int

// The modes. io is enabled by default for Run and Stdio, not for Hosted.
const (
	Run Mode = iota
	Stdio
	Hosted
)

// Flags are the command-line flags shared by run and serve. Zero values mean
// "not given".
type Flags struct {
	Timeout       time.Duration
	MemoryLimitMB int64
	IODir         string
	NoIO          bool
	MaxBytes      int64
	// OutputDir is the deprecated --output-dir.
	OutputDir string
}

// Settings are what an execution runs with.
type Settings struct {
	Limits ExecLimits
	// IO is nil when io is disabled.
	IO *IOSettings
	// Warnings are deprecation notices for the user, one line each.
	Warnings []string
}

// ExecLimits are an execution's limits ([limits], --timeout,
// --memory-limit); a zero field is the runtime's default. They are field
// for field luau.Limits (host/app converts one into the other, so the
// compiler keeps them alike).
type ExecLimits struct {
	Timeout        time.Duration
	HeapBytes      uint64
	MaxLogLines    int
	MaxLogBytes    int
	MaxResultBytes int
	MaxOutputBytes int
}

// IOSettings are a script's io library: its directory and budgets.
type IOSettings struct {
	Dir string
	// MaxBytes is the write budget; nil is the runtime's default.
	MaxBytes *int64
	// MaxFiles caps the files created; 0 is the default.
	MaxFiles int
}

// MaxScriptMemoryMB is the most memory a script can address (wasm32's
// 4 GiB), the bound of --memory-limit and limits.memory_limit_mb.
const MaxScriptMemoryMB = 4096

// Resolve combines the config file, the flags and the environment (getenv,
// usually os.Getenv) into Settings. Flags win over the environment, which
// wins over the file.
func Resolve(f *File, flags Flags, getenv func(string) string, mode Mode) (Settings, error) {
	if f == nil {
		f = &File{}
	}
	var s Settings
	var err error
	if s.Limits, err = resolveLimits(f.Limits, flags); err != nil {
		return s, err
	}
	io, warnings := ioSection(f, flags)
	s.Warnings = warnings
	dir, enabled := ioDirOf(io, flags, getenv, mode)
	if !enabled {
		return s, nil
	}
	if dir, err = expandHome(dir, getenv); err != nil {
		return s, fmt.Errorf("io directory: %w", err)
	}
	if err := checkDir(dir); err != nil {
		return s, fmt.Errorf("io directory: %w", err)
	}
	s.IO = &IOSettings{Dir: dir, MaxBytes: io.MaxBytes}
	if flags.MaxBytes != 0 {
		if flags.MaxBytes < 0 {
			return s, fmt.Errorf("--max-bytes must not be negative (got %d)", flags.MaxBytes)
		}
		s.IO.MaxBytes = &flags.MaxBytes
	}
	if io.MaxFiles != nil {
		s.IO.MaxFiles = *io.MaxFiles
	}
	return s, nil
}

// resolveLimits combines [limits] with the flags, which win.
func resolveLimits(l Limits, flags Flags) (ExecLimits, error) {
	var out ExecLimits
	if l.Timeout != "" {
		out.Timeout, _ = time.ParseDuration(l.Timeout) // checked by Load
	}
	if flags.Timeout != 0 {
		if flags.Timeout < 0 {
			return out, fmt.Errorf("--timeout must be positive (got %s)", flags.Timeout)
		}
		out.Timeout = flags.Timeout
	}
	memoryMB := l.MemoryLimitMB
	if flags.MemoryLimitMB != 0 {
		if flags.MemoryLimitMB < 0 {
			return out, fmt.Errorf("--memory-limit must be positive (got %d)", flags.MemoryLimitMB)
		}
		memoryMB = flags.MemoryLimitMB
	}
	if memoryMB > MaxScriptMemoryMB {
		return out, fmt.Errorf("memory limit %d MB exceeds the %d MB a script can address", memoryMB, MaxScriptMemoryMB)
	}
	out.HeapBytes = uint64(memoryMB) << 20
	out.MaxLogLines = l.MaxLogLines
	out.MaxLogBytes = l.MaxLogBytes
	out.MaxResultBytes = l.MaxResultBytes
	out.MaxOutputBytes = l.MaxOutputBytes
	return out, nil
}

// ioSection is the [io] section (or the deprecated [output]), never nil,
// with the deprecation notices of what was read.
func ioSection(f *File, flags Flags) (*IO, []string) {
	var warnings []string
	io := f.IO
	if f.Output != nil {
		warnings = append(warnings, "config: [output] is deprecated; use [io] (same keys: dir, max_bytes, enabled)")
		if io == nil {
			io = f.Output
		}
	}
	if flags.OutputDir != "" {
		warnings = append(warnings, "--output-dir is deprecated; use --io-dir")
	}
	if io == nil {
		io = &IO{}
	}
	return io, warnings
}

// ioDirOf is the io directory and whether io is on: a flag wins over the
// environment, which wins over the file; io is on by default except in
// the hosted mode.
func ioDirOf(io *IO, flags Flags, getenv func(string) string, mode Mode) (string, bool) {
	enabled := mode != Hosted
	if io.Enabled != nil {
		enabled = *io.Enabled
	}
	dir := DefaultIODir
	switch {
	case flags.IODir != "":
		dir, enabled = flags.IODir, true
	case getenv != nil && getenv(EnvIODir) != "":
		dir = getenv(EnvIODir)
	case io.Dir != nil:
		dir = *io.Dir
	case flags.OutputDir != "":
		dir, enabled = flags.OutputDir, true
	}
	return dir, enabled && !flags.NoIO
}
