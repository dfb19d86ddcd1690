// Package learned learns the result types of sdk functions that declare
// none (an MCP tool without an outputSchema, an OpenAPI operation without
// a JSON schema for its success response) from recorded traces
// (host/contract/effects/trace): what each successful call returned.
//
// It owns the inference (Learner: a JSON Schema-like shape of the values
// seen, their keys, arrays, primitives and unions, with caps on depth,
// keys, union width and size, beyond which a part is any) and the bounded
// reading of traces (Load). A learned type holds types only: the names of
// keys, never a value (no string literal, enum or example).
package learned

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/bits"
	"slices"

	"github.com/toolscript/toolscript/host/contract/catalog"
)

// The caps of a learned type: past one, the part is any (a value deeper
// than MaxDepth, of more than MaxUnion kinds), or an object a map of any
// (more than MaxKeys keys, or a key that is not a name); a type has at
// most MaxNodes parts.
const (
	MaxDepth    = 8
	MaxKeys     = 48
	MaxUnion    = 3
	MaxNodes    = 256
	MaxKeyBytes = 64
)

// kind is a set of JSON types.
type kind uint8

const (
	kindNull kind = 1 << iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

// shape is what the values seen at one place were.
type shape struct {
	kinds kind
	// wide: past a cap, the place is any.
	wide bool
	// items are the arrays' elements (nil: no element seen).
	items *shape
	// objects counts the objects seen; props their keys, in the order
	// first seen. mapOf: an object had too many keys or a key that is not
	// a name, and the objects are a map of any.
	objects int
	props   []*prop
	mapOf   bool
}

// prop is one key of the objects of a shape: in how many of them it was.
type prop struct {
	name  string
	shape *shape
	seen  int
	// last is the number of the object it was last counted in (a key
	// given twice in one object counts once).
	last int
}

// Learner infers one type from the values added to it. Its memory is
// bounded by MaxNodes whatever it is given. Not safe for concurrent use.
type Learner struct {
	root    *shape
	nodes   int
	samples int
	// full is the shape of every place past MaxNodes: wide, never
	// changed.
	full *shape
}

// NewLearner starts a learner with nothing seen.
func NewLearner() *Learner {
	return &Learner{root: &shape{}, nodes: 1, full: &shape{wide: true}}
}

// Samples is how many values were added.
func (l *Learner) Samples() int { return l.samples }

// AddJSON adds one JSON value (the whole of data). Data that is not JSON
// is an error, and the learner is left as it was.
func (l *Learner) AddJSON(data []byte) error {
	if !json.Valid(data) {
		return errors.New("not JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := l.value(dec, l.root, 0); err != nil {
		return err
	}
	l.samples++
	return nil
}

// AddString adds a string (a result the script got as text).
func (l *Learner) AddString() {
	l.add(l.root, kindString)
	l.samples++
}

// newShape is a new place, or full once MaxNodes are made.
func (l *Learner) newShape() *shape {
	if l.nodes >= MaxNodes {
		return l.full
	}
	l.nodes++
	return &shape{}
}

// add notes a kind at s; past MaxUnion kinds (nil aside), s is wide.
func (l *Learner) add(s *shape, k kind) {
	if s.wide {
		return
	}
	s.kinds |= k
	if bits.OnesCount8(uint8(s.kinds&^kindNull)) > MaxUnion {
		widen(s)
	}
}

// widen makes s any, dropping what it held.
func widen(s *shape) {
	s.wide, s.items, s.props = true, nil, nil
}

// value reads the next value of dec into s (at depth).
func (l *Learner) value(dec *json.Decoder, s *shape, depth int) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if s.wide || depth > MaxDepth {
		if !s.wide {
			widen(s)
		}
		return skip(dec, tok)
	}
	switch v := tok.(type) {
	case nil:
		l.add(s, kindNull)
	case bool:
		l.add(s, kindBool)
	case json.Number:
		l.add(s, kindNumber)
	case string:
		l.add(s, kindString)
	case json.Delim:
		if v == '[' {
			return l.array(dec, s, depth)
		}
		return l.object(dec, s, depth)
	}
	return nil
}

// array reads an array's elements (after its '[') into s.items.
func (l *Learner) array(dec *json.Decoder, s *shape, depth int) error {
	l.add(s, kindArray)
	for dec.More() {
		if s.wide {
			if err := l.value(dec, l.full, depth+1); err != nil {
				return err
			}
			continue
		}
		if s.items == nil {
			s.items = l.newShape()
		}
		if err := l.value(dec, s.items, depth+1); err != nil {
			return err
		}
	}
	_, err := dec.Token() // ']'
	return err
}

// object reads an object's members (after its '{') into s.props.
func (l *Learner) object(dec *json.Decoder, s *shape, depth int) error {
	l.add(s, kindObject)
	if !s.wide {
		s.objects++
	}
	keys := 0
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		name, _ := tok.(string)
		keys++
		into := l.full
		if !s.wide && !s.mapOf {
			if keys > MaxKeys || !IsName(name) {
				s.mapOf, s.props = true, nil
			} else {
				into = l.prop(s, name).shape
			}
		}
		if err := l.value(dec, into, depth+1); err != nil {
			return err
		}
	}
	_, err := dec.Token() // '}'
	return err
}

