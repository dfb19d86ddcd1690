package config

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kballard/go-shellquote"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/contract/redact"
)

// MCPServer is one [mcp_servers.NAME] section: an upstream MCP server
// whose tools scripts call as sdk.NAME.<tool>. Exactly one of Command (a
// stdio server) or URL (streamable HTTP).
type MCPServer struct {
	Command string            `toml:"command"`
	Args    []string          `toml:"args"`
	Env     map[string]string `toml:"env"`
	Cwd     string            `toml:"cwd"`
	URL     string            `toml:"url"`
	Headers map[string]string `toml:"headers"`
	Timeout string            `toml:"timeout" kind:"duration"`
	// Stderr is where a stdio server's standard error goes: StderrInherit
	// (the default), StderrDiscard, or a file's path (relative to the
	// configuration file's directory).
	Stderr string `toml:"stderr"`
	// Safe and Unsafe classify tools (by name) against their readOnlyHint
	// annotation.
	Safe   []string `toml:"safe"`
	Unsafe []string `toml:"unsafe"`
}

// The words of [mcp_servers.NAME] stderr that name no file.
const (
	StderrInherit = "inherit"
	StderrDiscard = "discard"
)

// MCPServerSettings are one upstream MCP server, resolved: exactly one of
// Command (a stdio server) and URL (streamable HTTP). They are field for
// field upstream.Config (host/app converts one into the other, so the
// compiler keeps them alike).
type MCPServerSettings struct {
	Name    string
	Command string
	Args    []string
	Env     map[string]string
	// Dir is the working directory of Command.
	Dir     string
	URL     string
	Headers map[string]string
	// Timeout is 0 for the default of host/sdk/upstream.
	Timeout time.Duration
	// Stderr is StderrInherit ("" too), StderrDiscard or a file's path.
	Stderr string
	// Secrets are what ${VAR} brought into the fields above, and the
	// credentials of URL and Headers.
	Secrets []redact.Secret
}

func (f *File) checkMCPServers() error {
	for _, name := range sortedNames(f.MCPServers) {
		m := f.MCPServers[name]
		key := "mcp_servers." + name
		if err := checkName(key, name); err != nil {
			return err
		}
		if _, ok := f.APIs[name]; ok {
			return fmt.Errorf("%s: [apis.%s] has the same name; rename one", key, name)
		}
		switch {
		case m.Command == "" && m.URL == "":
			return fmt.Errorf("%s: give command (a stdio server) or url (a streamable HTTP server)", key)
		case m.Command != "" && m.URL != "":
			return fmt.Errorf("%s: give command or url, not both", key)
		case m.URL != "" && (len(m.Args) > 0 || len(m.Env) > 0 || m.Cwd != ""):
			return fmt.Errorf("%s: args, env and cwd go with command, not with url", key)
		case m.Command != "" && len(m.Headers) > 0:
			return fmt.Errorf("%s: headers go with url, not with command", key)
		case m.URL != "" && !isHTTPURL(m.URL):
			return fmt.Errorf("%s.url: %q is not an http(s) URL", key, m.URL)
		case m.URL != "" && m.Stderr != "":
			return fmt.Errorf("%s: stderr goes with command, not with url", key)
		}
		if err := checkDuration(key+".timeout", m.Timeout, "30s"); err != nil {
			return err
		}
		if err := checkSafety(key, m.Safe, m.Unsafe); err != nil {
			return err
		}
	}
	return nil
}

// resolveMCPServers combines [mcp_servers] with the --mcp flags (a flag
// replaces the section of the same name), expanding ${VAR} in command,
// args, cwd, url, headers and env. Servers are in name order. What a
// ${VAR} brings in, in any field, is a secret (a token in an argument, a
// URL, a header or a server's environment), and its variable is withheld
// from every server's environment (env gives a server one of its own).
func resolveMCPServers(f *File, flags []string, env *secretEnv) ([]MCPServerSettings, error) {
	byName := map[string]MCPServerSettings{}
	for _, name := range sortedNames(f.MCPServers) {
		c, err := resolveMCPServer(f, name, env)
		if err != nil {
			return nil, err
		}
		byName[name] = c
	}
	for _, v := range flags {
		c, err := ParseMCPFlag(v)
		if err != nil {
			return nil, err
		}
		addURLSecrets(&c, env)
		byName[c.Name] = c
	}
	out := make([]MCPServerSettings, 0, len(byName))
	for _, name := range sortedNames(byName) {
		out = append(out, byName[name])
	}
	return out, nil
}

