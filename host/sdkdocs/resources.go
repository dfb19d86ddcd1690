package sdkdocs

import (
	"fmt"
	"sort"
	"strings"

	"github.com/toolscript/toolscript/host/catalog"
)

// URIPrefix begins every sdk resource: sdk://{api}/overview,
// sdk://{api}/functions, sdk://{api}/functions/{name},
// sdk://{api}/schemas/{name}.
const URIPrefix = "sdk://"

// ResourceTemplates are the URI templates of the sdk resources (RFC 6570),
// for resources/templates/list.
var ResourceTemplates = []string{
	"sdk://{api}/overview",
	"sdk://{api}/functions",
	"sdk://{api}/functions/{name}",
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
			ResourceInfo{URI: URIPrefix + api.Name + "/functions", Name: api.Name + " functions", Description: fmt.Sprintf("The %d functions of sdk.%s with their signatures", len(api.Functions), api.Name)},
		)
	}
	return out
}

// Resource returns the text of an sdk:// resource.
func (d *Docs) Resource(uri string) (string, error) {
	rest, ok := strings.CutPrefix(uri, URIPrefix)
	if !ok {
		return "", fmt.Errorf("not an sdk resource: %s", uri)
	}
	parts := strings.SplitN(rest, "/", 3)
	api := d.cat.API(parts[0])
	if api == nil {
		return "", d.unknownAPI(parts[0])
	}
	switch {
	case len(parts) == 2 && parts[1] == "overview":
		return d.Overview(api.Name)
	case len(parts) == 2 && parts[1] == "functions":
		return d.FunctionList(api.Name)
	case len(parts) == 3 && parts[1] == "functions":
		return d.FunctionDocs("sdk." + api.Name + "." + parts[2])
	case len(parts) == 3 && parts[1] == "schemas":
		return d.SchemaDocs(api.Name, parts[2])
	}
	return "", fmt.Errorf("unknown sdk resource %s (templates: %s)", uri, strings.Join(ResourceTemplates, ", "))
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
	fmt.Fprintf(&b, "# sdk.%s: %s", api.Name, title)
	if api.Version != "" {
		fmt.Fprintf(&b, " (version %s)", api.Version)
	}
	b.WriteString("\n\n")
	if api.Description != "" {
		fmt.Fprintf(&b, "%s\n\n", strings.TrimSpace(api.Description))
	}
	fmt.Fprintf(&b, "%d functions, called as sdk.%s.<name>(params?, body?) (or sdk.<name> when no other API has that name).\n", len(api.Functions), api.Name)
	if len(api.SecuritySchemes) > 0 {
		var schemes []string
		for _, n := range sortedKeys(api.SecuritySchemes) {
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
	if len(tags) > 0 {
		b.WriteString("\nGroups (list_functions with tag):\n")
		for _, t := range sortedKeys(tags) {
			fmt.Fprintf(&b, "- %s: %d functions\n", t, tags[t])
		}
	}
	fmt.Fprintf(&b, "\nResources: sdk://%s/functions (every signature), sdk://%s/functions/{name}, sdk://%s/schemas/{name}.\n", api.Name, api.Name, api.Name)
	return b.String(), nil
}

// FunctionList is sdk://{api}/functions: every signature with its summary.
func (d *Docs) FunctionList(name string) (string, error) {
	api := d.cat.API(name)
	if api == nil {
		return "", d.unknownAPI(name)
	}
	t := newTyper(api, d.names[api.Name])
	var b strings.Builder
	fmt.Fprintf(&b, "# sdk.%s functions\n\n", api.Name)
	for _, f := range api.Functions {
		fmt.Fprintf(&b, "%s\n", signature(t, api, f))
		if s := summary(f); s != "" {
			fmt.Fprintf(&b, "  -- %s\n", s)
		}
	}
	return b.String(), nil
}

// SchemaDocs is sdk://{api}/schemas/{name}: a named schema as a Luau type
// with its description and the types it uses.
func (d *Docs) SchemaDocs(apiName, schema string) (string, error) {
	api := d.cat.API(apiName)
	if api == nil {
		return "", d.unknownAPI(apiName)
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
		all := sortedSchemaNames(api)
		if best := catalog.Closest(schema, all); best != "" {
			return "", fmt.Errorf("no schema %q in API %s (did you mean %q?)", schema, api.Name, best)
		}
		return "", fmt.Errorf("no schema %q in API %s", schema, api.Name)
	}
	t := newTyper(api, names)
	t.seen[schema] = true
	var b strings.Builder
	fmt.Fprintf(&b, "```luau\ntype %s = %s\n", names[schema], t.typ(s, 0))
	for i := 0; i < len(t.used) && i < maxSchemasShown; i++ {
		n := t.used[i]
		fmt.Fprintf(&b, "type %s = %s\n", names[n], t.typ(api.Schemas[n], 0))
	}
	b.WriteString("```\n")
	if s.Description != "" {
		fmt.Fprintf(&b, "\n%s\n", strings.TrimSpace(s.Description))
	}
	var props []string
	for _, p := range s.Properties {
		if p.Schema != nil && p.Schema.Description != "" {
			props = append(props, fmt.Sprintf("- %s: %s", p.Name, oneLine(p.Schema.Description, 200)))
		}
	}
	if len(props) > 0 {
		fmt.Fprintf(&b, "\n%s\n", strings.Join(props, "\n"))
	}
	return b.String(), nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
