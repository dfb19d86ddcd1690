package mcpserver

import (
	"encoding/json"
	"testing"
)

// FuzzJSONStringBytes: jsonStringBytes is the length encoding/json gives
// a string, without its quotes.
func FuzzJSONStringBytes(f *testing.F) {
	for _, s := range []string{"", "plain", `{"a":"<b>&\"c\\"}`, "\n\t\x00\x1f", "\u2028\u2029é", "\xff\xfe", "a\xe2\x82"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := jsonStringBytes(s), int64(len(b)-2); got != want {
			t.Errorf("jsonStringBytes(%q) = %d, want %d", s, got, want)
		}
	})
}
