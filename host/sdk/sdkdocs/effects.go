package sdkdocs

// Effects is what the functions of one API can do to what they reach, for
// the annotations and description of the tool that runs scripts.
type Effects struct {
	API  string `json:"api"`
	Kind string `json:"kind"`
	// Functions counts the API's functions; Writers those that may change
	// data (catalog.Function.ReadOnly false): OpenAPI operations of
	// another method than GET, HEAD and OPTIONS, MCP tools not annotated
	// readOnlyHint: true.
	Functions int `json:"functions"`
	Writers   int `json:"writers"`
	// Pending is set for an MCP server whose tools are not listed yet
	// (starting or down): what they can do is not known, so they count as
	// tools that may change data.
	Pending bool `json:"pending,omitempty"`
}

// Effects lists every API's Effects, in catalog order.
func (d *Docs) Effects() []Effects {
	if d == nil {
		return nil
	}
	out := make([]Effects, 0, len(d.cat.APIs))
	for _, api := range d.cat.APIs {
		e := Effects{API: api.Name, Kind: string(api.Kind), Functions: len(api.Functions), Pending: api.State != ""}
		for _, f := range api.Functions {
			if !f.ReadOnly() {
				e.Writers++
			}
		}
		out = append(out, e)
	}
	return out
}

// ReadOnly reports whether no function of the sdk may change data: an API
// whose functions are not known yet may.
func ReadOnly(effects []Effects) bool {
	for _, e := range effects {
		if e.Writers > 0 || e.Pending {
			return false
		}
	}
	return true
}
