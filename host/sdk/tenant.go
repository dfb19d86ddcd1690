package sdk

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/toolscript/toolscript/host/contract/catalog"
)

// A credential a request brings (_meta.auth) is the tenant's; the
// configuration and the spec are the operator's. The tenant's credential
// may fill only the slot the spec's security schemes declare for the
// operation (their type, name and place), and never one where a frozen
// parameter, a parameter of the operation or a header the host sets goes:
// requestPlan decides it, before anything is sent.

// hostHeaders are the headers the host or net/http sets on every request
// (setHeaders, the transport, tracing): no credential a request brings
// may name one.
var hostHeaders = map[string]bool{
	"Accept": true, "Accept-Encoding": true, "Content-Type": true, "Content-Length": true,
	"Content-Encoding": true, "Transfer-Encoding": true, "Connection": true, "Host": true,
	"User-Agent": true, "Cookie": true, "Te": true, "Trailer": true, "Upgrade": true,
	"Expect": true, "Traceparent": true, "Tracestate": true, "Baggage": true,
}

// requestPlan is how cred, which a request brought, goes on f's requests:
// into a slot f's security schemes declare, or an error naming what the
// credential asked for and what the slot is.
func requestPlan(cred *Credential, f *function) (authPlan, error) {
	slots := securitySlots(f.api.api, f.fn)
	p, err := slotPlan(cred, slots)
	if err != nil {
		return authPlan{}, err
	}
	in, name := p.place()
	if err := f.taken(in, name); err != nil {
		return authPlan{}, fmt.Errorf("the API's credential slot, %s %q, cannot take a request's credential: %w",
			in, name, err)
	}
	return p, nil
}

// securitySlots are the usable schemes the operation names, else all of
// its API's, sorted by name.
func securitySlots(api *catalog.API, fn *catalog.Function) []catalog.SecurityScheme {
	var names []string
	seen := map[string]bool{}
	for _, alt := range fn.Security {
		for _, name := range alt {
			if _, ok := api.SecuritySchemes[name]; ok && !seen[name] {
				seen[name] = true
				names = append(names, name)
			}
		}
	}
	if len(names) == 0 {
		for name := range api.SecuritySchemes {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var out []catalog.SecurityScheme
	for _, name := range names {
		if s := api.SecuritySchemes[name]; usable(s) {
			out = append(out, s)
		}
	}
	return out
}

// slotPlan fits cred to one of slots; without any, the slot is the
// Authorization header (bearer or basic), as for a configured bare secret.
func slotPlan(cred *Credential, slots []catalog.SecurityScheme) (authPlan, error) {
	fits := func(s catalog.SecurityScheme) bool {
		switch cred.Type {
		case AuthBearer:
			return s.Type == "oauth2" || s.Type == "openIdConnect" || s.Type == "http" && s.Scheme != "basic"
		case AuthBasic:
			return s.Type == "http" && (s.Scheme == "basic" || s.Scheme == "")
		case AuthAPIKey:
			return s.Type == "apiKey" && (cred.In == "" || cred.In == s.In) && (cred.Name == "" || sameName(s.In, s.Name, cred.Name))
		}
		return false
	}
	if len(slots) == 0 && cred.Type != AuthAPIKey {
		return plan(cred, schemes{})
	}
	for _, s := range slots {
		if fits(s) {
			if cred.Type == AuthAPIKey {
				return keyPlan(s.Name, s.In, cred.Value)
			}
			return plan(cred, schemes{})
		}
	}
	asked := cred.Type
	if cred.Type == AuthAPIKey && (cred.Name != "" || cred.In != "") {
		asked = fmt.Sprintf("api_key %q in %s", cred.Name, orDefault(cred.In, "any place"))
	}
	return authPlan{}, fmt.Errorf("%s is not a credential slot of this API: a request's credential may fill only %s", asked, describeSlots(slots))
}

// sameName compares parameter names as their place does: headers without
// regard to case.
func sameName(in, a, b string) bool {
	if in == "header" {
		return strings.EqualFold(a, b)
	}
	return a == b
}

// describeSlots names the slots, for messages.
func describeSlots(slots []catalog.SecurityScheme) string {
	if len(slots) == 0 {
		return "a bearer or basic credential in the Authorization header"
	}
	var parts []string
	for _, s := range slots {
		switch s.Type {
		case "apiKey":
			parts = append(parts, fmt.Sprintf("api_key %q in %s", s.Name, s.In))
		case "http":
			parts = append(parts, orDefault(s.Scheme, "bearer"))
		default:
			parts = append(parts, "bearer")
		}
	}
	return strings.Join(parts, " or ")
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// place is where the plan puts the credential: "header", "query" or
// "cookie", and the name.
func (p authPlan) place() (in, name string) {
	switch {
	case p.query != "":
		return "query", p.query
	case p.cookie != "":
		name, _, _ := strings.Cut(p.cookie, "=")
		return "cookie", name
	}
	return "header", p.header
}

// taken reports why a credential may not go in place in under name on f's
// requests: a frozen parameter (of any place) has that name, or one of
// the operation's parameters in that place, or the host sets that header.
func (f *function) taken(in, name string) error {
	for frozen := range f.api.frozen {
		if strings.EqualFold(frozen, name) {
			return fmt.Errorf("%s is a parameter the operator froze ([apis.%s.frozen_params] or [frozen_params])", frozen, f.api.api.Name)
		}
	}
	for _, p := range f.fn.Params {
		if p.In == in && sameName(in, p.Name, name) {
			return fmt.Errorf("%s is a %s parameter of the operation", p.Name, p.In)
		}
	}
	if in == "header" && hostHeaders[http.CanonicalHeaderKey(name)] {
		return errors.New("the host sets that header itself")
	}
	return nil
}
