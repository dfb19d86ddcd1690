package sdk

import (
	"bytes"
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/toolscript/toolscript/host/contract/catalog"
)

// A dry run does not send an unsafe call: the script gets a response made
// up from the operation's documented success response instead, its
// example when the spec has one that fits the schema, else the minimal
// value the schema allows (synthesise).

// The bounds of a synthesised value: a schema that refers to itself, or is
// very wide, still gives a small value at once.
const (
	// synthMaxDepth is how deep a synthesised value nests; a required
	// property deeper than that is null.
	synthMaxDepth = 12
	// synthMaxNodes is how many values (objects, arrays and scalars) one
	// synthesised value has at most; past it, null.
	synthMaxNodes = 2000
	// synthMaxItems is how many items a minItems asks for, at most.
	synthMaxItems = 8
	// synthMaxString is how long a minLength makes a string, at most.
	synthMaxString = 1024
)

// synthesise returns the minimal JSON value valid against s (within api):
// required properties only, the first enum value or the const, the
// minimum number of items, formats honoured (date-time, uuid, email...),
// numbers at zero or their minimum. A schema that allows no value, or a
// pattern, may give a value it does not accept: it is a stand-in, never
// sent anywhere.
func synthesise(api *catalog.API, s *catalog.Schema) json.RawMessage {
	v, _ := synthesiseBounded(api, s)
	return v
}

// synthesiseBounded is synthesise, and whether a bound (depth, nodes) cut
// the value short: a null then stands where the schema wants more.
func synthesiseBounded(api *catalog.API, s *catalog.Schema) (json.RawMessage, bool) {
	g := synth{api: api}
	g.value(s, 0)
	return json.RawMessage(g.out.Bytes()), g.cut
}

type synth struct {
	api   *catalog.API
	out   bytes.Buffer
	nodes int
	cut   bool
}

// flat is a schema with its refs followed and its allOf merged: the
// properties, required names and constraints a value must meet.
type flat struct {
	types      []string
	format     string
	enum       []json.RawMessage
	konst      json.RawMessage
	props      []*catalog.Property
	required   []string
	additional *catalog.Schema
	items      *catalog.Schema
	alts       []*catalog.Schema // oneOf or anyOf: the first is taken
	minimum    *float64
	maximum    *float64
	minLength  *int64
	maxLength  *int64
	minItems   *int64
}

// flatten follows s's refs and merges its allOf (to a bounded depth).
func (g *synth) flatten(s *catalog.Schema, f *flat, depth int) {
	s = g.api.Resolve(s)
	if s == nil || depth > synthMaxDepth {
		return
	}
	if len(s.Type) > 0 {
		if f.types == nil {
			f.types = s.Type
		} else { // allOf: the types both allow
			var both []string
			for _, t := range f.types {
				if s.Has(t) {
					both = append(both, t)
				}
			}
			f.types = both
		}
	}
	if s.Format != "" && f.format == "" {
		f.format = s.Format
	}
	if len(s.Enum) > 0 && f.enum == nil {
		f.enum = s.Enum
	}
	if len(s.Const) > 0 && f.konst == nil {
		f.konst = s.Const
	}
	f.props = append(f.props, s.Properties...)
	f.required = append(f.required, s.Required...)
	if s.AdditionalProperties != nil && f.additional == nil {
		f.additional = s.AdditionalProperties
	}
	if s.Items != nil && f.items == nil {
		f.items = s.Items
	}
	if f.alts == nil {
		if len(s.OneOf) > 0 {
			f.alts = s.OneOf
		} else if len(s.AnyOf) > 0 {
			f.alts = s.AnyOf
		}
	}
	f.minimum = maxPtr(f.minimum, s.Minimum)
	f.maximum = minPtr(f.maximum, s.Maximum)
	f.minLength = maxPtr(f.minLength, s.MinLength)
	f.maxLength = minPtr(f.maxLength, s.MaxLength)
	f.minItems = maxPtr(f.minItems, s.MinItems)
	for _, sub := range s.AllOf {
		g.flatten(sub, f, depth+1)
	}
}

func maxPtr[T int64 | float64](a, b *T) *T {
	if a == nil || (b != nil && *b > *a) {
		return b
	}
	return a
}

func minPtr[T int64 | float64](a, b *T) *T {
	if a == nil || (b != nil && *b < *a) {
		return b
	}
	return a
}

