package sdkargs

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// FuzzParse: the arguments' decoder reads every input exactly as the
// reference decoder (jsonschema.UnmarshalJSON: encoding/json with
// UseNumber) does: the same values, and an error for the same inputs.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`[{"petId":7}]`, `[null,{"a":[1,2.5e-3,-0,true,false,null]}]`, `[]`, `{}`, `"x"`, ` 1 `,
		`["\u00e9\ud83d\ude00\ud800\udc00x\ud800\u0041\udc00\"\\\/\b\f\n\r\t"]`,
		"[\"\xff\xfe\xef\xbf\xbd\"]", `{"a":1,"a":2}`, `[1,]`, `[01]`, `[1.]`, `[.5]`, `[1e]`, `-`,
		"[\"a\x01\"]", `[1] 2`, `[1] x`, `{"a" 1}`, `{1:2}`, `tru`, `nul`, `[` + strings.Repeat("[", 40) + `]`,
		`["\u12"]`, `["\x"]`, `["abc`, `[1e+5,1E-5]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := Parse(data)
		want, wantErr := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%q: error %v, the reference decoder's %v", data, err, wantErr)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: %#v, the reference decoder gives %#v", data, got, want)
		}
		// The arguments' decoder differs only in keeping invalid bytes.
		kept, err := parseArgs(data)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%q: parseArgs error %v, the reference decoder's %v", data, err, wantErr)
		}
		if err == nil && !reflect.DeepEqual(replaceInvalid(kept), want) {
			t.Fatalf("%q: parseArgs %#v, the reference decoder gives %#v", data, kept, want)
		}
	})
}

// replaceInvalid is v with each byte of its strings that is not valid
// UTF-8 replaced by U+FFFD, as encoding/json decodes them.
func replaceInvalid(v any) any {
	text := func(s string) string {
		var b strings.Builder
		for i := 0; i < len(s); {
			r, size := utf8.DecodeRuneInString(s[i:])
			b.WriteRune(r) // U+FFFD for an invalid byte
			if r == utf8.RuneError && size == 1 {
				i++
				continue
			}
			i += size
		}
		return b.String()
	}
	switch x := v.(type) {
	case string:
		return text(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = replaceInvalid(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[text(k)] = replaceInvalid(e)
		}
		return out
	}
	return v
}
