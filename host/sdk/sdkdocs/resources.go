package sdkdocs

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/toolscript/toolscript/host/contract/catalog"
)

// URIPrefix begins every sdk resource: sdk://{api}/overview,
// sdk://{api}/functions, sdk://{api}/functions/{name},
// sdk://{api}/schemas, sdk://{api}/schemas/{name}. The two listings come
// in pages: a page ends with the URI of the next (?cursor=...).
const URIPrefix = "sdk://"

// ResourceTemplates are the URI templates of the sdk resources (RFC 6570),
// for resources/templates/list.
var ResourceTemplates = []string{
	"sdk://{api}/overview",
	"sdk://{api}/functions{?cursor}",
	"sdk://{api}/functions/{name}",
	"sdk://{api}/schemas{?cursor}",
	"sdk://{api}/schemas/{name}",
}

// ResourceInfo is one listed resource.
type ResourceInfo struct {
	URI         string `json:"uri"`
	Name        string `json:"name"`
	Description string `json:"description"`
}

// Resources lists the overview and function list of every API (function
// and schema pages are reached through the templates: GitHub's API alone
// has over two thousand).
func (d *Docs) Resources() []ResourceInfo {
	var out []ResourceInfo
	for _, api := range d.cat.APIs {
		out = append(out,
			ResourceInfo{URI: URIPrefix + api.Name + "/overview", Name: api.Name + " overview", Description: "What the " + api.Name + " API is, its auth and its function groups"},
			ResourceInfo{URI: URIPrefix + api.Name + "/functions", Name: api.Name + " functions", Description: fmt.Sprintf("The %d functions of sdk.%s with their signatures, in pages", len(api.Functions), api.Name)},
		)
		if len(api.Schemas) > 0 {
			out = append(out, ResourceInfo{URI: URIPrefix + api.Name + "/schemas", Name: api.Name + " schemas", Description: fmt.Sprintf("The %d named schemas of sdk.%s, in pages", len(api.Schemas), api.Name)})
		}
	}
	return out
}

// Resource returns the text of an sdk:// resource. The listings
// (functions, schemas) take ?cursor= for their next pages.
func (d *Docs) Resource(uri string) (string, error) {
	rest, ok := strings.CutPrefix(uri, URIPrefix)
	if !ok {
		return "", fmt.Errorf("not an sdk resource: %s", cutRunes(uri, 200))
	}
	if len(uri) > 2000 {
		return "", fmt.Errorf("the sdk resource URI is %d bytes long: not one of %s", len(uri), strings.Join(ResourceTemplates, ", "))
	}
	rest, query, hasQuery := strings.Cut(rest, "?")
	var req PageRequest
	if hasQuery {
		vals, err := url.ParseQuery(query)
		if err != nil {
			return "", fmt.Errorf("sdk resource %s: %v", cutRunes(uri, 200), err)
		}
		for k := range vals {
			if k != "cursor" {
				return "", fmt.Errorf("sdk resource %s: unknown query parameter %q (only cursor)", cutRunes(uri, 200), k)
			}
		}
		req.Cursor = vals.Get("cursor")
	}
	parts := strings.SplitN(rest, "/", 3)
	api := d.cat.API(parts[0])
	if api == nil {
		return "", d.unknownAPI(parts[0])
	}
	listing := len(parts) == 2 && (parts[1] == "functions" || parts[1] == "schemas")
	if hasQuery && !listing {
		return "", fmt.Errorf("sdk resource %s: only sdk://{api}/functions and sdk://{api}/schemas take a cursor", cutRunes(uri, 200))
	}
	switch {
	case len(parts) == 2 && parts[1] == "overview":
		return d.Overview(api.Name)
	case len(parts) == 2 && parts[1] == "functions":
		p, err := d.functionListPage(api, req)
		return p.Text, err
	case len(parts) == 2 && parts[1] == "schemas":
		p, err := d.SchemasPage(api.Name, req)
		return p.Text, err
	case len(parts) == 3 && parts[1] == "functions":
		return d.FunctionDocs("sdk." + api.Name + "." + parts[2])
	case len(parts) == 3 && parts[1] == "schemas":
		return d.SchemaDocs(api.Name, parts[2])
	}
	return "", fmt.Errorf("unknown sdk resource %s (templates: %s)", cutRunes(uri, 200), strings.Join(ResourceTemplates, ", "))
}

