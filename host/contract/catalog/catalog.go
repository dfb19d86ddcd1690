// Package catalog is the compact, serialisable description of what a
// script's sdk can call: APIs (an OpenAPI spec or an upstream MCP server), their
// functions with parameters, bodies, responses and security, and the
// schemas those refer to by name. It is built once at start-up (by
// host/sdk/openapi for OpenAPI specs), cached on disk, and read by the caller
// (host/sdk) and the docs (host/sdk/sdkdocs). It holds only what calls and docs
// need, never a parser's document, and imports neither wasm nor MCP.
package catalog

import (
	"encoding/json"
	"strings"
)

// Version is the format of a serialised Catalog. It is part of the on-disk
// cache key, so a change of these types never reads an old cache.
const Version = 3

// MaxExampleBytes is the size of a response example the catalog keeps, at
// most (as JSON); a larger one is left out.
const MaxExampleBytes = 16 << 10

// Kind says where a function's calls go.
type Kind string

// The kinds of function.
const (
	OpenAPI Kind = "openapi" // an HTTP operation of an OpenAPI spec
	MCP     Kind = "mcp"     // a tool of an upstream MCP server
)

// Catalog is every API of one configuration, in configuration order.
type Catalog struct {
	APIs []*API `json:"apis"`
}

// API is one source of functions: sdk.<Name>.<function>.
type API struct {
	// Name is the Luau identifier the configuration gave the API.
	Name string `json:"name"`
	Kind Kind   `json:"kind"`
	// Source is where the spec was read from (a path or URL), for messages.
	Source      string `json:"source,omitempty"`
	Title       string `json:"title,omitempty"`
	Version     string `json:"version,omitempty"`
	Description string `json:"description,omitempty"`
	// BaseURL is the URL paths are appended to: the first server's URL
	// with its variables at their defaults, resolved against Source when
	// relative. Empty when the spec names none usable (configuration may
	// still give one). It depends on where the spec was read, so it is
	// resolved on every load and never kept in a cached catalog.
	BaseURL string `json:"base_url,omitempty"`
	// Servers are the spec's servers as written (for docs).
	Servers []Server `json:"servers,omitempty"`
	// SecuritySchemes are the spec's security schemes by name.
	SecuritySchemes map[string]SecurityScheme `json:"security_schemes,omitempty"`
	Functions       []*Function               `json:"functions"`
	// Schemas are the named schemas functions refer to (Schema.Ref).
	Schemas map[string]*Schema `json:"schemas,omitempty"`
	// Warnings are problems of the spec that left it usable: an operation
	// skipped, a reference that did not resolve, a parameter dropped.
	Warnings []string `json:"warnings,omitempty"`
	// State is, for an MCP server whose tools are not listed yet,
	// "starting" or "down" (its Description says more); empty otherwise.
	State string `json:"state,omitempty"`
}

// Server is one server of a spec.
type Server struct {
	URL         string                    `json:"url"`
	Description string                    `json:"description,omitempty"`
	Variables   map[string]ServerVariable `json:"variables,omitempty"`
}

// ServerVariable is one variable of a server URL template.
type ServerVariable struct {
	Default     string   `json:"default"`
	Enum        []string `json:"enum,omitempty"`
	Description string   `json:"description,omitempty"`
}

// SecurityScheme is one way an API authenticates requests.
type SecurityScheme struct {
	// Type is "http", "apiKey", "oauth2", "openIdConnect" or "mutualTLS".
	Type string `json:"type"`
	// Scheme is the HTTP scheme ("bearer", "basic") for Type "http".
	Scheme string `json:"scheme,omitempty"`
	// Name and In locate an apiKey: In is "header", "query" or "cookie".
	Name        string `json:"name,omitempty"`
	In          string `json:"in,omitempty"`
	Description string `json:"description,omitempty"`
}

