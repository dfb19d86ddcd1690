package sdk

import (
	"encoding/json"
	"strconv"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/sdk/sdkargs"
)

// A quickCheck accepts the scalar values that one simple parameter schema
// (types, an enum, an int32/int64 format) certainly allows, without the
// JSON Schema validator: most parameters are such scalars, and most calls
// pass valid ones. It only ever says yes: a value it does not accept goes
// to the validator (the checker), which decides and words the error, so
// the checks are exactly the validator's (FuzzQuickCheck holds it to that).
type quickCheck struct {
	anyType bool // the schema names no type
	types   typeSet
	// intBits is 32 or 64 for the int32 and int64 formats, whose range is
	// checked here; stringFormat marks another checked format (uuid,
	// date-time...), left to the validator.
	intBits      int
	stringFormat bool
	enum         *enumSet
}

// typeSet is a set of JSON Schema types.
type typeSet uint8

const (
	typeString typeSet = 1 << iota
	typeInteger
	typeNumber
	typeBoolean
	typeNull
	typeObject
	typeArray
)

var typeNames = map[string]typeSet{
	"string": typeString, "integer": typeInteger, "number": typeNumber, "boolean": typeBoolean,
	"null": typeNull, "object": typeObject, "array": typeArray,
}

func (t typeSet) has(u typeSet) bool { return t&u != 0 }

// enumSet holds an enum's scalar values, numbers by their JSON text.
type enumSet struct {
	strings, numbers        map[string]bool
	null, hasTrue, hasFalse bool
}

// newQuickCheck returns the quick check of s, or nil when s is more than
// a scalar's types, enum and format (then the validator checks every
// value).
func newQuickCheck(api *catalog.API, s *catalog.Schema) *quickCheck {
	r := api.Resolve(s)
	if r == nil || !scalarOnly(r) {
		return nil
	}
	q := &quickCheck{anyType: len(r.Type) == 0}
	for _, t := range r.Type {
		bit, ok := typeNames[t]
		if !ok {
			return nil
		}
		q.types |= bit
	}
	if checkedFormats[r.Format] {
		switch r.Format {
		case "int32":
			q.intBits = 32
		case "int64":
			q.intBits = 64
		default:
			q.stringFormat = true
		}
	}
	if len(r.Enum) > 0 {
		q.enum = newEnumSet(r)
	}
	return q
}

// scalarOnly reports whether r says no more than a scalar's types, enum
// and format.
func scalarOnly(r *catalog.Schema) bool {
	return len(r.Const) == 0 && len(r.Properties) == 0 && len(r.Required) == 0 &&
		r.AdditionalProperties == nil && !r.NoAdditional && r.Items == nil &&
		len(r.AllOf) == 0 && len(r.AnyOf) == 0 && len(r.OneOf) == 0
}

// newEnumSet is r's enum's values by kind.
func newEnumSet(r *catalog.Schema) *enumSet {
	e := &enumSet{strings: map[string]bool{}, numbers: map[string]bool{}}
	for _, raw := range r.Enum {
		v, err := sdkargs.Parse(raw)
		if err != nil {
			continue // as toJSONSchema: an unreadable value is no value
		}
		switch x := v.(type) {
		case nil:
			e.null = true
		case bool:
			e.hasTrue, e.hasFalse = e.hasTrue || x, e.hasFalse || !x
		case string:
			e.strings[x] = true
		case json.Number:
			e.numbers[string(x)] = true
		}
	}
	// A nullable enum without null among its values still takes null.
	e.null = e.null || (r.Has("null") && len(r.Type) > 0)
	return e
}

// accepts reports whether v is certainly valid; false means "ask the
// validator".
func (q *quickCheck) accepts(v any) bool {
	if q == nil {
		return false
	}
	switch x := v.(type) {
	case nil:
		return q.takes(typeNull) && (q.enum == nil || q.enum.null)
	case bool:
		return q.takes(typeBoolean) && (q.enum == nil || x && q.enum.hasTrue || !x && q.enum.hasFalse)
	case string:
		return q.takes(typeString) && !q.stringFormat && (q.enum == nil || q.enum.strings[x])
	case json.Number:
		return q.acceptsNumber(string(x))
	}
	return false // tables: the validator
}

// takes reports whether the schema's types take a value of type t.
func (q *quickCheck) takes(t typeSet) bool { return q.anyType || q.types.has(t) }

// acceptsNumber is accepts for a number's text.
func (q *quickCheck) acceptsNumber(x string) bool {
	integral := isIntegerText(x)
	if !(q.takes(typeNumber) || q.types.has(typeInteger) && integral) {
		return false
	}
	if q.intBits > 0 {
		if _, err := strconv.ParseInt(x, 10, q.intBits); !integral || err != nil {
			return false
		}
	}
	return q.enum == nil || q.enum.numbers[x]
}

// isIntegerText: an optional minus and digits only.
func isIntegerText(s string) bool {
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// quickParams compiles the quick checks of a function's parameters, by
// name (nil for those the validator always checks).
func quickParams(api *catalog.API, f *catalog.Function) map[string]*quickCheck {
	out := make(map[string]*quickCheck, len(f.Params))
	for _, p := range f.Params {
		s := p.Schema
		if s == nil || p.ContentType != "" {
			s = &catalog.Schema{} // as paramsSchema: anything
		}
		out[p.Name] = newQuickCheck(api, s)
	}
	return out
}

// acceptsAll reports whether every parameter value passes its quick check.
func acceptsAll(checks map[string]*quickCheck, params map[string]any) bool {
	for name, v := range params {
		if !checks[name].accepts(v) {
			return false
		}
	}
	return true
}