// value writes the minimal value of s.
func (g *synth) value(s *catalog.Schema, depth int) {
	g.nodes++
	if s == nil {
		g.out.WriteString("null")
		return
	}
	if depth > synthMaxDepth || g.nodes > synthMaxNodes {
		g.cut = true
		g.out.WriteString("null")
		return
	}
	var f flat
	g.flatten(s, &f, 0)
	if len(f.alts) > 0 {
		// The first alternative, with what the schema itself requires.
		g.flatten(f.alts[0], &f, 1)
	}
	switch {
	case len(f.konst) > 0:
		g.raw(f.konst)
		return
	case len(f.enum) > 0:
		g.raw(f.enum[0])
		return
	}
	switch f.kind() {
	case "object":
		g.object(&f, depth)
	case "array":
		g.array(&f, depth)
	case "string":
		g.out.WriteString(strconv.Quote(stringFor(&f)))
	case "integer":
		g.out.WriteString(strconv.FormatFloat(numberFor(&f, true), 'f', -1, 64))
	case "number":
		g.out.WriteString(strconv.FormatFloat(numberFor(&f, false), 'f', -1, 64))
	case "boolean":
		g.out.WriteString("false")
	default:
		g.out.WriteString("null")
	}
}

// raw writes a value the spec gave (an enum value, a const), compacted.
func (g *synth) raw(v json.RawMessage) {
	if err := json.Compact(&g.out, v); err != nil {
		g.out.WriteString("null")
	}
}

// kind is the JSON type of f's value: its first allowed type other than
// null, else what its keywords suggest, else null.
func (f *flat) kind() string {
	for _, t := range f.types {
		if t != "null" {
			return t
		}
	}
	switch {
	case len(f.types) > 0:
		return "null"
	case len(f.props) > 0 || len(f.required) > 0 || f.additional != nil:
		return "object"
	case f.items != nil || f.minItems != nil:
		return "array"
	case f.format != "" || f.minLength != nil:
		return "string"
	case f.minimum != nil || f.maximum != nil:
		return "number"
	}
	return "null"
}

func (g *synth) object(f *flat, depth int) {
	g.out.WriteByte('{')
	seen := map[string]bool{}
	names := make([]string, 0, len(f.required))
	for _, name := range f.required {
		if !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	// Properties in the spec's order: the value reads like the spec.
	order := map[string]int{}
	for i, p := range f.props {
		if _, ok := order[p.Name]; !ok {
			order[p.Name] = i
		}
	}
	sort.SliceStable(names, func(i, j int) bool {
		a, okA := order[names[i]]
		b, okB := order[names[j]]
		if okA != okB {
			return okA
		}
		return a < b
	})
	for i, name := range names {
		if i > 0 {
			g.out.WriteByte(',')
		}
		key, _ := json.Marshal(name)
		g.out.Write(key)
		g.out.WriteByte(':')
		var ps *catalog.Schema
		if j, ok := order[name]; ok {
			ps = f.props[j].Schema
		} else {
			ps = f.additional
		}
		g.value(ps, depth+1)
	}
	g.out.WriteByte('}')
}

func (g *synth) array(f *flat, depth int) {
	g.out.WriteByte('[')
	n := int64(0)
	if f.minItems != nil {
		n = min(max(*f.minItems, 0), synthMaxItems)
	}
	for i := range n {
		if i > 0 {
			g.out.WriteByte(',')
		}
		g.value(f.items, depth+1)
	}
	g.out.WriteByte(']')
}

// formatExamples are a value of each format a string may have.
var formatExamples = map[string]string{
	"date-time":     "1970-01-01T00:00:00Z",
	"date":          "1970-01-01",
	"time":          "00:00:00Z",
	"duration":      "P0D",
	"uuid":          "00000000-0000-0000-0000-000000000000",
	"email":         "user@example.com",
	"idn-email":     "user@example.com",
	"uri":           "https://example.com/",
	"url":           "https://example.com/",
	"iri":           "https://example.com/",
	"uri-reference": "https://example.com/",
	"hostname":      "example.com",
	"ipv4":          "127.0.0.1",
	"ipv6":          "::1",
	"int32":         "0",
	"int64":         "0",
}

func stringFor(f *flat) string {
	s := formatExamples[f.format]
	if f.minLength != nil && int64(len(s)) < *f.minLength {
		s += strings.Repeat("a", int(min(*f.minLength, synthMaxString))-len(s))
	}
	if f.maxLength != nil && int64(len(s)) > *f.maxLength && *f.maxLength >= 0 {
		s = s[:*f.maxLength]
	}
	return s
}

func numberFor(f *flat, integer bool) float64 {
	v := 0.0
	if f.minimum != nil && v < *f.minimum {
		v = *f.minimum
		if integer {
			v = math.Ceil(v)
		}
	}
	if f.maximum != nil && v > *f.maximum {
		v = *f.maximum
		if integer {
			v = math.Floor(v)
		}
	}
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return 0
	}
	return v
}
