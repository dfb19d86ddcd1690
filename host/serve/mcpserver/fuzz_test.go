package mcpserver

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// FuzzOutOfRange checks outOfRange against a full decoding: it finds the
// number encoding/json cannot hold in a float64, and nothing in JSON that
// decodes.
func FuzzOutOfRange(f *testing.F) {
	for _, seed := range []string{
		`{"a":1e400}`, `[1,2,-1e999]`, `{"s":"1e400","n":1e308}`, `{"\"":"\\"}`, `0.5e-400`,
		`{"big":` + strings.Repeat("9", 400) + `}`, `{"a":[1,{"b":1E+309}]}`, `-`, `1e`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		var x any
		err := json.Unmarshal(v, &x)
		number, found := outOfRange(v)
		tooLarge, isRange := outOfRangeError(err)
		switch {
		case err == nil && found:
			t.Errorf("%s decodes, yet %s was found out of range", v, number)
		case isRange && (!found || "number "+number != tooLarge):
			t.Errorf("%s: found %q %v, decoding says %q", v, number, found, tooLarge)
		}
	})
}

// FuzzReceive checks that the core never panics on a line and that what
// it writes is JSON.
func FuzzReceive(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_script","arguments":{"script":"return 1","timeout_ms":1e400}}}`,
		`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"toolscript://x"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"x","params":[1e999]}`,
		"\n", `[`, `{"method":5}`, `{"jsonrpc":"2.0","id":4,"error":{}}`,
	} {
		f.Add([]byte(seed))
	}
	s, w, out := testStdio(f, Config{})
	f.Fuzz(func(t *testing.T, line []byte) {
		if c := handle(s, w, string(line)); c != nil {
			s.run(c)
		}
		for _, l := range out.Lines() {
			if !json.Valid([]byte(l)) {
				t.Errorf("%s: wrote %s", line, l)
			}
		}
		out.Reset()
	})
}

// outOfRangeError tells whether err, from decoding JSON, is a number out of
// float64's range, and returns its value ("number 1e400").
func outOfRangeError(err error) (string, bool) {
	var tooLarge *json.UnmarshalTypeError
	if errors.As(err, &tooLarge) && strings.HasPrefix(tooLarge.Value, "number ") {
		return tooLarge.Value, true
	}
	return "", false
}