// prop is s's key name, counted in s's current object.
func (l *Learner) prop(s *shape, name string) *prop {
	i := slices.IndexFunc(s.props, func(p *prop) bool { return p.name == name })
	if i < 0 {
		s.props = append(s.props, &prop{name: name, shape: l.newShape()})
		i = len(s.props) - 1
	}
	p := s.props[i]
	if p.last != s.objects {
		p.last = s.objects
		p.seen++
	}
	return p
}

// skip reads the rest of a value whose first token is tok.
func skip(dec *json.Decoder, tok json.Token) error {
	d, ok := tok.(json.Delim)
	if !ok || d == ']' || d == '}' {
		return nil
	}
	for depth := 1; depth > 0; {
		tok, err := dec.Token()
		if err == io.EOF {
			return io.ErrUnexpectedEOF
		}
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('['), json.Delim('{'):
			depth++
		case json.Delim(']'), json.Delim('}'):
			depth--
		}
	}
	return nil
}

// IsName reports whether a key is a name a learned type keeps: 1 to
// MaxKeyBytes letters, digits, '_', '-', '.', '$' or '@', not starting
// with a digit or '-' (an identifier, a number or a UUID is data, not a
// name: its object is learned as a map).
func IsName(key string) bool {
	if key == "" || len(key) > MaxKeyBytes || key[0] >= '0' && key[0] <= '9' || key[0] == '-' {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == '$' || c == '@') {
			return false
		}
	}
	return true
}

// Schema is the type learned: a catalog schema of types, properties
// (required when in every object seen), items and nothing else; nil (any)
// when nothing was added or the whole is past a cap.
func (l *Learner) Schema() *catalog.Schema {
	if l.samples == 0 {
		return nil
	}
	return schemaOf(l.root)
}

func schemaOf(s *shape) *catalog.Schema {
	if s == nil || s.wide || s.kinds == 0 {
		return nil
	}
	out := &catalog.Schema{}
	for _, k := range []struct {
		kind kind
		name string
	}{{kindObject, "object"}, {kindArray, "array"}, {kindString, "string"}, {kindNumber, "number"}, {kindBool, "boolean"}, {kindNull, "null"}} {
		if s.kinds&k.kind != 0 {
			out.Type = append(out.Type, k.name)
		}
	}
	if s.kinds&kindArray != 0 {
		out.Items = schemaOf(s.items)
	}
	if s.kinds&kindObject != 0 && !s.mapOf {
		for _, p := range s.props {
			out.Properties = append(out.Properties, &catalog.Property{Name: p.name, Schema: schemaOf(p.shape)})
			if p.seen == s.objects {
				out.Required = append(out.Required, p.name)
			}
		}
	}
	return out
}

// Learn is the type of values (JSON texts; those that are not JSON are
// left out): a pure function of them.
func Learn(values [][]byte) *catalog.Schema {
	l := NewLearner()
	for _, v := range values {
		_ = l.AddJSON(v)
	}
	return l.Schema()
}
