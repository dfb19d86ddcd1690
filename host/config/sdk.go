package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/toolscript/toolscript/host/catalog"
	"github.com/toolscript/toolscript/host/redact"
	"github.com/toolscript/toolscript/host/sdk"
	"github.com/toolscript/toolscript/host/upstream"
)

// API is one [apis.NAME] section: an OpenAPI spec scripts call as
// sdk.NAME.
type API struct {
	Spec    string `toml:"spec"`
	BaseURL string `toml:"base_url"`
	// Auth is `auth = "literal"` or the [apis.NAME.auth] table.
	Auth         *APIAuth       `toml:"auth"`
	AuthEnv      string         `toml:"auth_env"`
	Timeout      string         `toml:"timeout"`
	FrozenParams map[string]any `toml:"frozen_params"`
	// Safe and Unsafe classify operations (by operationId or sdk function
	// name) against their HTTP method: a POST that only searches is safe.
	Safe   []string `toml:"safe"`
	Unsafe []string `toml:"unsafe"`
}

// checkSafety checks a section's safe and unsafe lists as far as they can
// be without the spec or the server's tools (sdk.New checks the names
// against those): no empty name, none in both lists.
func checkSafety(key string, safe, unsafe []string) error {
	inSafe := map[string]bool{}
	for _, n := range safe {
		if strings.TrimSpace(n) == "" {
			return fmt.Errorf("%s.safe: an empty name", key)
		}
		inSafe[n] = true
	}
	for _, n := range unsafe {
		if strings.TrimSpace(n) == "" {
			return fmt.Errorf("%s.unsafe: an empty name", key)
		}
		if inSafe[n] {
			return fmt.Errorf("%s: %q is in both safe and unsafe: name it in one", key, n)
		}
	}
	return nil
}

// APIAuth is an API's `auth`: a literal secret, or a table with a type.
type APIAuth struct {
	Literal string
	Table   map[string]string
}

// authKeys are the keys of the [apis.NAME.auth] table.
var authKeys = map[string]bool{
	"type": true, "token": true, "token_env": true, "username": true, "username_env": true,
	"password": true, "password_env": true, "value": true, "value_env": true, "name": true, "in": true,
}

// UnmarshalTOML reads `auth = "..."` or an auth table (string values only).
func (a *APIAuth) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case string:
		a.Literal = x
		return nil
	case map[string]any:
		a.Table = map[string]string{}
		for k, e := range x {
			if !authKeys[k] {
				return fmt.Errorf("auth: unknown key %s (keys: type, token, token_env, username, username_env, password, password_env, value, value_env, name, in)", k)
			}
			s, ok := e.(string)
			if !ok {
				return fmt.Errorf("auth.%s: must be a string", k)
			}
			a.Table[k] = s
		}
		return nil
	}
	return errors.New("auth: must be a string or a table")
}

// SDK is the [sdk] section: per-execution budgets of sdk calls.
type SDK struct {
	MaxCalls         *int   `toml:"max_calls"`
	MaxResponseBytes *int64 `toml:"max_response_bytes"`
	MaxParallel      *int   `toml:"max_parallel"`
}

func (f *File) checkSDK() error {
	for _, name := range sortedNames(f.APIs) {
		a := f.APIs[name]
		key := "apis." + name
		if !catalog.IsIdentifier(name) {
			return fmt.Errorf("%s: %q is not a Luau identifier (letters, digits and _, not starting with a digit)", key, name)
		}
		if a.Spec == "" {
			return fmt.Errorf("%s.spec: missing: a path or http(s) URL of an OpenAPI or Swagger document", key)
		}
		if a.Timeout != "" {
			if d, err := time.ParseDuration(a.Timeout); err != nil || d <= 0 {
				return fmt.Errorf("%s.timeout: %q is not a positive duration such as \"30s\"", key, a.Timeout)
			}
		}
		if a.Auth != nil && a.AuthEnv != "" {
			return fmt.Errorf("%s: give auth or auth_env, not both", key)
		}
		if a.BaseURL != "" && !strings.HasPrefix(a.BaseURL, "http://") && !strings.HasPrefix(a.BaseURL, "https://") {
			return fmt.Errorf("%s.base_url: %q is not an http(s) URL", key, a.BaseURL)
		}
		if err := checkSafety(key, a.Safe, a.Unsafe); err != nil {
			return err
		}
	}
	for key, v := range map[string]*int{"sdk.max_calls": f.SDK.MaxCalls, "sdk.max_parallel": f.SDK.MaxParallel} {
		if v != nil && *v <= 0 {
			return fmt.Errorf("%s: must be positive (got %d)", key, *v)
		}
	}
	if v := f.SDK.MaxResponseBytes; v != nil && *v <= 0 {
		return fmt.Errorf("sdk.max_response_bytes: must be positive (got %d)", *v)
	}
	return f.checkMCPServers()
}