// Function is one callable of an API.
type Function struct {
	// Name is the Luau identifier under sdk.<api>.
	Name string `json:"name"`
	Kind Kind   `json:"kind"`
	// Flat makes the function sdk.<Name> too: no other API of the catalog
	// has a function of that name.
	Flat bool `json:"flat,omitempty"`

	Summary     string   `json:"summary,omitempty"`
	Description string   `json:"description,omitempty"`
	Tags        []string `json:"tags,omitempty"`
	Deprecated  bool     `json:"deprecated,omitempty"`

	// OpenAPI: the operation.
	OperationID string   `json:"operation_id,omitempty"`
	Method      string   `json:"method,omitempty"`
	Path        string   `json:"path,omitempty"`
	Params      []*Param `json:"params,omitempty"`
	// Frozen are parameters the configuration sets (frozen_params): the
	// caller injects them and nothing shows them. Their values live in the
	// configuration, never here.
	Frozen    []*Param    `json:"frozen,omitempty"`
	Body      *Body       `json:"body,omitempty"`
	Responses []*Response `json:"responses,omitempty"`
	// Security lists the alternatives that authenticate the operation, each
	// the names of the schemes used together; nil when the spec says
	// nothing. NoAuth is set when the spec says `security: []`: the call
	// is made without credentials.
	Security [][]string `json:"security,omitempty"`
	NoAuth   bool       `json:"no_auth,omitempty"`

	// MCP: the tool's own name and schemas (the arguments are one table).
	Tool         string  `json:"tool,omitempty"`
	InputSchema  *Schema `json:"input_schema,omitempty"`
	OutputSchema *Schema `json:"output_schema,omitempty"`
	// Hints are the tool's annotations as its server gave them (what
	// calling it may do); nil when it gave none.
	Hints *Hints `json:"hints,omitempty"`

	// Configured is the configuration's classification of the function
	// (API.Override: [apis.NAME] or [mcp_servers.NAME] safe and unsafe):
	// true when it is declared safe, false unsafe, nil when the
	// configuration says nothing. Like Frozen, it is set after the spec is
	// loaded, never read from a spec or kept in a cache.
	Configured *bool `json:"configured_safe,omitempty"`
}

// Hints are an MCP tool's behaviour annotations; nil fields were not
// given. They are the server's claims, not checked.
type Hints struct {
	ReadOnly    *bool `json:"readOnlyHint,omitempty"`
	Destructive *bool `json:"destructiveHint,omitempty"`
	Idempotent  *bool `json:"idempotentHint,omitempty"`
	OpenWorld   *bool `json:"openWorldHint,omitempty"`
}

// ReadOnly reports whether calling f leaves what it reaches unchanged:
// what the configuration says when it classifies f (Configured), else an
// OpenAPI operation of a safe HTTP method (GET, HEAD, OPTIONS), or an MCP
// tool its server annotated readOnlyHint: true. Anything else may write:
// an MCP tool without the annotation is taken to (the protocol's default).
func (f *Function) ReadOnly() bool {
	if f.Configured != nil {
		return *f.Configured
	}
	switch f.Kind {
	case OpenAPI:
		return SafeMethod(f.Method)
	case MCP:
		return f.Hints != nil && f.Hints.ReadOnly != nil && *f.Hints.ReadOnly
	}
	return false
}

// SafeMethod reports whether an HTTP method only reads (RFC 9110's safe
// methods, TRACE aside): GET, HEAD or OPTIONS, in any case.
func SafeMethod(method string) bool {
	switch strings.ToUpper(method) {
	case "GET", "HEAD", "OPTIONS":
		return true
	}
	return false
}

// Param is one parameter of an operation.
type Param struct {
	Name string `json:"name"`
	// In is "path", "query", "header" or "cookie".
	In          string `json:"in"`
	Required    bool   `json:"required,omitempty"`
	Description string `json:"description,omitempty"`
	Deprecated  bool   `json:"deprecated,omitempty"`
	// Style and Explode are the serialisation, defaults filled in: path
	// and header "simple", query and cookie "form"; Explode true for form.
	Style   string `json:"style"`
	Explode bool   `json:"explode,omitempty"`
	// AllowReserved leaves RFC 3986 reserved characters of a query value
	// unencoded.
	AllowReserved bool    `json:"allow_reserved,omitempty"`
	Schema        *Schema `json:"schema,omitempty"`
	// ContentType is set for a parameter described by content instead of
	// a schema: its value is serialised as that media type (JSON).
	ContentType string `json:"content_type,omitempty"`
}

