// Package config reads toolscript.toml and resolves, with command-line flags
// and the environment, the settings one surface (run, serve) runs scripts
// with: the execution limits, the io directory and the sdk's APIs, serve's
// limits (server.go) and the hosted mode's settings (hosted.go).
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

	"github.com/toolscript/toolscript/host/luau"
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

	// dir is the directory of the file: relative spec paths start there.
	dir string
}

// Limits is the [limits] section.
type Limits struct {
	Timeout        string `toml:"timeout"`
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
	meta, err := toml.DecodeFile(path, &f)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	if undecoded := meta.Undecoded(); len(undecoded) > 0 {
		keys := make([]string, len(undecoded))
		for i, k := range undecoded {
			keys[i] = k.String()
		}
		return nil, fmt.Errorf("config %s: unknown key %s", path, strings.Join(keys, ", "))
	}
	if err := f.check(); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	f.dir = filepath.Dir(path)
	return &f, nil
}

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

func (f *File) check() error {
	l := f.Limits
	if l.Timeout != "" {
		d, err := time.ParseDuration(l.Timeout)
		if err != nil || d <= 0 {
			return fmt.Errorf("limits.timeout: %q is not a positive duration such as \"30s\"", l.Timeout)
		}
	}
	for _, v := range []struct {
		key   string
		value int64
	}{
		{"limits.memory_limit_mb", l.MemoryLimitMB},
		{"limits.max_log_lines", int64(l.MaxLogLines)},
		{"limits.max_log_bytes", int64(l.MaxLogBytes)},
		{"limits.max_result_bytes", int64(l.MaxResultBytes)},
		{"limits.max_output_bytes", int64(l.MaxOutputBytes)},
		{"limits.max_host_bytes", l.MaxHostBytes},
		{"limits.max_host_bytes_total", l.MaxHostBytesTotal},
	} {
		if v.value < 0 {
			return fmt.Errorf("%s: must not be negative (got %d)", v.key, v.value)
		}
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
	if err := f.Lint.check(); err != nil {
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
	Limits luau.Limits
	// IO is nil when io is disabled.
	IO *luau.IO
	// Warnings are deprecation notices for the user, one line each.
	Warnings []string
}

// Resolve combines the config file, the flags and the environment (getenv,
// usually os.Getenv) into Settings. Flags win over the environment, which
// wins over the file.
func Resolve(f *File, flags Flags, getenv func(string) string, mode Mode) (Settings, error) {
	if f == nil {
		f = &File{}
	}
	var s Settings
	l := f.Limits
	if l.Timeout != "" {
		s.Limits.Timeout, _ = time.ParseDuration(l.Timeout) // checked by Load
	}
	if flags.Timeout != 0 {
		if flags.Timeout < 0 {
			return s, fmt.Errorf("--timeout must be positive (got %s)", flags.Timeout)
		}
		s.Limits.Timeout = flags.Timeout
	}
	memoryMB := l.MemoryLimitMB
	if flags.MemoryLimitMB != 0 {
		if flags.MemoryLimitMB < 0 {
			return s, fmt.Errorf("--memory-limit must be positive (got %d)", flags.MemoryLimitMB)
		}
		memoryMB = flags.MemoryLimitMB
	}
	if memoryMB > 4096 {
		return s, fmt.Errorf("memory limit %d MB exceeds the 4096 MB a script can address", memoryMB)
	}
	s.Limits.HeapBytes = uint64(memoryMB) << 20
	s.Limits.MaxLogLines = l.MaxLogLines
	s.Limits.MaxLogBytes = l.MaxLogBytes
	s.Limits.MaxResultBytes = l.MaxResultBytes
	s.Limits.MaxOutputBytes = l.MaxOutputBytes
	s.Limits = s.Limits.WithDefaults()

	io := f.IO
	if f.Output != nil {
		s.Warnings = append(s.Warnings, "config: [output] is deprecated; use [io] (same keys: dir, max_bytes, enabled)")
		if io == nil {
			io = f.Output
		}
	}
	if flags.OutputDir != "" {
		s.Warnings = append(s.Warnings, "--output-dir is deprecated; use --io-dir")
	}
	if io == nil {
		io = &IO{}
	}

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
	if flags.NoIO {
		enabled = false
	}
	if !enabled {
		return s, nil
	}
	dir, err := expandHome(dir, getenv)
	if err != nil {
		return s, fmt.Errorf("io directory: %w", err)
	}
	if err := checkDir(dir); err != nil {
		return s, fmt.Errorf("io directory: %w", err)
	}
	maxBytes := int64(luau.DefaultIOMaxBytes)
	if io.MaxBytes != nil {
		maxBytes = *io.MaxBytes
	}
	if flags.MaxBytes != 0 {
		if flags.MaxBytes < 0 {
			return s, fmt.Errorf("--max-bytes must not be negative (got %d)", flags.MaxBytes)
		}
		maxBytes = flags.MaxBytes
	}
	s.IO = &luau.IO{Dir: dir, MaxBytes: maxBytes} // MaxFiles 0: sandboxio's default
	if io.MaxFiles != nil {
		s.IO.MaxFiles = *io.MaxFiles
	}
	return s, nil
}