// resolveMCPServer resolves the [mcp_servers.NAME] section.
func resolveMCPServer(f *File, name string, env *secretEnv) (MCPServerSettings, error) {
	m := f.MCPServers[name]
	key := "mcp_servers." + name
	c := MCPServerSettings{Name: name}
	var err error
	lookup := func(name string) string {
		v := env.get(name)
		c.Secrets = appendSecret(c.Secrets, v)
		return v
	}
	expand := func(field, s string) string {
		if err != nil {
			return ""
		}
		var out string
		out, err = expandVars(s, lookup)
		if err != nil {
			err = fmt.Errorf("%s.%s: %w", key, field, err)
		}
		return out
	}
	c.Command = expand("command", m.Command)
	c.URL = expand("url", m.URL)
	addURLSecrets(&c, env)
	for _, a := range m.Args {
		c.Args = append(c.Args, expand("args", a))
	}
	if len(m.Env) > 0 {
		c.Env = map[string]string{}
		for k, v := range m.Env {
			c.Env[k] = expand("env."+k, v)
		}
	}
	if len(m.Headers) > 0 {
		c.Headers = map[string]string{}
		for k, v := range m.Headers {
			c.Headers[k] = expand("headers."+k, v)
			for _, secret := range headerSecrets(c.Headers[k]) {
				env.add(secret)
				c.Secrets = appendSecret(c.Secrets, secret)
			}
		}
	}
	if m.Cwd != "" {
		c.Dir = expand("cwd", m.Cwd)
		if err == nil && !filepath.IsAbs(c.Dir) && f.dir != "" {
			c.Dir = filepath.Join(f.dir, c.Dir)
		}
	}
	if err != nil {
		return c, err
	}
	if m.Timeout != "" {
		c.Timeout, _ = time.ParseDuration(m.Timeout) // checked by Load
	}
	c.Stderr = m.Stderr
	if c.Stderr != "" && c.Stderr != StderrInherit && c.Stderr != StderrDiscard && !filepath.IsAbs(c.Stderr) && f.dir != "" {
		c.Stderr = filepath.Join(f.dir, c.Stderr)
	}
	return c, nil
}

// ParseMCPFlag reads one --mcp value: NAME=URL for a value starting with
// http:// or https://, else NAME=COMMAND ARGS... split as a shell would
// (quotes and backslashes; no variables, no globs).
func ParseMCPFlag(v string) (MCPServerSettings, error) {
	name, rest, ok := strings.Cut(v, "=")
	if !ok || name == "" || strings.TrimSpace(rest) == "" {
		return MCPServerSettings{}, fmt.Errorf("--mcp %q: want NAME=COMMAND ARGS... or NAME=URL", v)
	}
	if !catalog.IsIdentifier(name) {
		return MCPServerSettings{}, fmt.Errorf("--mcp %s: %q is not a Luau identifier", v, name)
	}
	rest = strings.TrimSpace(rest)
	if isHTTPURL(rest) {
		return MCPServerSettings{Name: name, URL: rest}, nil
	}
	words, err := shellquote.Split(rest)
	if err != nil {
		return MCPServerSettings{}, fmt.Errorf("--mcp %s: %w", v, err)
	}
	if len(words) == 0 || words[0] == "" {
		return MCPServerSettings{}, fmt.Errorf("--mcp %q: no command", v)
	}
	return MCPServerSettings{Name: name, Command: words[0], Args: words[1:]}, nil
}

// expandVars replaces each ${VAR} of s with the variable's value; a
// variable that is not set is an error (a header must not silently lose
// its token). A "$" not followed by "{" stays as it is.
func expandVars(s string, getenv func(string) string) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return "", fmt.Errorf("unclosed ${ in %q", s)
		}
		name := s[i+2 : i+j]
		if name == "" {
			return "", fmt.Errorf("empty ${} in %q", s)
		}
		v := getenv(name)
		if v == "" {
			return "", fmt.Errorf("the environment variable %s is not set or empty", name)
		}
		b.WriteString(s[:i])
		b.WriteString(v)
		s = s[i+j+1:]
	}
}

// appendSecret adds v to secrets once.
func appendSecret(secrets []redact.Secret, v string) []redact.Secret {
	s := redact.NewSecret(v)
	if v == "" || slices.Contains(secrets, s) {
		return secrets
	}
	return append(secrets, s)
}

// addURLSecrets makes the credentials of c's URL secrets.
func addURLSecrets(c *MCPServerSettings, env *secretEnv) {
	for _, s := range urlSecrets(c.URL) {
		env.add(s)
		c.Secrets = appendSecret(c.Secrets, s)
	}
}

// urlSecrets are the credentials of a URL's userinfo: the password, and
// what Go sends of it (basic authentication).
func urlSecrets(raw string) []string {
	if !strings.Contains(raw, "@") {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return nil
	}
	p, ok := u.User.Password()
	if !ok {
		return nil
	}
	return []string{p, base64.StdEncoding.EncodeToString([]byte(u.User.Username() + ":" + p))}
}

// headerSecrets are what an echo of a header value could show of a
// credential: the value, and its last word ("Bearer <token>").
func headerSecrets(v string) []string {
	out := []string{v}
	if i := strings.LastIndexByte(v, ' '); i >= 0 {
		out = append(out, v[i+1:])
	}
	return out
}