// Overview is sdk://{api}/overview.
func (d *Docs) Overview(name string) (string, error) {
	api := d.cat.API(name)
	if api == nil {
		return "", d.unknownAPI(name)
	}
	var b strings.Builder
	title := api.Title
	if title == "" {
		title = api.Name
	}
	fmt.Fprintf(&b, "# sdk.%s: %s", api.Name, oneLine(title, 200))
	if api.Version != "" {
		fmt.Fprintf(&b, " (version %s)", oneLine(api.Version, 40))
	}
	b.WriteString("\n\n")
	if u := shownURL(api.BaseURL); u != "" {
		fmt.Fprintf(&b, "Base URL: %s\n\n", u)
	}
	if api.Description != "" {
		fmt.Fprintf(&b, "%s\n\n", capDescription(api.Description))
	}
	fmt.Fprintf(&b, "%d functions, called as sdk.%s.<name>(params?, body?) (or sdk.<name> when no other API has that name).\n", len(api.Functions), api.Name)
	if len(api.SecuritySchemes) > 0 {
		var schemes []string
		for _, n := range slices.Sorted(maps.Keys(api.SecuritySchemes)) {
			s := api.SecuritySchemes[n]
			desc := s.Type
			if s.Type == "http" {
				desc = s.Scheme
			} else if s.Type == "apiKey" {
				desc = "API key in " + s.In
			}
			schemes = append(schemes, n+" ("+desc+")")
		}
		fmt.Fprintf(&b, "Auth: %s; credentials come from the server's configuration, never from scripts.\n", strings.Join(schemes, ", "))
	}
	tags := map[string]int{}
	for _, f := range api.Functions {
		for _, t := range f.Tags {
			tags[t]++
		}
	}
	resources := fmt.Sprintf("\nResources: sdk://%s/functions (every signature, in pages), sdk://%s/functions/{name}, sdk://%s/schemas (every named schema, in pages), sdk://%s/schemas/{name}.\n", api.Name, api.Name, api.Name, api.Name)
	if len(tags) > 0 {
		b.WriteString("\nGroups (list_functions with tag):\n")
		keys := slices.Sorted(maps.Keys(tags))
		for i, t := range keys {
			l := fmt.Sprintf("- %s: %d functions\n", oneLine(t, 100), tags[t])
			if b.Len()+len(l)+len(resources) > MaxAnswer-200 {
				fmt.Fprintf(&b, "- ... %d more tags (list_functions lists every function)\n", len(keys)-i)
				break
			}
			b.WriteString(l)
		}
	}
	b.WriteString(resources)
	return capText(b.String(), ""), nil
}

// FunctionList is the first page of sdk://{api}/functions.
func (d *Docs) FunctionList(name string) (string, error) {
	api := d.cat.API(name)
	if api == nil {
		return "", d.unknownAPI(name)
	}
	p, err := d.functionListPage(api, PageRequest{})
	return p.Text, err
}

// functionListPage is a page of sdk://{api}/functions: one function a
// line, its compact signature and summary.
func (d *Docs) functionListPage(api *catalog.API, req PageRequest) (Page, error) {
	t := d.typerOf(api, d.names[api.Name])
	return paginate(d.listingKey("functions", api.Name, ""), len(api.Functions), req,
		func(i int) string {
			t.used, t.seen = nil, map[string]bool{}
			return line(compactSignature(t, api, api.Functions[i]), summary(api.Functions[i]))
		},
		func(first, last, total int) string {
			return fmt.Sprintf("# sdk.%s functions %d-%d of %d", api.Name, first, last, total)
		},
		func(cursor string, remaining int) string {
			return fmt.Sprintf("-- %d more: read sdk://%s/functions?cursor=%s", remaining, api.Name, cursor)
		})
}

// SchemaDocs is sdk://{api}/schemas/{name}: a named schema as a Luau type
// with its description and the types it uses.
func (d *Docs) SchemaDocs(apiName, schema string) (string, error) {
	api := d.cat.API(apiName)
	if api == nil {
		return "", d.unknownAPI(apiName)
	}
	if err := checkName("schema", schema); err != nil {
		return "", err
	}
	names := d.names[api.Name]
	s, ok := api.Schemas[schema]
	if !ok { // by its Luau type name too
		for n, tn := range names {
			if tn == schema {
				s, schema, ok = api.Schemas[n], n, true
				break
			}
		}
	}
	if !ok {
		all := slices.Sorted(maps.Keys(api.Schemas))
		if best := catalog.Closest(schema, all); best != "" {
			return "", fmt.Errorf("no schema %q in API %s (did you mean %q?)", schema, api.Name, best)
		}
		return "", fmt.Errorf("no schema %q in API %s", schema, api.Name)
	}
	t := newTyper(api, names)
	t.seen[schema] = true
	var b strings.Builder
	b.WriteString("```luau\n")
	writeTypeDecl(&b, t, names[schema], s)
	d.writeTypes(&b, t, api, 0)
	b.WriteString("```\n")
	if s.Description != "" {
		fmt.Fprintf(&b, "\n%s\n", capDescription(s.Description))
	}
	return capText(b.String(), "the named types are the resources sdk://"+api.Name+"/schemas/{name}"), nil
}
