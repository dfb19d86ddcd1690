package catalog

// Freeze hides the parameters whose names are in frozen from every function
// of a that has them: they move from Params to Frozen, so that docs, the
// manifest and argument checks no longer see them, and the caller injects
// their configured values.
func (a *API) Freeze(frozen map[string]bool) {
	if len(frozen) == 0 {
		return
	}
	for _, f := range a.Functions {
		visible := f.Params[:0:0]
		for _, p := range f.Params {
			if frozen[p.Name] {
				f.Frozen = append(f.Frozen, p)
			} else {
				visible = append(visible, p)
			}
		}
		f.Params = visible
	}
}
