package sdkargs

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestDescribe: one validation error is worded as each kind of function
// names its arguments: an OpenAPI operation's parameters and body, an MCP
// tool's one table of arguments.
func TestDescribe(t *testing.T) {
	schema := `{"type":"object","required":["path"],"additionalProperties":false,
		"properties":{"path":{"type":"string"},"items":{"type":"array","items":{"type":"object","required":["name"],
		"properties":{"name":{"type":"string"},"n":{"anyOf":[{"type":"integer"},{"type":"null"}]}}}}}}`
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("test:///s.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("test:///s.json")
	if err != nil {
		t.Fatal(err)
	}
	params := Place{Member: "parameter"}
	body := Place{Value: "body"}
	tool := Place{Value: "arguments", Member: "argument", RootMember: true}
	for _, tc := range []struct {
		value string
		at    Place
		want  string
	}{
		{`{"path":"x","items":[{"name":"a"},{"name":1}]}`, params, "parameter 'items'[1].name: got number, want string"},
		{`{"path":"x","items":[{"name":"a"},{"name":1}]}`, body, "body.items[1].name: got number, want string"},
		{`{"path":"x","items":[{"name":"a"},{"name":1}]}`, tool, "argument 'items'[1].name: got number, want string"},
		{`{"path":"x","items":[{}]}`, body, "body.items[0]: missing required property 'name'"},
		{`{"path":"x","items":[{}]}`, tool, "argument 'items'[0]: missing required property 'name'"},
		{`{}`, params, "missing required property 'path'"},
		{`{}`, body, "body: missing required property 'path'"},
		{`{}`, tool, "missing required argument 'path'"},
		{`{"path":"x","extra":1}`, body, "body: unknown property 'extra'"},
		{`{"path":"x","extra":1}`, tool, "unknown argument 'extra'"},
		{`{"path":"x","items":[{"name":"a","n":"1"}]}`, tool, "argument 'items'[0].n: matches none of the allowed types (argument 'items'[0].n: got string, want integer)"},
		{`[]`, params, "got array, want object"},
		{`[]`, tool, "arguments: got array, want object"},
	} {
		v, err := Parse([]byte(tc.value))
		if err != nil {
			t.Fatal(err)
		}
		var ve *jsonschema.ValidationError
		if err := s.Validate(v); !errors.As(err, &ve) {
			t.Fatalf("%s: no validation error: %v", tc.value, err)
		}
		if got := Describe(ve, tc.at); got != tc.want {
			t.Errorf("%s at %+v:\n got %q\nwant %q", tc.value, tc.at, got, tc.want)
		}
	}
}

// TestList: the argument list, its trailing nils dropped; invalid UTF-8
// kept or replaced; errors in the reference decoder's words.
func TestList(t *testing.T) {
	for _, tc := range []struct {
		raw       string
		keepBytes bool
		want      string // the list as JSON (%q for strings)
		err       string
	}{
		{``, false, `null`, ""},
		{` [1, null, {"a":[]}, null, null] `, false, `[1,null,{"a":[]}]`, ""},
		{`[null]`, true, `[]`, ""},
		{"[\"a\xffb\"]", true, "[\"a\\ufffdb\"]", ""}, // json.Marshal shows a kept byte as U+FFFD
		{`{"a":1}`, false, ``, "arguments must be a list"},
		{`[1,]`, false, ``, "arguments are not valid JSON: invalid character ']' looking for beginning of value"},
	} {
		got, err := List(json.RawMessage(tc.raw), tc.keepBytes)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%q: error %v, want %q", tc.raw, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tc.raw, err)
		}
		if out, _ := json.Marshal(got); string(out) != tc.want {
			t.Errorf("%q: %s, want %s", tc.raw, out, tc.want)
		}
	}
	// keepBytes decides whether an invalid byte reaches the caller.
	kept, _ := List(json.RawMessage("[\"a\xffb\"]"), true)
	replaced, _ := List(json.RawMessage("[\"a\xffb\"]"), false)
	if kept[0] != "a\xffb" || replaced[0] != "a\uFFFDb" {
		t.Errorf("kept %q, replaced %q", kept[0], replaced[0])
	}
}

func TestTypeName(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{nil, "nil"}, {"x", "a string"}, {true, "a boolean"}, {json.Number("1"), "a number"},
		{1.5, "a number"}, {[]any{}, "a list"}, {map[string]any{}, "a table"},
	} {
		if got := TypeName(tc.v); got != tc.want {
			t.Errorf("TypeName(%#v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}
