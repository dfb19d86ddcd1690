package sdk

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/contract/catalog"
)

func TestSynthesise(t *testing.T) {
	num := func(f float64) *float64 { return &f }
	count := func(n int64) *int64 { return &n }
	api := &catalog.API{Schemas: map[string]*catalog.Schema{
		// A tree whose nodes require their children: only the depth cap
		// ends it.
		"Node": {Type: []string{"object"}, Required: []string{"child"}, Properties: []*catalog.Property{
			{Name: "child", Schema: &catalog.Schema{Ref: "Node"}},
		}},
		"Loop": {Ref: "Loop"},
		"Base": {Type: []string{"object"}, Required: []string{"id"}, Properties: []*catalog.Property{{Name: "id", Schema: &catalog.Schema{Type: []string{"integer"}, Minimum: num(1)}}}},
	}}
	tests := []struct {
		name   string
		schema *catalog.Schema
		want   string
	}{
		{"nil", nil, "null"},
		{"string", &catalog.Schema{Type: []string{"string"}}, `""`},
		{"nullable string", &catalog.Schema{Type: []string{"null", "string"}}, `""`},
		{"date-time", &catalog.Schema{Type: []string{"string"}, Format: "date-time"}, `"1970-01-01T00:00:00Z"`},
		{"uuid", &catalog.Schema{Type: []string{"string"}, Format: "uuid"}, `"00000000-0000-0000-0000-000000000000"`},
		{"email", &catalog.Schema{Type: []string{"string"}, Format: "email"}, `"user@example.com"`},
		{"minLength", &catalog.Schema{Type: []string{"string"}, MinLength: count(3)}, `"aaa"`},
		{"int32", &catalog.Schema{Type: []string{"integer"}, Format: "int32"}, `0`},
		{"minimum", &catalog.Schema{Type: []string{"integer"}, Minimum: num(2.5)}, `3`},
		{"maximum", &catalog.Schema{Type: []string{"number"}, Maximum: num(-1.5)}, `-1.5`},
		{"boolean", &catalog.Schema{Type: []string{"boolean"}}, `false`},
		{"enum", &catalog.Schema{Type: []string{"string"}, Enum: []json.RawMessage{[]byte(`"b"`), []byte(`"a"`)}}, `"b"`},
		{"const", &catalog.Schema{Const: []byte(`{"k": 1}`)}, `{"k":1}`},
		{"array", &catalog.Schema{Type: []string{"array"}, Items: &catalog.Schema{Type: []string{"integer"}}, MinItems: count(2)}, `[0,0]`},
		{"huge minItems", &catalog.Schema{Type: []string{"array"}, MinItems: count(1 << 40)}, `[null,null,null,null,null,null,null,null]`},
		{"object", &catalog.Schema{Type: []string{"object"}, Required: []string{"b", "extra", "a"}, AdditionalProperties: &catalog.Schema{Type: []string{"string"}},
			Properties: []*catalog.Property{{Name: "a", Schema: &catalog.Schema{Type: []string{"string"}}}, {Name: "b", Schema: &catalog.Schema{Type: []string{"integer"}}}, {Name: "c"}}}, `{"a":"","b":0,"extra":""}`},
		{"allOf", &catalog.Schema{AllOf: []*catalog.Schema{{Ref: "Base"}, {Required: []string{"name"}, Properties: []*catalog.Property{{Name: "name", Schema: &catalog.Schema{Type: []string{"string"}}}}}}}, `{"id":1,"name":""}`},
		{"oneOf", &catalog.Schema{OneOf: []*catalog.Schema{{Type: []string{"integer"}}, {Type: []string{"string"}}}}, `0`},
		{"recursive", &catalog.Schema{Ref: "Node"}, `{"child":{"child":{"child":{"child":{"child":{"child":{"child":{"child":{"child":{"child":{"child":{"child":{"child":null}}}}}}}}}}}}}`},
		{"ref loop", &catalog.Schema{Ref: "Loop"}, `null`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(synthesise(api, tt.schema)); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

// FuzzSynthesise builds random schemas (refs, recursion, allOf, oneOf,
// enums, bounds) from the fuzzer's bytes: the synthesiser always ends, with
// valid JSON of bounded size, and a value valid against the schema when
// the schema is one whose every keyword it honours and no bound cut the
// value short.
func FuzzSynthesise(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8})
	f.Add([]byte{7, 7, 7, 7, 7, 7, 0, 1, 2, 3})
	f.Add([]byte(strings.Repeat("\x05\x00", 40)))
	f.Fuzz(func(t *testing.T, data []byte) {
		b := &schemaBuilder{data: data, api: &catalog.API{Schemas: map[string]*catalog.Schema{}}}
		for i := range 3 {
			b.api.Schemas[fmt.Sprint("S", i)] = b.schema(0)
		}
		root := b.schema(0)
		out, cut := synthesiseBounded(b.api, root)
		if !json.Valid(out) {
			t.Fatalf("not JSON: %s", out)
		}
		if len(out) > 1<<20 {
			t.Fatalf("%d bytes", len(out))
		}
		if b.loose || cut {
			return
		}
		c := newChecker(b.api, root)
		v, _ := decodeForCheck(out)
		if c != nil {
			if err := c.check(v, bodyPlace); err != nil {
				js, _ := json.Marshal(root)
				t.Fatalf("%s is not valid against %s: %v", out, js, err)
			}
		}
	})
}

// schemaBuilder makes a schema of the fuzzer's bytes. loose is set
// when it used a keyword the synthesiser may not satisfy (a ref cycle that
// requires itself, allOf of conflicting types, oneOf): the value is then
// only checked to be JSON.
type schemaBuilder struct {
	data  []byte
	api   *catalog.API
	loose bool
}

func (b *schemaBuilder) next() int {
	if len(b.data) == 0 {
		return 0
	}
	v := int(b.data[0])
	b.data = b.data[1:]
	return v
}

func (b *schemaBuilder) schema(depth int) *catalog.Schema {
	if depth > 6 {
		return &catalog.Schema{Type: []string{"string"}}
	}
	num := func(f float64) *float64 { return &f }
	switch b.next() % 10 {
	case 0:
		return &catalog.Schema{Type: []string{"string"}, Format: []string{"", "date-time", "uuid", "email", "date", "ipv4", "int32"}[b.next()%7]}
	case 1:
		return &catalog.Schema{Type: []string{"integer"}, Minimum: num(float64(b.next() - 100))}
	case 2:
		return &catalog.Schema{Type: []string{"boolean", "null"}}
	case 3:
		n := int64(b.next() % 4)
		return &catalog.Schema{Type: []string{"array"}, Items: b.schema(depth + 1), MinItems: &n}
	case 4:
		s := &catalog.Schema{Type: []string{"object"}}
		for i := range b.next() % 4 {
			name := fmt.Sprint("p", i)
			s.Properties = append(s.Properties, &catalog.Property{Name: name, Schema: b.schema(depth + 1)})
			if b.next()%2 == 0 {
				s.Required = append(s.Required, name)
			}
		}
		return s
	case 5:
		b.loose = true // a ref may require itself
		return &catalog.Schema{Ref: fmt.Sprint("S", b.next()%4)}
	case 6:
		b.loose = true
		return &catalog.Schema{AllOf: []*catalog.Schema{b.schema(depth + 1), b.schema(depth + 1)}}
	case 7:
		b.loose = true
		return &catalog.Schema{OneOf: []*catalog.Schema{b.schema(depth + 1), b.schema(depth + 1)}}
	case 8:
		return &catalog.Schema{Type: []string{"string"}, Enum: []json.RawMessage{json.RawMessage(fmt.Sprintf(`"e%d"`, b.next()))}}
	}
	return &catalog.Schema{}
}
