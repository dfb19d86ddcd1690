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

// recordingHandler is a lineHandler that records what it sees.
type recordingHandler struct {
	admitted []string
	refused  []refusal
	drained  int
}

type refusal struct {
	id        string
	isRequest bool
}

func (h *recordingHandler) admit(line []byte) []byte {
	h.admitted = append(h.admitted, string(line))
	if strings.Contains(string(line), "keep me") {
		return nil
	}
	return line
}

func (h *recordingHandler) refuse(id json.RawMessage, isRequest bool) {
	h.refused = append(h.refused, refusal{string(id), isRequest})
}

func (h *recordingHandler) drain() { h.drained++ }

func TestRequestReader(t *testing.T) {
	long := `{"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"script":"` + strings.Repeat("x", 200000) + `"}},"id":99}`
	cancel := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"r-7","reason":"no"}}`
	input := `{"id":1}` + "\n" + long + "\n" + `{"method":"n","params":"` + strings.Repeat("y", 100000) + `"}` + "\n\n" +
		cancel + "\n" + `{"id":"keep me"}` + "\n" + `{"id":2}`
	h := &recordingHandler{}
	r := newRequestReader(strings.NewReader(input), 1000, h)
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	// The long lines are refused, the handler keeps one, the last line
	// gets its newline.
	if want := "{\"id\":1}\n\n" + cancel + "\n{\"id\":2}\n"; string(out) != want {
		t.Errorf("passed %q, want %q", out, want)
	}
	if len(h.refused) != 2 || h.refused[0] != (refusal{"99", true}) || h.refused[1] != (refusal{"", false}) {
		t.Errorf("refused %+v", h.refused)
	}
	if len(h.admitted) != 5 {
		t.Errorf("admitted %q", h.admitted)
	}
	// The end of input is drained once, before mcp-go sees it.
	if h.drained != 1 {
		t.Errorf("drained %d times", h.drained)
	}
	if n, err := r.Read(make([]byte, 10)); n != 0 || err != io.EOF || h.drained != 1 {
		t.Errorf("after the end: %d %v, drained %d times", n, err, h.drained)
	}
}

func TestResponseID(t *testing.T) {
	cases := []struct {
		msg string
		id  string // "" for not a response
	}{
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, "1"},
		{`{"jsonrpc":"2.0","id":"a","error":{"code":-1,"message":"x"}}`, `"a"`},
		{`{"jsonrpc":"2.0","result":{"big":[1,2,3]},"id":7}`, "7"}, // the id after the result
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`, "null"},
		{`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":3}}`, ""},
		{`{"jsonrpc":"2.0","id":5,"method":"sampling/createMessage","params":{}}`, ""}, // a request of the server
		{`{"jsonrpc":"2.0","id":5}`, ""},
		{`not json`, ""},
		{`[{"id":1,"result":{}}]`, ""},
	}
	for _, c := range cases {
		id, ok := responseID([]byte(c.msg + "\n"))
		if c.id == "" && ok || c.id != "" && (!ok || string(id) != c.id) {
			t.Errorf("%s: %q %v, want %q", c.msg, id, ok, c.id)
		}
	}
}

func TestIDKey(t *testing.T) {
	for raw, want := range map[string]string{
		`1`: "1", `1.0`: "1", `1e3`: "1000", `-2`: "-2", `"1"`: `"1"`, `"a\u0062"`: `"ab"`,
		`null`: "", `true`: "", `{}`: "", `[1]`: "", `1e400`: "", ``: "",
	} {
		if got := idKey(json.RawMessage(raw)); got != want {
			t.Errorf("idKey(%s) = %q, want %q", raw, got, want)
		}
	}
}
