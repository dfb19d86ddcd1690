package config

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/toolscript/toolscript/host/contract/catalog"
)

// This file explains a configuration file's mistakes to the person who
// wrote it: an unknown key with its line and the known key it is nearest
// to (catalog.Closest, the rule of every "did you mean"), a value of the wrong type with its line and what the key wants. A
// string field that holds a duration says so in its tag (kind:"duration").

// maxExplainedKeys bounds the unknown keys explained one by one: finding a
// key's line decodes the file again.
const maxExplainedKeys = 10

// unknownKeys is the error for keys File has no place for, one line: the
// first maxExplainedKeys explained, the others counted.
func unknownKeys(data string, keys []toml.Key) error {
	more := len(keys) - maxExplainedKeys
	keys = keys[:min(len(keys), maxExplainedKeys)]
	texts := make([]string, len(keys), len(keys)+1)
	for i, key := range keys {
		text := "unknown key " + key.String()
		if line := lineOf(data, key); line > 0 {
			text = fmt.Sprintf("line %d: %s", line, text)
		}
		if name := catalog.Closest(key[len(key)-1], fieldNames(typeAt(key[:len(key)-1]))); name != "" {
			text += fmt.Sprintf(" (did you mean %q?)", name)
		}
		texts[i] = text
	}
	if more > 0 {
		texts = append(texts, fmt.Sprintf("and %d more unknown keys", more))
	}
	return errors.New(strings.Join(texts, "; "))
}

// wrongType explains the first value whose TOML type does not fit its
// field, or returns nil when none is found (the decoder's own error then
// stands).
func wrongType(data string) error {
	var values map[string]any
	meta, err := toml.Decode(data, &values)
	if err != nil {
		return nil
	}
	for _, key := range meta.Keys() {
		field, ok := fieldAt(key)
		if !ok {
			continue
		}
		given := meta.Type(key...)
		if want := wanted(field); want != "" && !fits(field.Type, given) {
			text := fmt.Sprintf("%s wants %s, not %s", key, want, article(given))
			if line := lineOf(data, key); line > 0 {
				text = fmt.Sprintf("line %d: %s", line, text)
			}
			return errors.New(text)
		}
	}
	return nil
}

// fieldAt is the struct field key decodes into, when the key's last part
// names one.
func fieldAt(key toml.Key) (reflect.StructField, bool) {
	t := deref(typeAt(key[:len(key)-1]))
	if t == nil || t.Kind() != reflect.Struct {
		return reflect.StructField{}, false
	}
	for i := range t.NumField() {
		if f := t.Field(i); tomlName(f) == key[len(key)-1] {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// typeAt is the Go type the table at key decodes into (nil when File has
// none): a struct's field by its tag, a map's or a slice's element.
func typeAt(key toml.Key) reflect.Type {
	t := reflect.TypeOf(File{})
	for _, part := range key {
		switch t = deref(t); t.Kind() {
		case reflect.Struct:
			var next reflect.Type
			for i := range t.NumField() {
				if f := t.Field(i); tomlName(f) == part {
					next = f.Type
				}
			}
			if next == nil {
				return nil
			}
			t = next
		case reflect.Map:
			t = t.Elem()
		default:
			return nil
		}
		if t.Kind() == reflect.Slice {
			t = t.Elem()
		}
	}
	return t
}

func deref(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// fieldNames are the keys a table of type t takes.
func fieldNames(t reflect.Type) []string {
	t = deref(t)
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var names []string
	for i := range t.NumField() {
		if name := tomlName(t.Field(i)); name != "" {
			names = append(names, name)
		}
	}
	return names
}

func tomlName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
	if name == "-" {
		return ""
	}
	return name
}

// wanted says what a field takes, for a person; "" for a field that takes
// more than one shape (it explains itself).
func wanted(f reflect.StructField) string {
	t := deref(f.Type)
	if reflect.PointerTo(t).Implements(reflect.TypeFor[toml.Unmarshaler]()) {
		return ""
	}
	switch t.Kind() {
	case reflect.String:
		if f.Tag.Get("kind") == "duration" {
			return `a duration string such as "5s"`
		}
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "a table"
	}
	return ""
}

// fits reports whether a value of TOML type given decodes into t.
func fits(t reflect.Type, given string) bool {
	switch deref(t).Kind() {
	case reflect.String:
		return given == "String"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return given == "Integer"
	case reflect.Float32, reflect.Float64:
		return given == "Float" || given == "Integer"
	case reflect.Bool:
		return given == "Bool"
	case reflect.Slice:
		return given == "Array" || given == "ArrayHash"
	case reflect.Struct, reflect.Map:
		return given == "Hash"
	}
	return true
}

// article names a TOML type for a person.
func article(tomlType string) string {
	switch tomlType {
	case "Integer":
		return "a whole number"
	case "Float":
		return "a number with a fraction"
	case "String":
		return "a string"
	case "Bool":
		return "true or false"
	case "Array", "ArrayHash":
		return "an array"
	case "Hash":
		return "a table"
	}
	return "a " + strings.ToLower(tomlType)
}

// keyMarker fails to decode, so that the decoder's error names the
// position of the key it is placed at.
type keyMarker struct{}

var errMarked = errors.New("toolscript: the key looked for")

func (keyMarker) UnmarshalTOML(any) error { return errMarked }

// lineOf is the line key is defined at in data, 0 when it cannot be told:
// data is decoded into a type that holds a keyMarker at key, whose error
// carries the key's position.
func lineOf(data string, key toml.Key) int {
	t := reflect.TypeFor[keyMarker]()
	for i := len(key) - 1; i >= 0; i-- {
		if strings.ContainsAny(key[i], "\",`") {
			return 0
		}
		t = reflect.StructOf([]reflect.StructField{{Name: "K", Type: t, Tag: reflect.StructTag(`toml:"` + key[i] + `"`)}})
	}
	_, err := toml.Decode(data, reflect.New(t).Interface())
	var pe toml.ParseError
	if errors.As(err, &pe) && pe.Message == errMarked.Error() {
		return pe.Position.Line
	}
	return 0
}
