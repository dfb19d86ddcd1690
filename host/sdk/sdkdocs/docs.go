// Package sdkdocs renders the documentation of a script's sdk from its
// catalog: the list of APIs and functions, each function's Luau signature
// with its params, body and result as Luau types (and the named schemas
// they use), a ranked full-text search, the text of the sdk:// resources,
// and a Luau definitions file for editors. It shows what scripts can call
// and nothing else: frozen parameters are not in the catalog's Params, and
// no credential is ever part of a catalog. Everything is plain text or
// JSON-ready values; the MCP server and the command line present them.
package sdkdocs

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/sdk/learned"
)

// Docs renders one catalog (as the sdk client prepared it: frozen
// parameters hidden, names linked). Safe for concurrent use.
type Docs struct {
	cat   *catalog.Catalog
	names map[string]map[string]string // API → schema → Luau type name
	// schemaNames are each API's schema names, sorted.
	schemaNames map[string][]string
	index       *index // search index
	// fingerprint identifies the catalog in cursors.
	fingerprint [8]byte
	// noIO leaves the io built-ins out of search and docs.
	noIO bool
	// learned are result types learned from recorded traces, by
	// qualified function name: a function whose result type is declared
	// as nothing (any) gets its learned one (WithLearned).
	learned learned.Set
}

// New prepares the docs of cat.
func New(cat *catalog.Catalog) *Docs {
	d := &Docs{cat: cat, names: map[string]map[string]string{}, schemaNames: map[string][]string{}}
	for _, api := range cat.APIs {
		d.names[api.Name] = typeNames(api, "", map[string]bool{})
		d.schemaNames[api.Name] = slices.Sorted(maps.Keys(api.Schemas))
	}
	d.fingerprint = d.fingerprintOf()
	d.index = buildIndex(cat)
	return d
}

// WithoutIO is d for a sandbox without io: the io built-ins (io.*,
// os.remove, file.save) are neither searched nor documented.
func (d *Docs) WithoutIO() *Docs {
	c := *d
	c.noIO = true
	return &c
}

// WithLearned is d with result types learned from recorded traces
// (host/sdk/learned): a function whose declared result type is any (an
// MCP tool without an outputSchema, an operation without a JSON schema
// for its success response) has its learned one in its signature, its
// docs and the definitions, marked as learned. A declared type always
// wins.
func (d *Docs) WithLearned(set learned.Set) *Docs {
	c := *d
	c.learned = set
	return &c
}

// typerOf is a typer of api's schemas (names: their Luau type names)
// that knows d's learned result types.
func (d *Docs) typerOf(api *catalog.API, names map[string]string) *typer {
	t := newTyper(api, names)
	t.learned = d.learned
	return t
}

// APIInfo is one entry of list_apis.
type APIInfo struct {
	Name        string `json:"name"`
	Kind        string `json:"kind"`
	Title       string `json:"title,omitempty"`
	Version     string `json:"version,omitempty"`
	BaseURL     string `json:"base_url,omitempty"`
	Description string `json:"description,omitempty"`
	Functions   int    `json:"functions"`
	Schemas     int    `json:"schemas,omitempty"`
	// State is "starting" or "down" for an MCP server whose tools are not
	// listed yet (Description says what to expect).
	State string `json:"state,omitempty"`
}

// ListAPIs lists the APIs and servers with their number of functions.
func (d *Docs) ListAPIs() []APIInfo {
	out := make([]APIInfo, 0, len(d.cat.APIs))
	for _, api := range d.cat.APIs {
		out = append(out, apiInfo(api))
	}
	return out
}

func apiInfo(api *catalog.API) APIInfo {
	return APIInfo{Name: api.Name, Kind: string(api.Kind), Title: oneLine(api.Title, 120), Version: oneLine(api.Version, 40),
		BaseURL: shownURL(api.BaseURL), Description: firstParagraph(api.Description, 300),
		Functions: len(api.Functions), Schemas: len(api.Schemas), State: api.State}
}

