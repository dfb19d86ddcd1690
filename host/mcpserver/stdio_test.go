package mcpserver

import (
	"strings"
	"testing"
)

func TestIDFinder(t *testing.T) {
	cases := []struct {
		msg       string
		id        string // "" for none
		isRequest bool
	}{
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}}`, "7", true},
		{`{"method":"tools/call","params":{"id":1,"arguments":{"script":"x"}},"jsonrpc":"2.0","id":"abc"}`, `"abc"`, true},
		{`{"params":{"s":"a \"quoted\" \\ string with \"id\": 5"},"id":-3}`, "-3", true},
		{` { "id" : "with \"escapes\"" , "method":"x"}`, `"with \"escapes\""`, true},
		{`{"params":[{"id":1}],"method":"notifications/x"}`, "", false},
		{`{"id":{"nested":1},"method":"x"}`, "", true},
		{`{"id":null}`, "", true},
		{`{"identity":1,"id":2}`, "2", true},
		{`[1,2,3]`, "", true},
		{`garbage`, "", true},
		{`{"id":"` + strings.Repeat("z", 300) + `"}`, "", true},
		{`{"jsonrpc":"2.0","id":12,"params":{"script":"` + strings.Repeat("y", 100) + ``, "12", true}, // cut short
	}
	for _, c := range cases {
		var f idFinder
		// Feed in small pieces, as the reader does.
		for i := 0; i < len(c.msg); i += 5 {
			f.write([]byte(c.msg[i:min(i+5, len(c.msg))]))
		}
		id, isRequest := f.result()
		if string(id) != c.id || isRequest != c.isRequest {
			t.Errorf("%.60s: id %q request %v, want %q %v", c.msg, id, isRequest, c.id, c.isRequest)
		}
	}
}
