package sdkargs

import (
	"encoding/json"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// TypeName names the type of a decoded value as a script sees it ("a
// string", "a table"...), for an error message.
func TypeName(v any) string {
	switch v.(type) {
	case nil:
		return "nil"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	case []any:
		return "a list"
	}
	return "a table"
}

// Place says how Describe names a location in a checked value.
type Place struct {
	// Value names the value itself ("body", "arguments"); "" names
	// nothing, and a problem with the whole value has no location.
	Value string
	// Member, when set, names a top-level property by itself ("parameter"
	// gives "parameter 'limit'.items[2]") rather than under Value
	// ("body.limit.items[2]").
	Member string
	// RootMember words a missing or unknown top-level property as a
	// missing or unknown Member ("missing required argument 'path'"),
	// without a location.
	RootMember bool
}

var printer = message.NewPrinter(language.English)

// Describe renders the most specific problem of a validation error, at
// its location named as at says.
func Describe(e *jsonschema.ValidationError, at Place) string {
	for len(e.Causes) > 0 {
		switch e.ErrorKind.(type) {
		case *kind.AnyOf, *kind.OneOf:
			return at.location(e.InstanceLocation) + "matches none of the allowed types (" + Describe(e.Causes[0], at) + ")"
		}
		e = e.Causes[0]
	}
	root := at.RootMember && len(e.InstanceLocation) == 0
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		if root {
			return "missing required " + at.Member + " '" + strings.Join(k.Missing, "', '") + "'"
		}
		return at.location(e.InstanceLocation) + "missing required property '" + strings.Join(k.Missing, "', '") + "'"
	case *kind.AdditionalProperties:
		if root {
			return "unknown " + at.Member + " '" + strings.Join(k.Properties, "', '") + "'"
		}
		return at.location(e.InstanceLocation) + "unknown property '" + strings.Join(k.Properties, "', '") + "'"
	}
	return at.location(e.InstanceLocation) + e.ErrorKind.LocalizedString(printer)
}

// location renders an instance location as "body.items[2].name: ",
// "parameter 'limit': " or "argument 'items'[2].name: ".
func (at Place) location(loc []string) string {
	var b strings.Builder
	switch {
	case at.Member != "" && len(loc) > 0:
		b.WriteString(at.Member + " '" + loc[0] + "'")
		loc = loc[1:]
	case at.Value == "":
		return ""
	default:
		b.WriteString(at.Value)
	}
	for _, part := range loc {
		if isIndex(part) {
			b.WriteString("[" + part + "]")
		} else {
			b.WriteString("." + part)
		}
	}
	return b.String() + ": "
}

func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