// shownURL is a base URL as the docs show it: without user information,
// query or fragment (which could carry a credential), at most 200
// characters.
func shownURL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	u.User, u.RawQuery, u.Fragment, u.ForceQuery = nil, "", "", false
	return oneLine(u.String(), 200)
}

// FunctionInfo is one entry of list_functions.
type FunctionInfo struct {
	// Name is how a script calls it: "sdk.list_pets" or "sdk.petstore.list_pets".
	Name    string   `json:"name"`
	API     string   `json:"api"`
	Summary string   `json:"summary,omitempty"`
	Tags    []string `json:"tags,omitempty"`
}

// listed are the APIs whose functions a listing of api shows: all of
// them when api is "", else that one, which must exist and have its
// functions (an MCP server whose tools are not listed yet has none).
func (d *Docs) listed(api string) ([]*catalog.API, error) {
	if api == "" {
		return d.cat.APIs, nil
	}
	a := d.cat.API(api)
	if a == nil {
		return nil, d.unknownAPI(api)
	}
	if a.State != "" {
		return nil, fmt.Errorf("%s: %s", a.State, a.Description)
	}
	return []*catalog.API{a}, nil
}

// ListFunctions lists the functions of api (all APIs when empty) with tag
// (any when empty), with one-line summaries.
func (d *Docs) ListFunctions(api, tag string) ([]FunctionInfo, error) {
	if err := checkName("tag", tag); err != nil {
		return nil, err
	}
	apis, err := d.listed(api)
	if err != nil {
		return nil, err
	}
	var out []FunctionInfo
	for _, a := range apis {
		for _, f := range a.Functions {
			if tag != "" && !hasTag(f, tag) {
				continue
			}
			out = append(out, FunctionInfo{Name: callName(a, f), API: a.Name, Summary: summary(f), Tags: f.Tags})
		}
	}
	if tag != "" && len(out) == 0 {
		return nil, fmt.Errorf("no function has the tag %q%s", tag, d.tagHint(apis, tag))
	}
	return out, nil
}

func hasTag(f *catalog.Function, tag string) bool {
	for _, t := range f.Tags {
		if strings.EqualFold(t, tag) {
			return true
		}
	}
	return false
}

func (d *Docs) tagHint(apis []*catalog.API, tag string) string {
	seen := map[string]bool{}
	var tags []string
	for _, a := range apis {
		for _, f := range a.Functions {
			for _, t := range f.Tags {
				if !seen[t] {
					seen[t] = true
					tags = append(tags, t)
				}
			}
		}
	}
	if best := catalog.Closest(tag, tags); best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ""
}

// maxName is the longest API, function, tag or schema name looked up;
// longer ones are refused at once (suggesting a near name costs in
// proportion to its length).
const maxName = 256

// checkName refuses a name longer than maxName.
func checkName(what, name string) error {
	if len(name) > maxName {
		return fmt.Errorf("the %s name is %d bytes long, longer than any (at most %d): %q", what, len(name), maxName, cutRunes(name, 40)+"...")
	}
	return nil
}

func (d *Docs) unknownAPI(name string) error {
	if err := checkName("API", name); err != nil {
		return err
	}
	var names []string
	for _, a := range d.cat.APIs {
		names = append(names, a.Name)
	}
	if best := catalog.Closest(name, names); best != "" {
		return fmt.Errorf("no API named %q (did you mean %q?)", name, best)
	}
	return fmt.Errorf("no API named %q (APIs: %s)", name, strings.Join(names, ", "))
}

// callName is how a script writes the function.
func callName(api *catalog.API, f *catalog.Function) string {
	if f.Flat {
		return "sdk." + f.Name
	}
	return "sdk." + api.Name + "." + f.Name
}

// summary is a function's one-line summary: its summary, else the first
// sentence of its description.
func summary(f *catalog.Function) string {
	if f.Summary != "" {
		return oneLine(f.Summary, 160)
	}
	return oneLine(firstParagraph(f.Description, 160), 160)
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		cut := strings.LastIndex(s[:max], " ")
		if cut < max/2 {
			cut = max
		}
		s = strings.TrimRight(s[:cut], " .,;:") + "..."
	}
	return s
}

