package sdk

import (
	"encoding/json"
	"testing"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/sdk/sdkargs"
)

// TestQuickCheck: the quick checks accept the common valid scalars, and
// leave to the validator everything they cannot be sure of.
func TestQuickCheck(t *testing.T) {
	raw := func(list ...string) []json.RawMessage {
		out := make([]json.RawMessage, len(list))
		for i, s := range list {
			out[i] = json.RawMessage(s)
		}
		return out
	}
	integer := &catalog.Schema{Type: []string{"integer"}, Format: "int32"}
	status := &catalog.Schema{Type: []string{"string", "null"}, Enum: raw(`"available"`, `"sold"`)}
	api := &catalog.API{Schemas: map[string]*catalog.Schema{"Status": status}}
	for _, tc := range []struct {
		name   string
		schema *catalog.Schema
		value  any
		want   bool
	}{
		{"integer", integer, json.Number("7"), true},
		{"negative integer", integer, json.Number("-7"), true},
		{"integer as float text", integer, json.Number("7.0"), false},
		{"fraction", integer, json.Number("7.5"), false},
		{"int32 overflow", integer, json.Number("2147483648"), false},
		{"string for integer", integer, "7", false},
		{"table for integer", integer, map[string]any{}, false},
		{"enum value by $ref", &catalog.Schema{Ref: "Status"}, "sold", true},
		{"not in the enum", &catalog.Schema{Ref: "Status"}, "lost", false},
		{"nullable enum takes null", &catalog.Schema{Ref: "Status"}, nil, true},
		{"uuid left to the validator", &catalog.Schema{Type: []string{"string"}, Format: "uuid"}, "x", false},
		{"unchecked format", &catalog.Schema{Type: []string{"string"}, Format: "uri"}, "x", true},
		{"any type", &catalog.Schema{}, true, true},
		{"number takes a fraction", &catalog.Schema{Type: []string{"number"}}, json.Number("2.5e3"), true},
		{"boolean", &catalog.Schema{Type: []string{"boolean"}}, false, true},
		{"boolean enum", &catalog.Schema{Type: []string{"boolean"}, Enum: raw(`true`)}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := newQuickCheck(api, tc.schema).accepts(tc.value); got != tc.want {
				t.Fatalf("accepts(%#v) = %v, want %v", tc.value, got, tc.want)
			}
			if tc.want {
				if err := newChecker(api, tc.schema).check(tc.value, sdkargs.Place{Value: "value"}); err != nil {
					t.Fatalf("the validator refuses what the quick check accepts: %v", err)
				}
			}
		})
	}
	for _, s := range []*catalog.Schema{
		{Type: []string{"object"}, Properties: []*catalog.Property{{Name: "a", Schema: integer}}},
		{AnyOf: []*catalog.Schema{integer}},
		{Const: json.RawMessage(`1`)},
		{Ref: "Missing"},
	} {
		if q := newQuickCheck(api, s); q != nil {
			t.Errorf("%+v: a quick check for a schema that is more than a scalar's", s)
		}
	}
}
