package learned_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/sdk/learned"
)

// render writes a learned schema compactly, for the tests: types joined
// by |, objects' keys with ? when optional, arrays as [items].
func render(s *catalog.Schema) string {
	if s == nil {
		return "any"
	}
	var alts []string
	for _, ty := range s.Type {
		switch ty {
		case "object":
			if len(s.Properties) == 0 {
				alts = append(alts, "map")
				continue
			}
			var fields []string
			for _, p := range s.Properties {
				opt := "?"
				for _, r := range s.Required {
					if r == p.Name {
						opt = ""
					}
				}
				fields = append(fields, p.Name+opt+":"+render(p.Schema))
			}
			alts = append(alts, "{"+strings.Join(fields, ",")+"}")
		case "array":
			alts = append(alts, "["+render(s.Items)+"]")
		default:
			alts = append(alts, ty)
		}
	}
	return strings.Join(alts, "|")
}

func TestLearn(t *testing.T) {
	deep := strings.Repeat(`{"a":`, learned.MaxDepth+3) + "1" + strings.Repeat("}", learned.MaxDepth+3)
	var wide strings.Builder
	wide.WriteString("{")
	for i := range learned.MaxKeys + 1 {
		if i > 0 {
			wide.WriteString(",")
		}
		wide.WriteString(`"k` + strings.Repeat("x", i) + `":1`)
	}
	wide.WriteString("}")
	tests := []struct {
		name   string
		values []string
		want   string
	}{
		{"nothing", nil, "any"},
		{"a primitive", []string{`1`, `2.5`}, "number"},
		{"an object", []string{`{"id": 1, "name": "a"}`}, "{id:number,name:string}"},
		{"a key in some results is optional", []string{`{"id": 1, "tag": "x"}`, `{"id": 2}`}, "{id:number,tag?:string}"},
		{"a key given twice counts once", []string{`{"id": 1, "id": 2}`, `{"x": 1}`}, "{id?:number,x?:number}"},
		{"a union", []string{`"a"`, `1`, `null`}, "string|number|null"},
		{"too wide a union", []string{`"a"`, `1`, `true`, `[]`}, "any"},
		{"arrays", []string{`[{"a": 1}, {"a": "x", "b": null}]`, `[]`}, "[{a:string|number,b?:null}]"},
		{"an empty array", []string{`[]`}, "[any]"},
		{"too deep", []string{deep}, strings.Repeat("{a:", learned.MaxDepth+1) + "any" + strings.Repeat("}", learned.MaxDepth+1)},
		{"too many keys", []string{wide.String()}, "map"},
		{"keys that are data", []string{`{"1234": 1}`, `{"a b": 2}`}, "map"},
		{"not JSON is left out", []string{`{"a": 1}`, `{"a": `}, "{a:number}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var values [][]byte
			for _, v := range tt.values {
				values = append(values, []byte(v))
			}
			if got := render(learned.Learn(values)); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

// checkLearned fails unless s is a learned type as promised: types,
// properties whose names are names, required and items only, at most
// MaxNodes parts, at most MaxDepth deep, no value of any kind.
func checkLearned(t *testing.T, s *catalog.Schema) {
	t.Helper()
	nodes := 0
	var walk func(s *catalog.Schema, depth int)
	walk = func(s *catalog.Schema, depth int) {
		if s == nil {
			return
		}
		nodes++
		if depth > learned.MaxDepth+1 {
			t.Fatalf("%d deep", depth)
		}
		if len(s.Enum) > 0 || len(s.Const) > 0 || len(s.Default) > 0 || s.Description != "" || s.Format != "" || s.Ref != "" {
			t.Fatalf("a learned type holds more than types: %+v", s)
		}
		if len(s.Type) == 0 || len(s.Type) > learned.MaxUnion+1 {
			t.Fatalf("types %v", s.Type)
		}
		for _, p := range s.Properties {
			if !learned.IsName(p.Name) {
				t.Fatalf("key %q is not a name", p.Name)
			}
			walk(p.Schema, depth+1)
		}
		if len(s.Properties) > learned.MaxKeys {
			t.Fatalf("%d keys", len(s.Properties))
		}
		walk(s.Items, depth+1)
	}
	walk(s, 0)
	if nodes > learned.MaxNodes {
		t.Fatalf("%d parts, more than %d", nodes, learned.MaxNodes)
	}
}

// FuzzLearn: learning never panics and its type is always a valid, bounded
// learned type, whatever the values (JSON or not).
func FuzzLearn(f *testing.F) {
	for _, s := range []string{`{"a": 1}` + "\n" + `{"b": [1, "x"]}`, `[[[[[[[[[[[]]]]]]]]]]]`, `{"a": {"a": {"a": null}}}`, `"x"` + "\n" + `1` + "\n" + `{}`, "{\"\\u00e9\": 1}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		values := bytes.Split(data, []byte("\n"))
		s := learned.Learn(values)
		checkLearned(t, s)
		if _, err := json.Marshal(s); err != nil {
			t.Fatal(err)
		}
	})
}

// A large hostile value is bounded: many keys at many places, deep and
// wide, give at most MaxNodes parts.
func TestLearnBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("[")
	for i := range 2000 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"a` + strings.Repeat("b", i%40) + `": {"c` + strings.Repeat("d", i%30) + `": [{"e": 1}]}}`)
	}
	b.WriteString("]")
	s := learned.Learn([][]byte{[]byte(b.String()), []byte(strings.Repeat("[", 5000) + strings.Repeat("]", 5000))})
	checkLearned(t, s)
}