func firstParagraph(s string, max int) string {
	s = strings.TrimSpace(s)
	if i := strings.Index(s, "\n\n"); i >= 0 {
		s = s[:i]
	}
	return oneLine(s, max)
}

// Lookup finds a function by the name a script uses ("list_pets",
// "sdk.list_pets", "petstore.list_pets", "sdk.petstore.list_pets").
func (d *Docs) Lookup(name string) (*catalog.API, *catalog.Function, error) {
	if err := checkName("function", name); err != nil {
		return nil, nil, err
	}
	name = strings.TrimPrefix(strings.TrimSpace(name), "sdk.")
	if api, fn, ok := strings.Cut(name, "."); ok {
		a := d.cat.API(api)
		if a == nil {
			return nil, nil, d.unknownAPI(api)
		}
		if f := a.Function(fn); f != nil {
			return a, f, nil
		}
		return nil, nil, d.unknownFunction(fn, a)
	}
	var found []*catalog.API
	for _, a := range d.cat.APIs {
		if a.Function(name) != nil {
			found = append(found, a)
		}
	}
	switch len(found) {
	case 1:
		return found[0], found[0].Function(name), nil
	case 0:
		return nil, nil, d.unknownFunction(name, nil)
	}
	var names []string
	for _, a := range found {
		names = append(names, "sdk."+a.Name+"."+name)
	}
	return nil, nil, fmt.Errorf("%s is in several APIs: %s", name, strings.Join(names, ", "))
}

func (d *Docs) unknownFunction(name string, in *catalog.API) error {
	var names []string
	for _, a := range d.cat.APIs {
		if in != nil && a != in {
			continue
		}
		for _, f := range a.Functions {
			names = append(names, f.Name)
		}
	}
	msg := fmt.Sprintf("no function named %q", name)
	if in != nil {
		msg += " in API " + in.Name
	}
	if err := d.pendingLookup(name, msg, in); err != nil {
		return err
	}
	if best := catalog.Closest(name, names); best != "" {
		return fmt.Errorf("%s (did you mean %q?)", msg, best)
	}
	return fmt.Errorf("%s (search_docs finds functions by what they do)", msg)
}

// mcpDocs renders what an MCP tool's docs add: its own name, its
// arguments and what a call returns.
func mcpDocs(b *strings.Builder, t *typer, api *catalog.API, f *catalog.Function) {
	fmt.Fprintf(b, "MCP tool %q of server %s\n", f.Tool, api.Name)
	if in := api.Resolve(f.InputSchema); in != nil && len(in.Properties) > 0 {
		b.WriteString("\nArguments (the args table):\n")
		for _, p := range in.Properties {
			req := "optional"
			for _, r := range in.Required {
				if r == p.Name {
					req = "required"
				}
			}
			fmt.Fprintf(b, "- %s: %s, %s", p.Name, t.typ(p.Schema, 1), req)
			if ps := api.Resolve(p.Schema); ps != nil {
				if ps.Format != "" {
					fmt.Fprintf(b, ", format %s", oneLine(ps.Format, 40))
				}
				if len(ps.Default) > 0 {
					fmt.Fprintf(b, ", default %s", ps.Default)
				}
				if ps.Description != "" {
					fmt.Fprintf(b, ": %s", oneLine(ps.Description, 300))
				}
			}
			b.WriteString("\n")
		}
	}
	if f.OutputSchema != nil {
		fmt.Fprintf(b, "\nReturns the tool's structured content: %s\n", t.typ(f.OutputSchema, 0))
	} else {
		b.WriteString("\nReturns the tool's structured content when it gives one; else its text (text blocks joined with newlines); else its content blocks as a list of tables.\n")
		learnedDocs(b, t, f, "the server")
	}
}

