package catalog

// Clone copies a and its functions, so that linking names (Link sets
// Function.Flat) or freezing parameters in the copy leaves a untouched;
// schemas, parameters and bodies are shared, and never changed after
// loading.
func (a *API) Clone() *API {
	if a == nil {
		return nil
	}
	c := *a
	c.Functions = make([]*Function, len(a.Functions))
	for i, f := range a.Functions {
		fc := *f
		c.Functions[i] = &fc
	}
	if a.Schemas != nil {
		c.Schemas = make(map[string]*Schema, len(a.Schemas))
		for k, v := range a.Schemas {
			c.Schemas[k] = v
		}
	}
	return &c
}
