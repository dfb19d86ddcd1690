// Package positive owns the one rule for a numeric setting left unset: a
// value of zero or less stands for the setting's default. A Config's
// withDefaults method passes each such field through Or, so no package
// spells the rule again.
package positive

// Number is a setting's type: a count, a size in bytes or a duration.
type Number interface {
	~int | ~int32 | ~int64 | ~uint | ~uint32 | ~uint64 | ~float64
}

// Or returns v when it is above zero, else def: a setting of zero (unset)
// or less takes its default.
func Or[T Number](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}
