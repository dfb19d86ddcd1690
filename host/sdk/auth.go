package sdk

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/toolscript/toolscript/host/contract/catalog"
)

// The credential types of the configuration and of _meta.auth.
const (
	AuthBearer = "bearer"
	AuthBasic  = "basic"
	AuthAPIKey = "api_key"
)

// Credential is one API's secret and how to send it.
type Credential struct {
	// Type is AuthBearer, AuthBasic or AuthAPIKey; empty means "a secret
	// in Token, sent the way the spec's security schemes say" (bearer when
	// they say nothing): the form of `auth = "..."`, auth_env and --auth.
	Type string
	// Token is the bearer token (or the bare secret when Type is empty).
	Token string
	// Username and Password are for basic.
	Username, Password string
	// Value is the API key; Name and In ("header", "query", "cookie")
	// locate it, defaulting to the spec's apiKey scheme.
	Value, Name, In string
}

func (c *Credential) check() error {
	switch c.Type {
	case "", AuthBearer:
		if c.Token == "" {
			return errors.New("the token is empty")
		}
	case AuthBasic:
		if c.Username == "" && c.Password == "" {
			return errors.New("basic auth needs a username and a password")
		}
	case AuthAPIKey:
		if c.Value == "" {
			return errors.New("the API key is empty")
		}
		switch c.In {
		case "", "header", "query", "cookie":
		default:
			return fmt.Errorf("api_key in = %q: must be header, query or cookie", c.In)
		}
	default:
		return fmt.Errorf("type %q: must be bearer, basic or api_key", c.Type)
	}
	return nil
}

// secrets are the strings of c that must never be shown.
func (c *Credential) secrets() []string {
	var out []string
	for _, s := range []string{c.Token, c.Password, c.Value} {
		if s != "" {
			out = append(out, s)
		}
	}
	if c.Type == AuthBasic {
		out = append(out, base64.StdEncoding.EncodeToString([]byte(c.Username+":"+c.Password)))
	}
	if c.Type == "" && strings.Contains(c.Token, ":") { // a bare secret may be sent as basic
		out = append(out, base64.StdEncoding.EncodeToString([]byte(c.Token)))
	}
	return out
}

// The bounds of a request's _meta.auth: how many APIs it may name, and
// how long each of its strings (a token, a username, a password, a key)
// may be. Each credential joins the redactor that every response and
// message of the execution passes, whose cost grows with them.
const (
	maxMetaAuthAPIs   = 64
	maxMetaAuthSecret = 16 << 10
)

