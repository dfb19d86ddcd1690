package mcpserver

import (
	"encoding/json"
	"testing"
)

// FuzzResponseID checks responseID against a full decoding: whatever it
// calls a response has an id and a result or an error. (It stops reading
// there: a method after them, which no message the server writes has, is
// not seen.)
func FuzzResponseID(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"result":[1,{"id":2}],"id":"x"}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":3}}`,
		`{"id":1,"error":{"code":1},"method":"m"}`,
		`{"id":[1],"result":null}`,
		`[]`, `{`, `"id"`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		id, ok := responseID(msg)
		if !ok {
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(msg, &m); err != nil {
			// responseID stops reading early: the rest may be malformed.
			return
		}
		_, hasResult := m["result"]
		_, hasError := m["error"]
		if _, hasID := m["id"]; !hasID || !(hasResult || hasError) {
			t.Errorf("%s: taken for a response with id %s", msg, id)
		}
	})
}

// FuzzAdmit checks that admit never panics and passes mcp-go either the
// line as it was or a rewritten request that mcp-go can decode.
func FuzzAdmit(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_script","arguments":{"script":"return 1","timeout_ms":1e400}}}`,
		`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"toolscript://x"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"x","params":[1e999]}`,
		"\n", `[`, `{"method":5}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		s, _ := testTransport()
		got := s.admit(append([]byte(nil), line...))
		if got == nil || string(got) == string(line) {
			return
		}
		var v any
		if err := json.Unmarshal(got, &v); err != nil {
			t.Errorf("%s was rewritten into %s, which does not decode: %v", line, got, err)
		}
	})
}