// learnedDocs says what was learned of f's result from recorded calls:
// the type (what the script got: structured content, or a string for a
// text), and the type of json.decode of the text when every text was
// JSON. by names who did not declare it.
func learnedDocs(b *strings.Builder, t *typer, f *catalog.Function, by string) {
	r, ok := t.learnedResult(f)
	if !ok {
		return
	}
	fmt.Fprintf(b, "Returns (learned from %s, not declared by %s): %s\n", recordedCalls(r.Calls), by, t.typ(r.Schema, 0))
	if r.TextJSON != nil {
		fmt.Fprintf(b, "Its text was JSON in every recorded call; json.decode(result) gives (learned): %s\n", t.typ(r.TextJSON, 0))
	}
}

// signature renders "sdk.get_pet(params: {...}, body: T?): (Pet, SdkResponse)".
func signature(t *typer, api *catalog.API, f *catalog.Function) string {
	return callName(api, f) + "(" + strings.Join(arguments(t, f), ", ") + "): (" + resultType(t, f) + ", SdkResponse)"
}

// arguments renders the parameters of a function's Luau signature.
func arguments(t *typer, f *catalog.Function) []string {
	var args []string
	if f.Kind == catalog.MCP {
		ty := "{[string]: any}"
		if f.InputSchema != nil {
			ty = t.typ(f.InputSchema, 0)
			if in := f.InputSchema; t.closedArgs && in.NoAdditional && in.Ref == "" && len(in.AllOf)+len(in.AnyOf)+len(in.OneOf) == 0 {
				ty = closed(ty)
			}
		}
		if in := f.InputSchema; in != nil && len(in.Required) > 0 {
			return []string{"args: " + ty}
		}
		return []string{"args: " + paren(ty) + "?"}
	}
	if len(f.Params) > 0 {
		var fields []string
		required := false
		for _, p := range f.Params {
			ty := t.typ(p.Schema, 1)
			if p.ContentType != "" || p.Schema == nil {
				ty = "any"
			}
			if !p.Required && !strings.HasSuffix(ty, "?") && ty != "any" {
				ty = paren(ty) + "?"
			}
			required = required || p.Required
			fields = append(fields, key(p.Name)+": "+ty)
		}
		ty := "{ " + strings.Join(fields, ", ") + " }"
		if t.closedArgs {
			ty = closed(ty)
		}
		if !required {
			ty += "?"
		}
		args = append(args, "params: "+ty)
	}
	if f.Body != nil {
		t.write = true
		ty := t.typ(bodySchemaOf(f), 0)
		t.write = false
		if !f.Body.Required && !strings.HasSuffix(ty, "?") && ty != "any" {
			ty = paren(ty) + "?"
		}
		args = append(args, "body: "+ty)
	}
	return args
}

// closed is a table type of named fields ("{ a: T, b: U? }") that a key
// it does not name does not fit: with the indexer [string]: nil, Luau's
// checker reports a table literal's extra key (a table literal is
// unsealed, and an unsealed table fits a sealed one with more keys; the
// indexer makes each extra key's value a mismatch with nil). Any other
// type is returned as it is.
func closed(ty string) string {
	if !strings.HasPrefix(ty, "{ ") || !strings.HasSuffix(ty, " }") {
		return ty
	}
	return strings.TrimSuffix(ty, " }") + ", [string]: nil }"
}

func bodySchemaOf(f *catalog.Function) *catalog.Schema {
	if f.Body == nil || len(f.Body.Content) == 0 {
		return nil
	}
	mt := f.Body.Content[0]
	if !isJSON(mt.Type) && !strings.Contains(mt.Type, "form") && mt.Schema == nil {
		return &catalog.Schema{Type: []string{"string"}}
	}
	return mt.Schema
}

// resultType is the type of data for the lowest 2xx response (200 before
// 201, a specific status before 2XX, whatever the spec's order): its JSON
// schema's type, string for other media types, nil without content; when
// that is any, the type learned from recorded calls, if any was.
func resultType(t *typer, f *catalog.Function) string {
	declared := declaredResultType(t, f)
	if declared == "any" {
		if r, ok := t.learnedResult(f); ok {
			return t.typ(r.Schema, 0)
		}
	}
	return declared
}

