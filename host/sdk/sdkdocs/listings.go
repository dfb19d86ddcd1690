package sdkdocs

import (
	"fmt"
	"strings"

	"github.com/toolscript/toolscript/host/contract/catalog"
)

// maxArgType caps the type of one argument or result in a compact
// signature; a longer one is written {...} (get_function_docs has it whole).
const maxArgType = 120

// compactSignature is a function's signature for a listing: as
// get_function_docs writes it, each argument's or result's type cut to
// {...} when longer than maxArgType.
func compactSignature(t *typer, api *catalog.API, f *catalog.Function) string {
	args := arguments(t, f)
	for i, a := range args {
		name, ty, _ := strings.Cut(a, ": ")
		if len(ty) > maxArgType {
			opt := ""
			if strings.HasSuffix(ty, "?") {
				opt = "?"
			}
			args[i] = name + ": {...}" + opt
		}
	}
	res := resultType(t, f)
	if len(res) > maxArgType {
		res = "{...}"
	}
	return callName(api, f) + "(" + strings.Join(args, ", ") + "): (" + res + ", SdkResponse)"
}

// CompactSignatures lists every function's compact signature, one a
// line: what execute_script's description shows when the full ones are
// too long.
func (d *Docs) CompactSignatures() []string {
	var out []string
	for _, api := range d.cat.APIs {
		t := d.typerOf(api, d.names[api.Name])
		for _, f := range api.Functions {
			out = append(out, capLine(compactSignature(t, api, f)))
		}
	}
	return out
}

// APIsPage is list_apis: one line per API or MCP server with its kind,
// number of functions, title, version, base URL and description.
func (d *Docs) APIsPage(req PageRequest) (Page, error) {
	apis := d.cat.APIs
	return paginate(d.listingKey("apis"), len(apis), req,
		func(i int) string {
			a := apiInfo(apis[i])
			var b strings.Builder
			kind := "OpenAPI"
			unit := "functions"
			if a.Kind == string(catalog.MCP) {
				kind, unit = "MCP server", "tools"
			}
			fmt.Fprintf(&b, "sdk.%s (%s, ", a.Name, kind)
			if a.State != "" { // an MCP server whose tools are not listed yet
				b.WriteString(a.State + ", ")
			}
			fmt.Fprintf(&b, "%d %s", a.Functions, unit)
			if a.Schemas > 0 {
				fmt.Fprintf(&b, ", %d schemas", a.Schemas)
			}
			b.WriteString(")")
			if a.Title != "" && a.Title != a.Name {
				b.WriteString(": " + a.Title)
			}
			if a.Version != "" {
				b.WriteString(", version " + a.Version)
			}
			if a.BaseURL != "" {
				b.WriteString(", base URL " + a.BaseURL)
			}
			if a.Description != "" {
				b.WriteString(" -- " + a.Description)
			}
			return b.String()
		},
		func(first, last, total int) string {
			return fmt.Sprintf("APIs %d-%d of %d (list_functions lists an API's functions; sdk://{api}/overview describes it):", first, last, total)
		},
		func(cursor string, remaining int) string {
			return fmt.Sprintf("-- %d more: call list_apis with cursor %s", remaining, quote(cursor))
		})
}

// FunctionsPage is list_functions: the functions of api (all when "") with
// tag (any when ""), one line each: compact signature -- summary.
func (d *Docs) FunctionsPage(api, tag string, req PageRequest) (Page, error) {
	type ref struct {
		api *catalog.API
		fn  *catalog.Function
	}
	if err := checkName("tag", tag); err != nil {
		return Page{}, err
	}
	apis, err := d.listed(api)
	if err != nil {
		return Page{}, err
	}
	var fns []ref
	for _, a := range apis {
		for _, f := range a.Functions {
			if tag == "" || hasTag(f, tag) {
				fns = append(fns, ref{a, f})
			}
		}
	}
	if tag != "" && len(fns) == 0 {
		return Page{}, fmt.Errorf("no function has the tag %q%s", tag, d.tagHint(apis, tag))
	}
	typers := map[string]*typer{}
	what := "functions of the sdk"
	if api != "" {
		what = "functions of sdk." + api
	}
	if tag != "" {
		what += fmt.Sprintf(" tagged %q", tag)
	}
	return paginate(d.listingKey("functions", api, strings.ToLower(tag)), len(fns), req,
		func(i int) string {
			r := fns[i]
			t := typers[r.api.Name]
			if t == nil {
				t = d.typerOf(r.api, d.names[r.api.Name])
				typers[r.api.Name] = t
			}
			t.used, t.seen = nil, map[string]bool{}
			return line(compactSignature(t, r.api, r.fn), summary(r.fn)+learnedMark(t, r.fn))
		},
		func(first, last, total int) string {
			if total == 0 {
				return "No " + what + "."
			}
			return fmt.Sprintf("%s %d-%d of %d (get_function_docs gives one's parameters and types):", capFirst(what), first, last, total)
		},
		func(cursor string, remaining int) string {
			return fmt.Sprintf("-- %d more: call list_functions again with the same api and tag and cursor %s", remaining, quote(cursor))
		})
}

func capFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// SchemasPage is sdk://{api}/schemas: every named schema of an API, one
// line each: its type name, what it is (object with N fields, enum, ...)
// and its description.
func (d *Docs) SchemasPage(apiName string, req PageRequest) (Page, error) {
	api := d.cat.API(apiName)
	if api == nil {
		return Page{}, d.unknownAPI(apiName)
	}
	names := d.schemaNames[api.Name]
	return paginate(d.listingKey("schemas", api.Name), len(names), req,
		func(i int) string {
			s := api.Schemas[names[i]]
			var b strings.Builder
			b.WriteString(d.names[api.Name][names[i]])
			if shape := shapeOf(s); shape != "" {
				b.WriteString(" (" + shape + ")")
			}
			if s != nil && s.Description != "" {
				b.WriteString(" -- " + oneLine(s.Description, 200))
			} else if s != nil && s.Title != "" {
				b.WriteString(" -- " + oneLine(s.Title, 200))
			}
			return b.String()
		},
		func(first, last, total int) string {
			if total == 0 {
				return "sdk." + api.Name + " has no named schemas."
			}
			return fmt.Sprintf("Schemas of sdk.%s %d-%d of %d (each is the resource sdk://%s/schemas/{name}):", api.Name, first, last, total, api.Name)
		},
		func(cursor string, remaining int) string {
			return fmt.Sprintf("-- %d more: read sdk://%s/schemas?cursor=%s", remaining, api.Name, cursor)
		})
}

// shapeOf says briefly what a schema is.
func shapeOf(s *catalog.Schema) string {
	switch {
	case s == nil:
		return ""
	case len(s.Enum) > 0:
		return fmt.Sprintf("enum of %d", len(s.Enum))
	case len(s.Properties) == 1:
		return "object, 1 field"
	case len(s.Properties) > 0:
		return fmt.Sprintf("object, %d fields", len(s.Properties))
	case len(s.AllOf) > 0:
		return "allOf"
	case len(s.OneOf)+len(s.AnyOf) > 0:
		return "one of several"
	case len(s.Type) > 0:
		out := strings.Join(s.Type, " | ")
		if s.Format != "" {
			out += ", format " + s.Format
		}
		return out
	}
	return ""
}
