package openapi

import (
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/toolscript/toolscript/host/contract/catalog"
)

// resolveBaseURL sets api.BaseURL from its first server, filled with its
// variables' defaults and resolved against loc, where the spec was read
// this time (a path or URL). It runs on every load, after the catalog was
// parsed or read from the cache: the cache is keyed by the spec's bytes,
// so nothing that depends on the spec's location may come out of it (the
// same spec served from another address must send its calls, and their
// credentials, there). Problems are added to the API's warnings.
func resolveBaseURL(api *catalog.API, loc string) {
	base, problem := baseURL(api.Servers, loc)
	api.BaseURL = base
	if problem != "" {
		api.Warnings = append(api.Warnings, problem)
	}
}

// baseURL is the base URL of a spec with these servers read from loc, or
// "" and why there is none. Without servers, OpenAPI's default server is
// "/": the origin of a spec read from a URL.
func baseURL(servers []catalog.Server, loc string) (string, string) {
	raw, vars := "/", map[string]catalog.ServerVariable(nil)
	if len(servers) > 0 {
		raw, vars = servers[0].URL, servers[0].Variables
	}
	u := raw
	names := make([]string, 0, len(vars))
	for n := range vars {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		u = strings.ReplaceAll(u, "{"+n+"}", vars[n].Default)
	}
	if strings.Contains(u, "{") {
		return "", fmt.Sprintf("server URL %s has variables without defaults", raw)
	}
	parsed, err := url.Parse(u)
	if err != nil {
		return "", fmt.Sprintf("server URL %s: %v", raw, err)
	}
	if parsed.Scheme == "" {
		switch {
		case isURL(loc):
			from, err := url.Parse(loc)
			if err != nil {
				return "", fmt.Sprintf("server URL %q is relative and the spec's URL %s does not parse: set base_url for this API", raw, loc)
			}
			parsed = from.ResolveReference(parsed)
		case parsed.Host != "": // //host/path: a Swagger 2.0 host without schemes
			parsed.Scheme = "https"
		case len(servers) == 0:
			return "", "the spec names no server: set base_url for this API"
		default:
			return "", fmt.Sprintf("server URL %q is relative and the spec is a file: set base_url for this API", raw)
		}
	}
	if parsed.Scheme != "http" && parsed.Scheme != "https" {
		return "", fmt.Sprintf("server URL %s is not http(s)", raw)
	}
	return strings.TrimSuffix(parsed.String(), "/"), ""
}