// declaredResultType is resultType as the spec or the server declares it.
func declaredResultType(t *typer, f *catalog.Function) string {
	if f.Kind == catalog.MCP {
		if f.OutputSchema != nil {
			return t.typ(f.OutputSchema, 0)
		}
		return "any"
	}
	r := successResponse(f)
	if r == nil {
		return "any"
	}
	if r.Status == "204" || len(r.Content) == 0 {
		return "nil"
	}
	for _, mt := range r.Content {
		if isJSON(mt.Type) {
			return t.typ(mt.Schema, 0)
		}
	}
	return "string"
}

// successResponse is f's 2xx response of the lowest status; nil when it
// has none.
func successResponse(f *catalog.Function) *catalog.Response {
	var best *catalog.Response
	bestRank := 0
	for _, r := range f.Responses {
		if !strings.HasPrefix(r.Status, "2") {
			continue
		}
		rank := 300 // 2XX: after every specific status
		if n, err := strconv.Atoi(r.Status); err == nil {
			rank = n
		}
		if best == nil || rank < bestRank {
			best, bestRank = r, rank
		}
	}
	return best
}

func isJSON(mt string) bool {
	mt = strings.ToLower(strings.TrimSpace(strings.SplitN(mt, ";", 2)[0]))
	return mt == "application/json" || strings.HasSuffix(mt, "+json") || mt == "*/*"
}

// Signature is the Luau signature of a function.
func (d *Docs) Signature(name string) (string, error) {
	api, f, err := d.Lookup(name)
	if err != nil {
		return "", err
	}
	return signature(d.typerOf(api, d.names[api.Name]), api, f), nil
}

// Signatures lists every function's signature, one a line: what
// execute_script's description shows when the sdk is small.
func (d *Docs) Signatures() []string {
	var out []string
	for _, api := range d.cat.APIs {
		t := d.typerOf(api, d.names[api.Name])
		for _, f := range api.Functions {
			out = append(out, signature(t, api, f))
		}
	}
	return out
}

// Count is the number of functions of the catalog.
func (d *Docs) Count() int {
	n := 0
	for _, api := range d.cat.APIs {
		n += len(api.Functions)
	}
	return n
}

// maxSchemasShown caps the named types a function's docs write out; the
// rest are listed by resource URI.
const maxSchemasShown = 12

// maxDescription caps a function's or schema's description in its docs.
const maxDescription = 4000

// typesBudget is the characters a function's or schema's docs may reach
// before the named types they use are only listed by resource URI.
const typesBudget = MaxAnswer - 3000

