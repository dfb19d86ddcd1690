package mcpserver

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/internal/testpieces"
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
		{`{"\u0069\u0064":5,"method":"x"}`, "5", true}, // "id" spelt with escapes
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

// FuzzIDFinder checks the idFinder against a full decoding, fed in pieces
// of any size: an id it finds is the message's top-level "id" as
// encoding/json reads it, and a message it says is no request is an
// object without one. (It may find no id where one is, an id spelt with
// escapes, say: the error then goes out with id null.)
func FuzzIDFinder(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}}`, `{"id":"a\"b","id":3}`, `{"\u0069d":1}`,
		`{"params":{"id":1},"method":"x"}`, `{"id":[1]}`, `[{"id":1}]`, `{"id":1e400}`, `{"id" : -0.5 }`,
	} {
		f.Add([]byte(seed), []byte{3, 1, 7})
	}
	f.Fuzz(func(t *testing.T, msg, sizes []byte) {
		var fd idFinder
		for _, piece := range testpieces.Cut(msg, sizes) {
			fd.write(piece)
		}
		id, isRequest := fd.result()
		var members map[string]json.RawMessage
		if json.Unmarshal(msg, &members) != nil {
			return // not an object: whatever it found, the message is refused
		}
		sent, hasID := members["id"]
		if !isRequest && hasID {
			t.Errorf("%q: said to be no request, yet it has the id %s", msg, sent)
		}
		if id == nil {
			return
		}
		if !hasID || string(id) != string(sent) {
			t.Errorf("%q: found the id %s, the message's is %s", msg, id, sent)
		}
	})
}

// TestRunners checks how the stdio transport runs calls: a call never
// waits for a running one (each running call has its own goroutine), and
// a goroutine whose call ended takes the next one.
func TestRunners(t *testing.T) {
	done := make(chan struct{})
	started := make(chan *call)
	release := map[*call]chan struct{}{}
	first, second, third := &call{}, &call{}, &call{}
	for _, c := range []*call{first, second, third} {
		release[c] = make(chan struct{})
	}
	ended := make(chan *call)
	r := &runners{run: func(c *call) {
		started <- c
		<-release[c]
		ended <- c
	}, calls: make(chan *call), done: done}

	r.start(first)
	if got := <-started; got != first {
		t.Fatal("the first call did not start")
	}
	// The first call is still running: the second runs beside it.
	r.start(second)
	if got := <-started; got != second {
		t.Fatal("the second call did not start while the first ran")
	}
	close(release[first])
	close(release[second])
	<-ended
	<-ended
	// Both goroutines now wait for a call, and one takes this send (were
	// each goroutine to end with its call, the send would block for ever).
	r.calls <- third
	if got := <-started; got != third {
		t.Fatal("a waiting goroutine did not run the third call")
	}
	close(release[third])
	<-ended
	// At the end of the connection the waiting goroutines end; a call
	// started then still runs.
	close(done)
	fourth := &call{}
	release[fourth] = make(chan struct{})
	close(release[fourth])
	r.start(fourth)
	if got := <-started; got != fourth {
		t.Fatal("a call after the end did not run")
	}
	<-ended
}
