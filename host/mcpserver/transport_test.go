package mcpserver

import (
	"encoding/json"
	"io"
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

func TestRequestReader(t *testing.T) {
	type refusal struct {
		id        string
		isRequest bool
	}
	var refused []refusal
	long := `{"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"script":"` + strings.Repeat("x", 200000) + `"}},"id":99}`
	input := `{"id":1}` + "\n" + long + "\n" + `{"method":"n","params":"` + strings.Repeat("y", 100000) + `"}` + "\n\n" + `{"id":2}`
	r := newRequestReader(strings.NewReader(input), 1000, func(id json.RawMessage, isRequest bool) {
		refused = append(refused, refusal{string(id), isRequest})
	})
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	// The long lines are dropped, the last line gets its newline.
	if want := "{\"id\":1}\n\n{\"id\":2}\n"; string(out) != want {
		t.Errorf("passed %q, want %q", out, want)
	}
	if len(refused) != 2 || refused[0] != (refusal{"99", true}) || refused[1] != (refusal{"", false}) {
		t.Errorf("refused %+v", refused)
	}
}