// FunctionDocs is get_function_docs(name): the signature, the summary and
// description, the parameters, body and responses, auth, and the named
// types the signature uses, as Luau, with their fields' formats and
// descriptions. Built-ins (json.encode, parallel, ...) have docs too. At
// most MaxAnswer characters.
func (d *Docs) FunctionDocs(name string) (string, error) {
	if b := d.builtin(name); b != nil {
		return b.docs(), nil
	}
	if d.noIO && isBuiltinName(name) {
		return "", fmt.Errorf("%s is not available: file access (io, os.remove, file) is disabled on this server", strings.TrimSpace(name))
	}
	api, f, err := d.Lookup(name)
	if err != nil {
		return "", err
	}
	t := d.typerOf(api, d.names[api.Name])
	var b strings.Builder
	fmt.Fprintf(&b, "```luau\n%s\n```\n\n", signature(t, api, f))
	if f.Summary != "" {
		fmt.Fprintf(&b, "%s\n\n", oneLine(f.Summary, 300))
	}
	if f.Description != "" && f.Description != f.Summary {
		fmt.Fprintf(&b, "%s\n\n", capDescription(f.Description))
	}
	if f.Kind == catalog.OpenAPI {
		fmt.Fprintf(&b, "%s %s (API %s", f.Method, f.Path, api.Name)
		if len(f.Tags) > 0 {
			fmt.Fprintf(&b, "; tags: %s", strings.Join(f.Tags, ", "))
		}
		b.WriteString(")")
		if f.Deprecated {
			b.WriteString(". Deprecated.")
		}
		b.WriteString("\n")
	}
	if f.Kind == catalog.MCP {
		mcpDocs(&b, t, api, f)
	}
	paramDocs(&b, t, f)
	bodyDocs(&b, t, api, f)
	responseDocs(&b, t, f)
	if f.Kind == catalog.OpenAPI && declaredResultType(t, f) == "any" {
		if _, ok := t.learnedResult(f); ok {
			b.WriteString("\n")
		}
		learnedDocs(&b, t, f, "the API")
	}
	if auth := authLine(api, f); auth != "" {
		fmt.Fprintf(&b, "\nAuth: %s (credentials come from the server's configuration, never from the script)\n", auth)
	}
	if f.Kind == catalog.MCP {
		b.WriteString("\nA result with isError raises { message, content }; catch it with pcall.\n")
	} else {
		b.WriteString("\nA non-2xx status raises { status, message, body, headers }; catch it with pcall.\n")
	}
	if len(t.used) > 0 {
		b.WriteString("\nTypes:\n```luau\n")
		d.writeTypes(&b, t, api, 0)
		b.WriteString(sdkResponseType + "\n```\n")
	}
	return capText(b.String(), "the named types are the resources sdk://"+api.Name+"/schemas/{name}"), nil
}

// capDescription is a description cut at maxDescription characters.
func capDescription(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > maxDescription {
		s = cutRunes(s, maxDescription) + "..."
	}
	return s
}

// writeTypes writes the named types t used from the from'th on, each with
// its fields' formats and descriptions, until maxSchemasShown types or
// typesBudget characters; the rest are listed by resource URI.
func (d *Docs) writeTypes(b *strings.Builder, t *typer, api *catalog.API, from int) {
	shown := 0
	for i := from; i < len(t.used); i++ { // t.used grows while types are rendered
		if shown == maxSchemasShown || b.Len() > typesBudget {
			rest := t.used[i:]
			var names []string
			for _, n := range rest {
				if b.Len()+len(strings.Join(names, ", ")) > MaxAnswer-1000 {
					names = append(names, "...")
					break
				}
				names = append(names, n)
			}
			fmt.Fprintf(b, "-- %d more types, each the resource sdk://%s/schemas/{name}: %s\n", len(rest), api.Name, strings.Join(names, ", "))
			return
		}
		n := t.used[i]
		writeTypeDecl(b, t, d.names[api.Name][n], api.Schemas[n])
		shown++
	}
}

// writeTypeDecl writes "type Name = T" and, as Luau comments under it, the
// formats and descriptions of the schema's fields (and its own format).
func writeTypeDecl(b *strings.Builder, t *typer, name string, s *catalog.Schema) {
	fmt.Fprintf(b, "type %s = %s\n", name, t.typ(s, 0))
	if s == nil {
		return
	}
	if s.Format != "" {
		fmt.Fprintf(b, "--   (format %s)\n", oneLine(s.Format, 40))
	}
	props := s.Properties
	for _, sub := range s.AllOf { // inline parts of an allOf
		if sub != nil && sub.Ref == "" {
			props = append(props[:len(props):len(props)], sub.Properties...)
		}
	}
	for _, p := range props {
		if line := fieldNote(t.api, p.Name, p.Schema); line != "" {
			b.WriteString("--   " + line + "\n")
		}
	}
}

