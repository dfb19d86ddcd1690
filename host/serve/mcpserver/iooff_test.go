package mcpserver

import (
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/runtime/result"
)

func TestExplainDisabledIO(t *testing.T) {
	cases := []struct {
		source, message string
		line            int
		kind            result.Kind
		noted           bool
	}{
		{`local f = io.open("x.txt")`, "script:1: attempt to index nil with 'open'", 1, result.Runtime, true},
		{"local n = 1\nfor l in io.lines('a') do end", "script:2: attempt to index nil with 'lines'", 2, result.Runtime, true},
		{`return io . list()`, "script:1: attempt to index nil with 'list'", 1, result.Runtime, true},
		{`io.remove("x")`, "script:1: attempt to index nil with 'remove'", 1, result.Runtime, true},
		{`os.remove("x")`, "script:1: attempt to call a nil value", 1, result.Runtime, true},
		{`os.rename("x", "y")`, "script:1: attempt to call a nil value", 1, result.Runtime, true},
		{`return io.grep("x")`, "script:1: attempt to index nil with 'grep'", 1, result.Runtime, true},
		{`file.save("x", "y")`, "script:1: attempt to index nil with 'save'", 1, result.Runtime, true},
		// Not the io library.
		{`local studio = nil return studio.open`, "script:1: attempt to index nil with 'open'", 1, result.Runtime, false},
		{`local t = {} return t.io.open`, "script:1: attempt to index nil with 'open'", 1, result.Runtime, false},
		{`local x = nil return x.list, io.open`, "script:1: attempt to index nil with 'list'", 1, result.Runtime, false},
		{`local f = nil f()`, "script:1: attempt to call a nil value", 1, result.Runtime, false},
		{`io.open("x")`, "script:1: attempt to index nil with 'open'", 0, result.Runtime, false},
		{`io.open("x")`, "script:1: io.open: 'x': no such file or directory", 1, result.IO, false},
		{"\n\n", "script:9: attempt to index nil with 'open'", 9, result.Runtime, false},
	}
	for _, c := range cases {
		res := &result.Result{Error: &result.Error{Kind: c.kind, Message: c.message, Line: c.line}}
		explainDisabledIO(res, []byte(c.source))
		if got := strings.HasSuffix(res.Error.Message, ioDisabledNote); got != c.noted {
			t.Errorf("%q: %q", c.source, res.Error.Message)
		}
	}
	ok := &result.Result{}
	explainDisabledIO(ok, []byte("return io.open"))
	if ok.Error != nil {
		t.Error("a success got an error")
	}
}
