package config

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/toolscript/toolscript/host/contract/redact"
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
	// Default is what an effect no [[policy]] rule matches gets: allow
	// (when empty), deny or ask.
	Default string `toml:"default" json:",omitempty"`
	// ApprovalTimeout bounds the wait for a person's answer (default
	// DefaultApprovalTimeout).
	ApprovalTimeout string `toml:"approval_timeout" kind:"duration" json:",omitempty"`
	// StateKey (a literal, ${VAR}s expanded) or StateKeyEnv (a variable's
	// name) is the key that seals a paused execution's state: 32 bytes,
	// as 64 hex digits or in standard base64. Never part of Digest.
	StateKey    string `toml:"state_key" json:"-"`
	StateKeyEnv string `toml:"state_key_env" json:"-"`
	// PreviousStateKeys (each a literal, ${VAR}s expanded) are keys being
	// rotated out: they open the states sealed under them and seal none,
	// so that a change of state_key refuses no pause in flight. At most
	// MaxPreviousStateKeys; they need a state_key.
	PreviousStateKeys []string `toml:"previous_state_keys" json:"-"`
	// StateDir, when set, is a directory every replica shares, where each
	// remembers the paused executions' states it resumed: a state then
	// resumes at most once across them (else once in each process).
	StateDir string `toml:"state_dir" json:",omitempty"`
}

// Policy is one [[policy]] entry: a rule that decides effects
// (host/contract/policy compiles it when the configuration loads).
type Policy struct {
	Name   string `toml:"name"`
	When   string `toml:"when"`
	Action string `toml:"action"`
}

// DefaultApprovalTimeout is [effects] approval_timeout when unset.
const DefaultApprovalTimeout = 10 * time.Minute

// MaxPreviousStateKeys bounds [effects] previous_state_keys: a rotation
// needs one or two, and every key still open is one more that, leaked,
// opens the states in flight.
const MaxPreviousStateKeys = 4

