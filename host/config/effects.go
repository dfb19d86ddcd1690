package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// Effects is the [effects] section: what the operator asks of the effects
// layer (host/contract/effects) for every execution.
type Effects struct {
	// RecordDir, when set, is where `serve` records each execution's trace
	// (one file per execution). It is the operator's choice: no caller can
	// ask for a recording, nor name its file.
	RecordDir string `toml:"record_dir"`
	// RecordMaxBytes bounds the bytes of every trace in RecordDir
	// together, RecordMaxBytesPerUser each user's (host/contract/effects/trace
	// Quota; nil is its default).
	RecordMaxBytes        *int64 `toml:"record_max_bytes" json:",omitempty"`
	RecordMaxBytesPerUser *int64 `toml:"record_max_bytes_per_user" json:",omitempty"`
}

func (e Effects) check() error {
	for _, b := range []struct {
		key string
		v   *int64
	}{{"record_max_bytes", e.RecordMaxBytes}, {"record_max_bytes_per_user", e.RecordMaxBytesPerUser}} {
		if b.v != nil && *b.v <= 0 {
			return fmt.Errorf("effects.%s: must be positive (got %d)", b.key, *b.v)
		}
	}
	if e.RecordDir == "" {
		return nil
	}
	if err := checkDir(e.RecordDir); err != nil {
		return fmt.Errorf("effects.record_dir: %w", err)
	}
	return nil
}

// RecordDir is [effects] record_dir with a leading ~ expanded; "" when
// executions are not recorded.
func (f *File) RecordDir(getenv func(string) string) (string, error) {
	if f == nil || f.Effects.RecordDir == "" {
		return "", nil
	}
	dir, err := expandHome(f.Effects.RecordDir, getenv)
	if err != nil {
		return "", fmt.Errorf("effects.record_dir: %w", err)
	}
	return dir, nil
}

// Digest is the SHA-256 (hex) of the configuration f holds, without its
// credentials (a literal auth value is left out, and an *_env key gives
// only the variable's name): a trace's header names the configuration it
// was recorded with.
func (f *File) Digest() string {
	if f == nil {
		f = &File{}
	}
	c := *f
	c.APIs = make(map[string]API, len(f.APIs))
	for name, a := range f.APIs {
		a.Auth = nil
		c.APIs[name] = a
	}
	c.MCPServers = nil // their headers may hold tokens
	data, _ := json.Marshal(struct {
		File       File
		MCPServers []string
	}{c, sortedNames(f.MCPServers)})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
