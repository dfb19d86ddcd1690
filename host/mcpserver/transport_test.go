package mcpserver

import (
	"encoding/json"
	"fmt"
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
	cancel := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"r-7","reason":"no"}}`
	input := `{"id":1}` + "\n" + long + "\n" + `{"method":"n","params":"` + strings.Repeat("y", 100000) + `"}` + "\n\n" + cancel + "\n" + `{"id":2}`
	var cancelled []string
	r := newRequestReader(strings.NewReader(input), 1000, func(id json.RawMessage, isRequest bool) {
		refused = append(refused, refusal{string(id), isRequest})
	}, func(id json.RawMessage) { cancelled = append(cancelled, string(id)) })
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	// The long lines are dropped, the last line gets its newline.
	if want := "{\"id\":1}\n\n" + cancel + "\n{\"id\":2}\n"; string(out) != want {
		t.Errorf("passed %q, want %q", out, want)
	}
	if len(refused) != 2 || refused[0] != (refusal{"99", true}) || refused[1] != (refusal{"", false}) {
		t.Errorf("refused %+v", refused)
	}
	if len(cancelled) != 1 || cancelled[0] != `"r-7"` {
		t.Errorf("cancelled %q", cancelled)
	}
}

func TestLineWriterDropsCancelledResponses(t *testing.T) {
	var out strings.Builder
	w := &lineWriter{w: &out}
	w.cancel(json.RawMessage(`3`))
	w.cancel(json.RawMessage(`"s"`))
	w.cancel(json.RawMessage(`{"not":"an id"}`))
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":3}}`,
		`{"jsonrpc":"2.0","id":3,"result":{}}`,  // dropped
		`{"jsonrpc":"2.0","id":"s","error":{}}`, // dropped
		`{"jsonrpc":"2.0","id":3,"result":{"again":true}}`,
	} {
		if n, err := w.Write([]byte(msg + "\n")); err != nil || n != len(msg)+1 {
			t.Fatalf("Write: %d %v", n, err)
		}
	}
	want := `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":3}}` + "\n" +
		`{"jsonrpc":"2.0","id":3,"result":{"again":true}}` + "\n"
	if out.String() != want {
		t.Errorf("wrote\n%s\nwant\n%s", out.String(), want)
	}
	for i := range maxCancelled + 10 {
		w.cancel(json.RawMessage(fmt.Sprint(1000 + i)))
	}
	if len(w.cancelled) > maxCancelled {
		t.Errorf("%d cancelled ids kept", len(w.cancelled))
	}
}