func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// SDKFlags are the sdk flags of run, serve, lint and sdk. Zero values mean
// "not given".
type SDKFlags struct {
	// APIs are --api NAME=SPEC values.
	APIs []string
	// Auth are --auth NAME:ENV_VAR values: the secret is read from the
	// variable, never from the command line.
	Auth []string
	// MCP are --mcp NAME=COMMAND ARGS... or --mcp NAME=URL values.
	MCP      []string
	MaxCalls int
	// WithoutCredentials reads no API credential (auth, auth_env, --auth):
	// a replay sends nothing, so it needs none, set or not.
	WithoutCredentials bool
}

// ResolveSDK combines the [apis], [frozen_params] and [sdk] sections with
// the flags (which win) and the environment (getenv, for auth_env, the
// *_env keys and --auth) into the sdk's configuration. APIs are in name
// order. Secrets are read here and appear in no error message.
func ResolveSDK(f *File, flags SDKFlags, getenv func(string) string) (sdk.Config, error) {
	if f == nil {
		f = &File{}
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	cfg := sdk.Config{Frozen: frozenValues(f.FrozenParams)}
	env := &secretEnv{getenv: getenv}
	getenv = env.get
	apis := map[string]*sdk.APIConfig{}
	for _, name := range sortedNames(f.APIs) {
		ac, err := resolveAPI(f, name, flags.WithoutCredentials, env)
		if err != nil {
			return cfg, err
		}
		apis[name] = ac
	}
	for _, v := range flags.APIs {
		name, spec, ok := strings.Cut(v, "=")
		if !ok || name == "" || spec == "" {
			return cfg, fmt.Errorf("--api %q: want NAME=SPEC (a path or http(s) URL)", v)
		}
		if !catalog.IsIdentifier(name) {
			return cfg, fmt.Errorf("--api %s: %q is not a Luau identifier", v, name)
		}
		if ac, ok := apis[name]; ok {
			ac.Spec, ac.Dir = spec, "" // the flag's path is relative to the working directory
			continue
		}
		env.addURL(spec)
		apis[name] = &sdk.APIConfig{Name: name, Spec: spec}
	}
	for _, v := range flags.Auth {
		name, env, ok := strings.Cut(v, ":")
		if !ok || name == "" || env == "" {
			return cfg, fmt.Errorf("--auth %q: want NAME:ENV_VAR (the secret is read from that variable)", v)
		}
		ac, ok := apis[name]
		if !ok {
			return cfg, fmt.Errorf("--auth %s: no API named %s (give it with --api or [apis.%s])", v, name, name)
		}
		if flags.WithoutCredentials {
			continue
		}
		secret := getenv(env)
		if secret == "" {
			return cfg, fmt.Errorf("--auth %s: the environment variable %s is not set or empty", v, env)
		}
		ac.Auth = &sdk.Credential{Token: secret}
	}
	for _, name := range sortedNames(apis) {
		cfg.APIs = append(cfg.APIs, *apis[name])
	}
	upstreams, err := resolveMCPServers(f, flags.MCP, env)
	if err != nil {
		return cfg, err
	}
	// Every variable read is withheld from the MCP servers toolscript
	// starts (a server gets one only through its own env), and every
	// value read or credential given is a secret of the redactor.
	cfg.WithheldEnv, cfg.Secrets = env.withheld, env.secrets
	cfg.Upstreams = upstreams
	cfg.ToolSafety = toolSafety(f, upstreams)
	for _, u := range upstreams {
		if _, ok := apis[u.Name]; ok {
			return cfg, fmt.Errorf("%s is the name of an API and of an MCP server: rename one", u.Name)
		}
	}
	if err := sdkLimits(&cfg, f.SDK, flags.MaxCalls); err != nil {
		return cfg, err
	}
	// The host memory budgets are [limits]; zero leaves the sdk's default.
	cfg.MaxHostBytes, cfg.MaxHostBytesTotal = f.Limits.MaxHostBytes, f.Limits.MaxHostBytesTotal
	return cfg, nil
}

// resolveAPI resolves the [apis.NAME] section: base_url's ${VAR}s are
// secrets, and a user and password in it become the API's basic
// credential (never shown in a URL).
func resolveAPI(f *File, name string, withoutCredentials bool, env *secretEnv) (*sdk.APIConfig, error) {
	a := f.APIs[name]
	key := "apis." + name
	env.addURL(a.Spec)
	ac := &sdk.APIConfig{Name: name, Spec: a.Spec, Dir: f.dir, Frozen: frozenValues(a.FrozenParams),
		Safety: sdk.Safety{Safe: a.Safe, Unsafe: a.Unsafe}}
	if a.Timeout != "" {
		ac.Timeout, _ = time.ParseDuration(a.Timeout) // checked by Load
	}
	base, err := expandVars(a.BaseURL, env.get)
	if err != nil {
		return nil, fmt.Errorf("%s.base_url: %w", key, err)
	}
	base, user, err := splitUserinfo(base)
	if err != nil {
		return nil, fmt.Errorf("%s.base_url: %w", key, err)
	}
	ac.BaseURL = base
	if withoutCredentials {
		return ac, nil
	}
	if ac.Auth, err = fileCredential(name, a, env); err != nil {
		return nil, err
	}
	if user != nil {
		if ac.Auth != nil {
			return nil, fmt.Errorf("%s: base_url holds a user and password, and auth is given too: give one", key)
		}
		p, _ := user.Password()
		ac.Auth = &sdk.Credential{Type: sdk.AuthBasic, Username: user.Username(), Password: p}
		env.add(p)
	}
	return ac, nil
}

// splitUserinfo takes the user and password out of a URL (an empty one
// stays empty): a credential goes in auth, never in a URL shown in
// messages, docs, plans or traces.
func splitUserinfo(raw string) (string, *url.Userinfo, error) {
	if raw == "" || !strings.Contains(raw, "@") {
		return raw, nil, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", nil, errors.New("not a URL (it is not quoted here: it may hold a credential)")
	}
	if u.User == nil {
		return raw, nil, nil
	}
	user := u.User
	u.User = nil
	return u.String(), user, nil
}

// secretEnv reads the environment for ResolveSDK: each variable read is
// withheld from the MCP servers' environments, and its value, like every
// credential the configuration gives, is a secret.
type secretEnv struct {
	getenv   func(string) string
	withheld []string
	secrets  []redact.Secret
}

// read reads a variable: a secret from the moment it is read.
func (e *secretEnv) read(name string) redact.Secret {
	if !slices.Contains(e.withheld, name) {
		e.withheld = append(e.withheld, name)
	}
	s := redact.NewSecret(e.getenv(name))
	if !s.IsZero() && !slices.Contains(e.secrets, s) {
		e.secrets = append(e.secrets, s)
	}
	return s
}

// get is read for what sends the value (an argument, a header, a
// credential).
func (e *secretEnv) get(name string) string { return e.read(name).Reveal() }

// add makes a credential given literally a secret.
func (e *secretEnv) add(v string) {
	if s := redact.NewSecret(v); !s.IsZero() && !slices.Contains(e.secrets, s) {
		e.secrets = append(e.secrets, s)
	}
}

// addURL makes the credentials of a URL's userinfo secrets.
func (e *secretEnv) addURL(raw string) {
	for _, v := range urlSecrets(raw) {
		e.add(v)
	}
}

// toolSafety is the safe and unsafe lists of the [mcp_servers.NAME]
// sections of the servers started, by server; nil when none has any. Like
// --api for an API's spec, a --mcp flag replaces how its server starts and
// keeps the section's lists.
func toolSafety(f *File, upstreams []upstream.Config) map[string]sdk.Safety {
	var out map[string]sdk.Safety
	for _, u := range upstreams {
		if m, ok := f.MCPServers[u.Name]; ok && (len(m.Safe) > 0 || len(m.Unsafe) > 0) {
			if out == nil {
				out = map[string]sdk.Safety{}
			}
			out[u.Name] = sdk.Safety{Safe: m.Safe, Unsafe: m.Unsafe}
		}
	}
	return out
}

// fileCredential reads an API's auth, auth_env or auth table; a ${VAR}
// in auth's values is read from the environment.
func fileCredential(name string, a API, env *secretEnv) (*sdk.Credential, error) {
	key := "apis." + name
	getenv := env.get
	if a.AuthEnv != "" {
		v := getenv(a.AuthEnv)
		if v == "" {
			return nil, fmt.Errorf("%s.auth_env: the environment variable %s is not set or empty", key, a.AuthEnv)
		}
		return &sdk.Credential{Token: v}, nil
	}
	if a.Auth == nil {
		return nil, nil
	}
	if a.Auth.Table == nil {
		if a.Auth.Literal == "" {
			return nil, fmt.Errorf("%s.auth: empty", key)
		}
		token, err := expandVars(a.Auth.Literal, getenv)
		if err != nil {
			return nil, fmt.Errorf("%s.auth: %w", key, err)
		}
		return &sdk.Credential{Token: token}, nil
	}
	t := a.Auth.Table
	value := func(field string) (string, error) {
		if env := t[field+"_env"]; env != "" {
			if t[field] != "" {
				return "", fmt.Errorf("%s.auth: give %s or %s_env, not both", key, field, field)
			}
			v := getenv(env)
			if v == "" {
				return "", fmt.Errorf("%s.auth.%s_env: the environment variable %s is not set or empty", key, field, env)
			}
			return v, nil
		}
		v, err := expandVars(t[field], getenv)
		if err != nil {
			return "", fmt.Errorf("%s.auth.%s: %w", key, field, err)
		}
		return v, nil
	}
	c := &sdk.Credential{Type: t["type"], Name: t["name"], In: t["in"]}
	if c.Type == "" {
		c.Type = sdk.AuthBearer
	}
	var err error
	switch c.Type {
	case sdk.AuthBearer:
		if c.Token, err = value("token"); err == nil && c.Token == "" {
			err = fmt.Errorf("%s.auth: bearer needs token or token_env", key)
		}
	case sdk.AuthBasic:
		if c.Username, err = value("username"); err != nil {
			return nil, err
		}
		if c.Password, err = value("password"); err == nil && c.Username == "" && c.Password == "" {
			err = fmt.Errorf("%s.auth: basic needs username and password (or username_env, password_env)", key)
		}
	case sdk.AuthAPIKey:
		if c.Value, err = value("value"); err == nil && c.Value == "" {
			err = fmt.Errorf("%s.auth: api_key needs value or value_env", key)
		}
		if err == nil && c.In != "" && c.In != "header" && c.In != "query" && c.In != "cookie" {
			err = fmt.Errorf("%s.auth.in: %q must be header, query or cookie", key, c.In)
		}
	default:
		err = fmt.Errorf("%s.auth.type: %q must be bearer, basic or api_key", key, c.Type)
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// frozenValues converts TOML values into the JSON values the sdk encodes:
// integers and floats as numbers, datetimes as RFC 3339 text.
func frozenValues(m map[string]any) map[string]any {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = jsonValue(v)
	}
	return out
}

func jsonValue(v any) any {
	switch x := v.(type) {
	case int64:
		return json.Number(strconv.FormatInt(x, 10))
	case float64:
		return json.Number(strconv.FormatFloat(x, 'f', -1, 64))
	case time.Time:
		return x.Format(time.RFC3339Nano)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonValue(e)
		}
		return out
	case map[string]any:
		return frozenValues(x)
	}
	return v
}

// MaxResponseBytes is the [sdk] max_response_bytes an execution with f
// is held to (the sdk's default when f does not set it).
func (f *File) MaxResponseBytes() int64 {
	if f != nil && f.SDK.MaxResponseBytes != nil {
		return *f.SDK.MaxResponseBytes
	}
	return sdk.DefaultMaxResponseBytes
}

// sdkLimits sets cfg's budgets from the [sdk] section, the --max-calls
// flag (which wins) and the sdk's defaults.
func sdkLimits(cfg *sdk.Config, sec SDK, maxCallsFlag int) error {
	if v := sec.MaxCalls; v != nil {
		cfg.MaxCalls = *v
	}
	if v := sec.MaxResponseBytes; v != nil {
		cfg.MaxResponseBytes = *v
	}
	if v := sec.MaxParallel; v != nil {
		cfg.MaxParallel = *v
	}
	switch {
	case maxCallsFlag < 0:
		return fmt.Errorf("--max-calls must be positive (got %d)", maxCallsFlag)
	case maxCallsFlag > 0:
		cfg.MaxCalls = maxCallsFlag
	}
	if cfg.MaxCalls == 0 {
		cfg.MaxCalls = sdk.DefaultMaxCalls
	}
	if cfg.MaxResponseBytes == 0 {
		cfg.MaxResponseBytes = sdk.DefaultMaxResponseBytes
	}
	if cfg.MaxParallel == 0 {
		cfg.MaxParallel = sdk.DefaultMaxParallel
	}
	return nil
}