// Body is an operation's request body.
type Body struct {
	Required    bool   `json:"required,omitempty"`
	Description string `json:"description,omitempty"`
	// Content lists the accepted media types in spec order; the caller
	// sends the first it can encode.
	Content []*MediaType `json:"content"`
}

// MediaType is one representation of a body.
type MediaType struct {
	Type   string  `json:"type"`
	Schema *Schema `json:"schema,omitempty"`
	// Example is a response's example (its example, else the first of its
	// examples) as JSON, when at most MaxExampleBytes: what a dry run
	// answers an unsafe call with.
	Example json.RawMessage `json:"example,omitempty"`
}

// Response is one documented response of an operation.
type Response struct {
	// Status is "200", "2XX" or "default".
	Status      string       `json:"status"`
	Description string       `json:"description,omitempty"`
	Content     []*MediaType `json:"content,omitempty"`
}

// Schema is a JSON Schema kept to what checks and docs use. A Schema with
// Ref stands for API.Schemas[Ref]: recursive schemas are graphs of names,
// never of pointers, so a Catalog always serialises.
type Schema struct {
	Ref string `json:"$ref,omitempty"`
	// Type lists the allowed JSON types ("object", "array", "string",
	// "integer", "number", "boolean", "null"); empty allows any. OpenAPI
	// 3.0's nullable adds "null".
	Type        []string          `json:"type,omitempty"`
	Format      string            `json:"format,omitempty"`
	Title       string            `json:"title,omitempty"`
	Description string            `json:"description,omitempty"`
	Enum        []json.RawMessage `json:"enum,omitempty"`
	Const       json.RawMessage   `json:"const,omitempty"`
	Default     json.RawMessage   `json:"default,omitempty"`
	Deprecated  bool              `json:"deprecated,omitempty"`
	ReadOnly    bool              `json:"readOnly,omitempty"`
	WriteOnly   bool              `json:"writeOnly,omitempty"`

	Properties []*Property `json:"properties,omitempty"`
	Required   []string    `json:"required,omitempty"`
	// AdditionalProperties is the schema of other properties; nil allows
	// any. NoAdditional is set for `additionalProperties: false`.
	AdditionalProperties *Schema `json:"additionalProperties,omitempty"`
	NoAdditional         bool    `json:"noAdditional,omitempty"`
	Items                *Schema `json:"items,omitempty"`

	AllOf []*Schema `json:"allOf,omitempty"`
	OneOf []*Schema `json:"oneOf,omitempty"`
	AnyOf []*Schema `json:"anyOf,omitempty"`

	Minimum   *float64 `json:"minimum,omitempty"`
	Maximum   *float64 `json:"maximum,omitempty"`
	MinLength *int64   `json:"minLength,omitempty"`
	MaxLength *int64   `json:"maxLength,omitempty"`
	Pattern   string   `json:"pattern,omitempty"`
	MinItems  *int64   `json:"minItems,omitempty"`
	MaxItems  *int64   `json:"maxItems,omitempty"`
}

// Property is one named property of an object schema, in spec order.
type Property struct {
	Name   string  `json:"name"`
	Schema *Schema `json:"schema"`
}

// Has reports whether the schema allows JSON type t (an empty Type allows
// every type).
func (s *Schema) Has(t string) bool {
	if s == nil || len(s.Type) == 0 {
		return true
	}
	for _, x := range s.Type {
		if x == t || (t == "integer" && x == "number") {
			return true
		}
	}
	return false
}

// Property returns the property called name, or nil.
func (s *Schema) Property(name string) *Schema {
	for _, p := range s.Properties {
		if p.Name == name {
			return p.Schema
		}
	}
	return nil
}

// Resolve follows s's Ref (and chains of them) within api; it returns s
// itself when s has no Ref, and nil for a Ref that names nothing.
func (a *API) Resolve(s *Schema) *Schema {
	for i := 0; s != nil && s.Ref != "" && i < 64; i++ {
		s = a.Schemas[s.Ref]
	}
	if s != nil && s.Ref != "" {
		return nil
	}
	return s
}

// Function returns the function called name, or nil.
func (a *API) Function(name string) *Function {
	for _, f := range a.Functions {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// API returns the API called name, or nil.
func (c *Catalog) API(name string) *API {
	for _, a := range c.APIs {
		if a.Name == name {
			return a
		}
	}
	return nil
}