// ParseMetaAuth reads the _meta.auth object of an MCP request:
// { "petstore": { "type": "bearer", "token": "..." } }, types bearer
// (token), basic (username, password) and api_key (value, optionally name
// and in). Messages never quote a secret.
func ParseMetaAuth(raw json.RawMessage) (map[string]*Credential, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var in map[string]struct {
		Type     string `json:"type"`
		Token    string `json:"token"`
		Username string `json:"username"`
		Password string `json:"password"`
		Value    string `json:"value"`
		Name     string `json:"name"`
		In       string `json:"in"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, errors.New("_meta.auth must be an object of API names to {type, token | username, password | value}")
	}
	if len(in) > maxMetaAuthAPIs {
		return nil, fmt.Errorf("_meta.auth names %d APIs, more than %d", len(in), maxMetaAuthAPIs)
	}
	out := make(map[string]*Credential, len(in))
	names := make([]string, 0, len(in))
	for name := range in {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		v := in[name]
		c := &Credential{Type: strings.ToLower(v.Type), Token: v.Token, Username: v.Username, Password: v.Password, Value: v.Value, Name: v.Name, In: v.In}
		if c.Type == "" {
			c.Type = AuthBearer
		}
		for _, field := range []struct{ name, v string }{{"token", v.Token}, {"username", v.Username}, {"password", v.Password}, {"value", v.Value}} {
			if len(field.v) > maxMetaAuthSecret {
				return nil, fmt.Errorf("_meta.auth.%s: the %s is longer than %d bytes", name, field.name, maxMetaAuthSecret)
			}
		}
		if err := c.check(); err != nil {
			return nil, fmt.Errorf("_meta.auth.%s: %w", name, err)
		}
		out[name] = c
	}
	return out, nil
}

// authPlan is how one request carries a credential.
type authPlan struct {
	// A header to set: its canonical name and its value, in a slice every
	// request of a session shares (net/http never changes a request's
	// header values).
	header        string
	values        []string
	query, qvalue string // a query parameter to add
	cookie        string // a cookie "name=value"
}

// headerPlan sets header name to value.
func headerPlan(name, value string) authPlan {
	return authPlan{header: http.CanonicalHeaderKey(name), values: []string{value}}
}

// schemes are the security schemes a function's credential may follow,
// found once per function (findScheme): the first usable one, and the
// first apiKey one.
type schemes struct {
	first, apiKey       catalog.SecurityScheme
	hasFirst, hasAPIKey bool
}

func schemesOf(api *catalog.API, f *catalog.Function) schemes {
	var s schemes
	s.first, s.hasFirst = findScheme(api, f, func(catalog.SecurityScheme) bool { return true })
	s.apiKey, s.hasAPIKey = findScheme(api, f, func(s catalog.SecurityScheme) bool { return s.Type == "apiKey" })
	return s
}

// plan decides how cred goes on a request of a function whose schemes are
// sc: the credential's own type, or for a bare secret the function's
// security schemes (then the API's), bearer when the spec says nothing.
func plan(cred *Credential, sc schemes) (authPlan, error) {
	switch cred.Type {
	case AuthBearer:
		return headerPlan("Authorization", "Bearer "+cred.Token), nil
	case AuthBasic:
		return headerPlan("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(cred.Username+":"+cred.Password))), nil
	case AuthAPIKey:
		name, in := cred.Name, cred.In
		if (name == "" || in == "") && sc.hasAPIKey {
			if name == "" {
				name = sc.apiKey.Name
			}
			if in == "" {
				in = sc.apiKey.In
			}
		}
		if name == "" {
			return authPlan{}, errors.New("api_key auth needs a name (the spec has no apiKey scheme to take it from)")
		}
		return keyPlan(name, in, cred.Value)
	}
	// A bare secret: the spec decides.
	if !sc.hasFirst {
		return headerPlan("Authorization", "Bearer "+cred.Token), nil
	}
	switch s := sc.first; {
	case s.Type == "apiKey":
		return keyPlan(s.Name, s.In, cred.Token)
	case s.Type == "http" && s.Scheme == "basic":
		return headerPlan("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(cred.Token))), nil
	default: // http bearer, oauth2, openIdConnect
		return headerPlan("Authorization", "Bearer "+cred.Token), nil
	}
}

// keyPlan puts an API key value in place in under name. A cookie's value
// goes into the Cookie header as it is: one holding ';' (which would end
// it and add a cookie of its own choosing, a frozen one's name included)
// or a control character is refused.
func keyPlan(name, in, value string) (authPlan, error) {
	switch in {
	case "query":
		return authPlan{query: name, qvalue: value}, nil
	case "cookie":
		if strings.ContainsFunc(value, func(r rune) bool { return r == ';' || r < 0x20 || r == 0x7f }) {
			return authPlan{}, fmt.Errorf("the value of cookie %q cannot hold ';' or a control character", name)
		}
		return authPlan{cookie: name + "=" + value}, nil
	}
	return headerPlan(name, value), nil
}

// findScheme returns the first scheme matching ok among those the
// function's security names, else among all of the API's (by name).
func findScheme(api *catalog.API, f *catalog.Function, ok func(catalog.SecurityScheme) bool) (catalog.SecurityScheme, bool) {
	for _, alt := range f.Security {
		for _, name := range alt {
			if s, found := api.SecuritySchemes[name]; found && usable(s) && ok(s) {
				return s, true
			}
		}
	}
	names := make([]string, 0, len(api.SecuritySchemes))
	for name := range api.SecuritySchemes {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if s := api.SecuritySchemes[name]; usable(s) && ok(s) {
			return s, true
		}
	}
	return catalog.SecurityScheme{}, false
}

// usable reports whether one secret can satisfy the scheme.
func usable(s catalog.SecurityScheme) bool {
	switch s.Type {
	case "apiKey":
		return s.Name != ""
	case "http":
		return s.Scheme == "bearer" || s.Scheme == "basic" || s.Scheme == ""
	case "oauth2", "openIdConnect":
		return true
	}
	return false
}

// apply puts the plan on a request.
func (p authPlan) apply(req *http.Request) {
	if p.header != "" {
		req.Header[p.header] = p.values
	}
	if p.query != "" {
		q := req.URL.RawQuery
		if q != "" {
			q += "&"
		}
		req.URL.RawQuery = q + url.QueryEscape(p.query) + "=" + url.QueryEscape(p.qvalue)
	}
	if p.cookie != "" {
		if c := req.Header.Get("Cookie"); c != "" {
			req.Header.Set("Cookie", c+"; "+p.cookie)
		} else {
			req.Header.Set("Cookie", p.cookie)
		}
	}
}