func (e Effects) check() error {
	if e.ApprovalTimeout != "" {
		if d, err := time.ParseDuration(e.ApprovalTimeout); err != nil || d <= 0 {
			return fmt.Errorf("effects.approval_timeout: %q is not a positive duration such as \"10m\"", e.ApprovalTimeout)
		}
	}
	if e.StateKey != "" && e.StateKeyEnv != "" {
		return errors.New("effects: give state_key or state_key_env, not both")
	}
	if len(e.PreviousStateKeys) > MaxPreviousStateKeys {
		return fmt.Errorf("effects.previous_state_keys: %d keys, more than %d", len(e.PreviousStateKeys), MaxPreviousStateKeys)
	}
	if len(e.PreviousStateKeys) > 0 && e.StateKey == "" && e.StateKeyEnv == "" {
		return errors.New("effects.previous_state_keys: give the key that replaces them as state_key or state_key_env")
	}
	for _, b := range []struct {
		key string
		v   *int64
	}{{"record_max_bytes", e.RecordMaxBytes}, {"record_max_bytes_per_user", e.RecordMaxBytesPerUser}} {
		if b.v != nil && *b.v <= 0 {
			return fmt.Errorf("effects.%s: must be positive (got %d)", b.key, *b.v)
		}
	}
	if e.StateDir != "" {
		if err := checkDir(e.StateDir); err != nil {
			return fmt.Errorf("effects.state_dir: %w", err)
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
	c.Effects.StateKey, c.Effects.StateKeyEnv, c.Effects.PreviousStateKeys = "", "", nil
	data, _ := json.Marshal(struct {
		File       File
		MCPServers []string
	}{c, sortedNames(f.MCPServers)})
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// policyHeader finds the [[policy]] headers of a file, for the lines of
// its rules.
var policyHeader = regexp.MustCompile(`(?m)^[ \t]*\[\[[ \t]*"?policy"?[ \t]*\]\]`)

// policyLines are the lines of the [[policy]] headers of data, in order.
func policyLines(data string) []int {
	var lines []int
	for _, m := range policyHeader.FindAllStringIndex(data, -1) {
		lines = append(lines, 1+strings.Count(data[:m[0]], "\n"))
	}
	return lines
}

// PolicyRule is a [[policy]] entry with the line of its header (0 when
// unknown: an inline table).
type PolicyRule struct {
	Policy
	Line int
}

// EffectsSettings are the settings of the rules and the approvals of
// every execution: plain values, compiled by host/app.
type EffectsSettings struct {
	// Rules are the [[policy]] entries in order; Default the [effects]
	// default ("" is allow).
	Rules   []PolicyRule
	Default string
	// ApprovalTimeout bounds the wait for a person (DefaultApprovalTimeout
	// when unset).
	ApprovalTimeout time.Duration
	// StateKey is the 32-byte key that seals paused executions' state;
	// nil when unset (a random key per process).
	StateKey redact.Secret
	// PreviousStateKeys open the states sealed under them and seal none.
	PreviousStateKeys []redact.Secret
	// StateDir is [effects] state_dir, a leading ~ expanded ("" : none).
	StateDir string
}

// ResolveEffects reads the rules and approval settings of f; getenv reads
// state_key_env and the ${VAR}s of state_key.
func ResolveEffects(f *File, getenv func(string) string) (EffectsSettings, error) {
	s := EffectsSettings{ApprovalTimeout: DefaultApprovalTimeout}
	if f == nil {
		return s, nil
	}
	e := f.Effects
	s.Default = e.Default
	if e.ApprovalTimeout != "" {
		s.ApprovalTimeout, _ = time.ParseDuration(e.ApprovalTimeout) // checked at Load
	}
	for i, p := range f.Policy {
		r := PolicyRule{Policy: p}
		if i < len(f.policyLines) && len(f.policyLines) == len(f.Policy) {
			r.Line = f.policyLines[i]
		}
		s.Rules = append(s.Rules, r)
	}
	if e.StateDir != "" {
		dir, err := expandHome(e.StateDir, getenv)
		if err != nil {
			return s, fmt.Errorf("effects.state_dir: %w", err)
		}
		s.StateDir = dir
	}
	key, err := stateKey(e, getenv)
	if err != nil {
		return s, err
	}
	s.StateKey = key
	for i, text := range e.PreviousStateKeys {
		what := fmt.Sprintf("effects.previous_state_keys[%d]", i)
		if text, err = expandVars(text, getenv); err != nil {
			return s, fmt.Errorf("%s: %w", what, err)
		}
		previous, err := decodeStateKey(text, what)
		if err != nil {
			return s, err
		}
		s.PreviousStateKeys = append(s.PreviousStateKeys, previous)
	}
	return s, nil
}

// readStateKey reads what the state key comes from through env, as
// ResolveSDK reads every other value the configuration takes from the
// environment: the variable state_key_env names or the ${VAR}s of
// state_key and previous_state_keys are withheld from the MCP servers' environments (a server
// holding a key could forge a paused execution's state), and each key's
// text is a secret of the redactor.
func (e Effects) readStateKey(env *secretEnv) {
	switch {
	case e.StateKeyEnv != "":
		env.read(e.StateKeyEnv)
	case e.StateKey != "":
		if text, err := expandVars(e.StateKey, env.get); err == nil {
			env.add(strings.TrimSpace(text))
		}
	}
	for _, previous := range e.PreviousStateKeys {
		if text, err := expandVars(previous, env.get); err == nil {
			env.add(strings.TrimSpace(text))
		}
	}
}

// stateKey reads and decodes [effects] state_key or state_key_env.
func stateKey(e Effects, getenv func(string) string) (redact.Secret, error) {
	text, what := e.StateKey, "effects.state_key"
	switch {
	case e.StateKeyEnv != "":
		what = "effects.state_key_env"
		if getenv != nil {
			text = getenv(e.StateKeyEnv)
		}
		if text == "" {
			return redact.Secret{}, fmt.Errorf("%s: the environment variable %s is not set or empty", what, e.StateKeyEnv)
		}
	case text != "":
		var err error
		if text, err = expandVars(text, getenv); err != nil {
			return redact.Secret{}, fmt.Errorf("%s: %w", what, err)
		}
	default:
		return redact.Secret{}, nil
	}
	return decodeStateKey(text, what)
}

// decodeStateKey decodes a state key given as 64 hex digits or in
// standard base64; what names it in an error.
func decodeStateKey(text, what string) (redact.Secret, error) {
	text = strings.TrimSpace(text)
	key, err := hex.DecodeString(text)
	if err != nil || len(text) != 64 {
		key, err = base64.StdEncoding.DecodeString(text)
	}
	if err != nil || len(key) != 32 {
		return redact.Secret{}, fmt.Errorf("%s: want 32 bytes as 64 hex digits or in standard base64 (openssl rand -base64 32), not a value of %d characters", what, len(text))
	}
	return redact.NewSecret(string(key)), nil
}
