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

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/contract/redact"
)

// API is one [apis.NAME] section: an OpenAPI spec scripts call as
// sdk.NAME.
type API struct {
	Spec    string `toml:"spec"`
	BaseURL string `toml:"base_url"`
	// Auth is `auth = "literal"` or the [apis.NAME.auth] table.
	Auth         *APIAuth       `toml:"auth"`
	AuthEnv      string         `toml:"auth_env"`
	Timeout      string         `toml:"timeout" kind:"duration"`
	FrozenParams map[string]any `toml:"frozen_params"`
	// Safe and Unsafe classify operations (by operationId or sdk function
	// name) against their HTTP method: a POST that only searches is safe.
	Safe   []string `toml:"safe"`
	Unsafe []string `toml:"unsafe"`
	// PropagateTrace sends the W3C trace context (traceparent) of each
	// call's span to the API: off by default, since it tells a third
	// party about the traces.
	PropagateTrace bool `toml:"propagate_trace"`
}

// checkSafety checks a section's safe and unsafe lists as far as they can
// be without the spec or the server's tools (the sdk checks the names
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
		if err := checkName(key, name); err != nil {
			return err
		}
		if a.Spec == "" {
			return fmt.Errorf("%s.spec: missing: a path or http(s) URL of an OpenAPI or Swagger document", key)
		}
		if err := checkDuration(key+".timeout", a.Timeout, "30s"); err != nil {
			return err
		}
		if a.Auth != nil && a.AuthEnv != "" {
			return fmt.Errorf("%s: give auth or auth_env, not both", key)
		}
		if a.BaseURL != "" && !isHTTPURL(a.BaseURL) {
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

// checkName checks the name of a section [apis.NAME] or
// [mcp_servers.NAME] (key): scripts call it as sdk.NAME.
func checkName(key, name string) error {
	if !catalog.IsIdentifier(name) {
		return fmt.Errorf("%s: %q is not a Luau identifier (letters, digits and _, not starting with a digit)", key, name)
	}
	return nil
}

// checkDuration checks a duration setting (key): empty for the default,
// else a positive duration such as example.
func checkDuration(key, value, example string) error {
	if value == "" {
		return nil
	}
	if d, err := time.ParseDuration(value); err != nil || d <= 0 {
		return fmt.Errorf("%s: %q is not a positive duration such as %q", key, value, example)
	}
	return nil
}

// isHTTPURL reports whether s is an http or https URL.
func isHTTPURL(s string) bool {
	return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")
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

// SDKSettings are the sdk's settings: its APIs and upstream MCP servers,
// frozen parameters, budgets and the secrets the configuration read. A
// zero budget is the sdk's default (host/sdk).
type SDKSettings struct {
	// APIs are in name order.
	APIs []APISettings
	// Frozen are the global frozen parameters; an API's own win.
	Frozen map[string]any
	// MaxCalls, MaxResponseBytes and MaxParallel are [sdk]'s (and
	// --max-calls'); MaxHostBytes and MaxHostBytesTotal are [limits]'.
	MaxCalls          int
	MaxResponseBytes  int64
	MaxParallel       int
	MaxHostBytes      int64
	MaxHostBytesTotal int64
	// Upstreams are the MCP servers ([mcp_servers.NAME], --mcp), in name
	// order.
	Upstreams []MCPServerSettings
	// ToolSafety are the servers' safe and unsafe lists, by server; nil
	// when none has any.
	ToolSafety map[string]Safety
	// WithheldEnv names every environment variable read: the MCP servers
	// toolscript starts do not inherit them.
	WithheldEnv []string
	// Secrets are every value read from the environment and every
	// credential given, besides the APIs' Auth and the Upstreams' Secrets.
	Secrets []redact.Secret
}

// APISettings are one [apis.NAME] section (or --api flag).
type APISettings struct {
	Name string
	// Spec is a path or URL; Dir is what a relative path is relative to
	// (the config file's directory).
	Spec, Dir string
	// BaseURL overrides the spec's servers.
	BaseURL string
	// Timeout is per call; 0 is the sdk's default.
	Timeout time.Duration
	// Auth is the configured credential, nil for none.
	Auth   *Credential
	Frozen map[string]any
	Safety Safety
	// PropagateTrace is propagate_trace: the API is sent each call's
	// traceparent.
	PropagateTrace bool
}

// Safety is a section's safe and unsafe lists: operationIds, sdk function
// names or tool names.
type Safety struct {
	Safe, Unsafe []string
}

// The credential types of [apis.NAME.auth] type.
const (
	AuthBearer = "bearer"
	AuthBasic  = "basic"
	AuthAPIKey = "api_key"
)

// Credential is one API's secret and how to send it: Type is AuthBearer,
// AuthBasic or AuthAPIKey, or empty for a bare secret in Token (auth =
// "...", auth_env, --auth) sent as the spec's security schemes say. Its
// secrets are redact.Secrets: a printed configuration shows none.
type Credential struct {
	Type string
	// Token is the bearer token (or the bare secret).
	Token redact.Secret
	// Username and Password are for basic.
	Username, Password redact.Secret
	// Value is the API key; Name and In ("header", "query", "cookie")
	// locate it.
	Value    redact.Secret
	Name, In string
}

// ResolveSDK combines the [apis], [frozen_params] and [sdk] sections with
// the flags (which win) and the environment (getenv, for auth_env, the
// *_env keys and --auth) into the sdk's settings. APIs are in name order.
// Secrets are read here and appear in no error message.
func ResolveSDK(f *File, flags SDKFlags, getenv func(string) string) (SDKSettings, error) {
	if f == nil {
		f = &File{}
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	cfg := SDKSettings{Frozen: frozenValues(f.FrozenParams)}
	env := &secretEnv{getenv: getenv}
	apis, err := resolveAPIs(f, flags, env)
	if err != nil {
		return cfg, err
	}
	for _, name := range sortedNames(apis) {
		cfg.APIs = append(cfg.APIs, *apis[name])
	}
	upstreams, err := resolveMCPServers(f, flags.MCP, env)
	if err != nil {
		return cfg, err
	}
	f.Effects.readStateKey(env)
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

// resolveAPIs are the [apis] sections with the --api and --auth flags, by
// name.
func resolveAPIs(f *File, flags SDKFlags, env *secretEnv) (map[string]*APISettings, error) {
	apis := map[string]*APISettings{}
	for _, name := range sortedNames(f.APIs) {
		ac, err := resolveAPI(f, name, flags.WithoutCredentials, env)
		if err != nil {
			return nil, err
		}
		apis[name] = ac
	}
	for _, v := range flags.APIs {
		name, spec, ok := strings.Cut(v, "=")
		if !ok || name == "" || spec == "" {
			return nil, fmt.Errorf("--api %q: want NAME=SPEC (a path or http(s) URL)", v)
		}
		if !catalog.IsIdentifier(name) {
			return nil, fmt.Errorf("--api %s: %q is not a Luau identifier", v, name)
		}
		if ac, ok := apis[name]; ok {
			ac.Spec, ac.Dir = spec, "" // the flag's path is relative to the working directory
			continue
		}
		env.addURL(spec)
		apis[name] = &APISettings{Name: name, Spec: spec}
	}
	for _, v := range flags.Auth {
		name, variable, ok := strings.Cut(v, ":")
		if !ok || name == "" || variable == "" {
			return nil, fmt.Errorf("--auth %q: want NAME:ENV_VAR (the secret is read from that variable)", v)
		}
		ac, ok := apis[name]
		if !ok {
			return nil, fmt.Errorf("--auth %s: no API named %s (give it with --api or [apis.%s])", v, name, name)
		}
		if flags.WithoutCredentials {
			continue
		}
		secret := env.read(variable)
		if secret.IsZero() {
			return nil, fmt.Errorf("--auth %s: the environment variable %s is not set or empty", v, variable)
		}
		ac.Auth = &Credential{Token: secret}
	}
	return apis, nil
}

// resolveAPI resolves the [apis.NAME] section: base_url's ${VAR}s are
// secrets, and a user and password in it become the API's basic
// credential (never shown in a URL).
func resolveAPI(f *File, name string, withoutCredentials bool, env *secretEnv) (*APISettings, error) {
	a := f.APIs[name]
	key := "apis." + name
	env.addURL(a.Spec)
	ac := &APISettings{Name: name, Spec: a.Spec, Dir: f.dir, Frozen: frozenValues(a.FrozenParams),
		Safety: Safety{Safe: a.Safe, Unsafe: a.Unsafe}, PropagateTrace: a.PropagateTrace}
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
		ac.Auth = &Credential{Type: AuthBasic, Username: redact.NewSecret(user.Username()), Password: redact.NewSecret(p)}
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
func toolSafety(f *File, upstreams []MCPServerSettings) map[string]Safety {
	var out map[string]Safety
	for _, u := range upstreams {
		if m, ok := f.MCPServers[u.Name]; ok && (len(m.Safe) > 0 || len(m.Unsafe) > 0) {
			if out == nil {
				out = map[string]Safety{}
			}
			out[u.Name] = Safety{Safe: m.Safe, Unsafe: m.Unsafe}
		}
	}
	return out
}

// fileCredential reads an API's auth, auth_env or auth table; a ${VAR}
// in auth's values is read from the environment.
func fileCredential(name string, a API, env *secretEnv) (*Credential, error) {
	key := "apis." + name
	if a.AuthEnv != "" {
		v := env.read(a.AuthEnv)
		if v.IsZero() {
			return nil, fmt.Errorf("%s.auth_env: the environment variable %s is not set or empty", key, a.AuthEnv)
		}
		return &Credential{Token: v}, nil
	}
	if a.Auth == nil {
		return nil, nil
	}
	if a.Auth.Table == nil {
		if a.Auth.Literal == "" {
			return nil, fmt.Errorf("%s.auth: empty", key)
		}
		token, err := expandVars(a.Auth.Literal, env.get)
		if err != nil {
			return nil, fmt.Errorf("%s.auth: %w", key, err)
		}
		return &Credential{Token: redact.NewSecret(token)}, nil
	}
	return tableCredential(key, authTable{key: key, t: a.Auth.Table, env: env})
}

// authTable reads the values of an [apis.NAME.auth] table.
type authTable struct {
	key string
	t   map[string]string
	env *secretEnv
}

// value is field's value: from field_env's variable, or field with its
// ${VAR}s expanded.
func (a authTable) value(field string) (redact.Secret, error) {
	if variable := a.t[field+"_env"]; variable != "" {
		if a.t[field] != "" {
			return redact.Secret{}, fmt.Errorf("%s.auth: give %s or %s_env, not both", a.key, field, field)
		}
		v := a.env.read(variable)
		if v.IsZero() {
			return v, fmt.Errorf("%s.auth.%s_env: the environment variable %s is not set or empty", a.key, field, variable)
		}
		return v, nil
	}
	v, err := expandVars(a.t[field], a.env.get)
	if err != nil {
		return redact.Secret{}, fmt.Errorf("%s.auth.%s: %w", a.key, field, err)
	}
	return redact.NewSecret(v), nil
}

// tableCredential is the credential of an [apis.NAME.auth] table: its
// type (bearer when not given) and the values that type needs.
func tableCredential(key string, a authTable) (*Credential, error) {
	t := a.t
	c := &Credential{Type: t["type"], Name: t["name"], In: t["in"]}
	if c.Type == "" {
		c.Type = AuthBearer
	}
	var err error
	switch c.Type {
	case AuthBearer:
		if c.Token, err = a.value("token"); err == nil && c.Token.IsZero() {
			err = fmt.Errorf("%s.auth: bearer needs token or token_env", key)
		}
	case AuthBasic:
		if c.Username, err = a.value("username"); err != nil {
			return nil, err
		}
		if c.Password, err = a.value("password"); err == nil && c.Username.IsZero() && c.Password.IsZero() {
			err = fmt.Errorf("%s.auth: basic needs username and password (or username_env, password_env)", key)
		}
	case AuthAPIKey:
		if c.Value, err = a.value("value"); err == nil && c.Value.IsZero() {
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

// sdkLimits sets cfg's budgets from the [sdk] section and the --max-calls
// flag (which wins); what neither sets stays zero, the sdk's default.
func sdkLimits(cfg *SDKSettings, sec SDK, maxCallsFlag int) error {
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
	return nil
}
