package app

import (
	"fmt"
	"time"

	"github.com/toolscript/toolscript/host/config"
	"github.com/toolscript/toolscript/host/contract/effects/trace"
	"github.com/toolscript/toolscript/host/contract/redact"
	"github.com/toolscript/toolscript/host/lint"
	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/host/runtime/sandboxio"
	"github.com/toolscript/toolscript/host/sdk"
	"github.com/toolscript/toolscript/host/serve/hosted"
	"github.com/toolscript/toolscript/host/serve/mcpserver"
)

// The settings host/config resolves are plain values; here they become
// each package's Config. A setting left zero is the default of the
// package that uses it, and these are those defaults by name, for what
// shows them (a command's --help): each is the using package's own.
const (
	DefaultTimeout        = luau.DefaultTimeout
	DefaultMemoryLimitMB  = luau.DefaultHeapBytes >> 20
	DefaultIOMaxBytes     = luau.DefaultIOMaxBytes
	DefaultMaxCalls       = sdk.DefaultMaxCalls
	DefaultMaxConcurrent  = mcpserver.DefaultMaxConcurrent
	DefaultMaxTimeout     = mcpserver.DefaultMaxTimeout
	DefaultMaxScriptBytes = mcpserver.DefaultMaxScriptBytes
	DefaultShutdownGrace  = hosted.DefaultShutdownGrace
	// DefaultQueueWait bounds the wait for an execution slot in the
	// hosted mode; under stdio a call waits as long as it lives.
	DefaultQueueWait = 30 * time.Second
)

// LoadConfig reads the configuration file path names, or
// config.DefaultFileName when path is empty and that file exists (with
// neither, an empty one), and checks what only the packages that use the
// settings know: lint's rule names, and the [[policy]] rules (compiled and
// type-checked).
func LoadConfig(path string) (*config.File, error) {
	f, err := config.LoadDefault(path)
	if err != nil {
		return nil, err
	}
	if err := (lint.Options{Disable: f.Lint.Disable}).Validate(); err != nil {
		return nil, fmt.Errorf("config %s: lint.disable: %w", f.Path(), err)
	}
	if _, err := compileRules(f); err != nil {
		return nil, err
	}
	return f, nil
}

// CheckIODir reports whether dir can be the io library's directory
// (sandboxio.CheckDir): one this process can write in, or can create. It
// creates nothing.
func CheckIODir(dir string) error { return sandboxio.CheckDir(dir) }

// LintOptions are lint's options for the resolved settings; a rule that
// does not exist, or cannot be disabled, is an error naming it.
func LintOptions(s config.LintSettings) (lint.Options, error) {
	o := lint.Options{Disable: s.Disable, IO: s.IO}
	if err := o.Validate(); err != nil {
		return o, err
	}
	return o, nil
}

// scriptLimits are the runtime's limits of s, the runtime's defaults where
// s sets none.
func scriptLimits(s config.ExecLimits) luau.Limits {
	return luau.Limits(s).WithDefaults()
}

// scriptIO is the runtime's io of s (nil when io is off), with the
// runtime's default write budget where s sets none.
func scriptIO(s *config.IOSettings) *luau.IO {
	if s == nil {
		return nil
	}
	io := &luau.IO{Dir: s.Dir, MaxBytes: luau.DefaultIOMaxBytes, MaxFiles: s.MaxFiles}
	if s.MaxBytes != nil {
		io.MaxBytes = *s.MaxBytes
	}
	return io
}

// serverLimits are serve's limits of s with what app says of them: the
// scripts run at once (the MCP server's default, named in serve's
// messages) and the hosted mode's queue wait, where s sets none. The MCP
// server fills in its other defaults itself.
func serverLimits(s config.ServerSettings) config.ServerSettings {
	if s.MaxConcurrent <= 0 {
		s.MaxConcurrent = DefaultMaxConcurrent
	}
	if s.QueueWait <= 0 && s.Mode() == config.Hosted {
		s.QueueWait = DefaultQueueWait
	}
	return s
}

// maxResponseBytes is the [sdk] max_response_bytes an execution with f is
// held to (the sdk's default when f sets none).
func maxResponseBytes(f *config.File) int64 {
	if f != nil && f.SDK.MaxResponseBytes != nil {
		return *f.SDK.MaxResponseBytes
	}
	return sdk.DefaultMaxResponseBytes
}

// recordBounds are the bounds of the traces in record_dir: all of them
// together (record_max_bytes) and each user's (record_max_bytes_per_user),
// the trace quota's defaults when f sets none.
func recordBounds(f *config.File) (total, perUser int64) {
	total, perUser = trace.DefaultDirBytes, trace.DefaultDirBytesPerUser
	if f == nil {
		return total, perUser
	}
	if v := f.Effects.RecordMaxBytes; v != nil {
		total = *v
	}
	if v := f.Effects.RecordMaxBytesPerUser; v != nil {
		perUser = *v
	}
	return total, perUser
}

// sdkConfig is the sdk's configuration of s (the sdk's defaults where s
// sets no budget); its secrets are every secret of s, the upstream
// servers' too.
func sdkConfig(s config.SDKSettings) sdk.Config {
	cfg := sdk.Config{
		Frozen:   s.Frozen,
		MaxCalls: s.MaxCalls, MaxResponseBytes: s.MaxResponseBytes, MaxParallel: s.MaxParallel,
		MaxHostBytes: s.MaxHostBytes, MaxHostBytesTotal: s.MaxHostBytesTotal,
		Secrets: append([]redact.Secret(nil), s.Secrets...),
	}
	for _, a := range s.APIs {
		cfg.APIs = append(cfg.APIs, sdk.APIConfig{
			Name: a.Name, Spec: a.Spec, Dir: a.Dir, BaseURL: a.BaseURL, Timeout: a.Timeout,
			Auth: credential(a.Auth), Frozen: a.Frozen, Safety: sdk.Safety(a.Safety), PropagateTrace: a.PropagateTrace,
		})
	}
	for _, u := range s.Upstreams {
		cfg.Secrets = append(cfg.Secrets, u.Secrets...)
	}
	if len(s.ToolSafety) > 0 {
		cfg.ToolSafety = make(map[string]sdk.Safety, len(s.ToolSafety))
		for name, safety := range s.ToolSafety {
			cfg.ToolSafety[name] = sdk.Safety(safety)
		}
	}
	return cfg
}

// credential is the sdk's credential of c (nil for none): the one place
// its secrets are revealed, to be sent.
func credential(c *config.Credential) *sdk.Credential {
	if c == nil {
		return nil
	}
	return &sdk.Credential{
		Type: c.Type, Token: c.Token.Reveal(),
		Username: c.Username.Reveal(), Password: c.Password.Reveal(),
		Value: c.Value.Reveal(), Name: c.Name, In: c.In,
	}
}