// fieldNote is "name (format): description" for a field with a format or
// a description; "" for one with neither.
func fieldNote(api *catalog.API, name string, s *catalog.Schema) string {
	if s == nil {
		return ""
	}
	format, desc := s.Format, s.Description
	if s.Ref != "" { // a named type: its own docs say what it is
		return ""
	}
	if format == "" && s.Items != nil && s.Items.Ref == "" {
		if format = s.Items.Format; format != "" {
			format = "items " + format
		}
	}
	if format == "" && desc == "" {
		return ""
	}
	out := name
	if format != "" {
		out += " (" + oneLine(format, 40) + ")"
	}
	if desc != "" {
		out += ": " + oneLine(desc, 160)
	}
	return out
}

// authLine names the security a function uses, never a secret.
func authLine(api *catalog.API, f *catalog.Function) string {
	if f.NoAuth {
		return "none (the spec says security: [])"
	}
	var alts []string
	for _, alt := range f.Security {
		var parts []string
		for _, name := range alt {
			s := api.SecuritySchemes[name]
			desc := s.Type
			switch {
			case s.Type == "http":
				desc = s.Scheme
			case s.Type == "apiKey":
				desc = "API key in " + s.In + " " + s.Name
			}
			parts = append(parts, name+" ("+desc+")")
		}
		alts = append(alts, strings.Join(parts, " + "))
	}
	return strings.Join(alts, " or ")
}

// paramDocs lists f's parameters: type, required, where, format, default,
// description.
func paramDocs(b *strings.Builder, t *typer, f *catalog.Function) {
	if len(f.Params) == 0 {
		return
	}
	b.WriteString("\nParameters (the params table):\n")
	for _, p := range f.Params {
		req := "optional"
		if p.Required {
			req = "required"
		}
		fmt.Fprintf(b, "- %s: %s, %s, in %s", p.Name, t.typ(p.Schema, 1), req, p.In)
		if p.Schema != nil && p.Schema.Format != "" {
			fmt.Fprintf(b, ", format %s", p.Schema.Format)
		}
		if p.Schema != nil && len(p.Schema.Default) > 0 {
			fmt.Fprintf(b, ", default %s", p.Schema.Default)
		}
		if p.Description != "" {
			fmt.Fprintf(b, ": %s", oneLine(p.Description, 300))
		}
		b.WriteString("\n")
	}
}

// bodyDocs says whether f takes a body, in which media types, and the
// formats and descriptions of an inline object body's fields.
func bodyDocs(b *strings.Builder, t *typer, api *catalog.API, f *catalog.Function) {
	if f.Body == nil {
		return
	}
	var types []string
	for _, mt := range f.Body.Content {
		types = append(types, mt.Type)
	}
	req := "optional"
	if f.Body.Required {
		req = "required"
	}
	fmt.Fprintf(b, "\nBody (%s; sent as %s)", req, strings.Join(types, " or "))
	if f.Body.Description != "" {
		fmt.Fprintf(b, ": %s", oneLine(f.Body.Description, 300))
	}
	b.WriteString("\n")
	if s := bodySchemaOf(f); s != nil && s.Ref == "" {
		for _, p := range s.Properties {
			if line := fieldNote(api, p.Name, p.Schema); line != "" {
				b.WriteString("- body." + line + "\n")
			}
		}
	}
}

// responseDocs lists f's responses with the type of each one's data.
func responseDocs(b *strings.Builder, t *typer, f *catalog.Function) {
	if len(f.Responses) == 0 {
		return
	}
	b.WriteString("\nResponses:\n")
	for _, r := range f.Responses {
		ty := "no content"
		if len(r.Content) > 0 {
			ty = "string (" + r.Content[0].Type + ")"
		}
		for _, mt := range r.Content {
			if isJSON(mt.Type) { // what the sdk asks for and decodes
				ty = t.typ(mt.Schema, 0)
				break
			}
		}
		kind := "data"
		if !strings.HasPrefix(r.Status, "2") {
			kind = "error body"
		} else if r != successResponse(f) {
			kind = "data (not the typed result)"
		}
		fmt.Fprintf(b, "- %s: %s %s", r.Status, kind, ty)
		if r.Description != "" {
			fmt.Fprintf(b, ": %s", oneLine(r.Description, 200))
		}
		b.WriteString("\n")
	}
}
