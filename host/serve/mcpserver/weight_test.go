package mcpserver_test

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/serve/mcpserver"
)

// FuzzRequestWeight: the scan counts at least every JSON value
// encoding/json decodes (objects, arrays, strings, member names,
// literals), so that a request's weight is never below what decoding it
// may cost.
func FuzzRequestWeight(f *testing.F) {
	for _, seed := range []string{`{}`, `{"a":0}`, `[1,-2.5e+3,true,false,null,"x\"y"]`, `{"a\\":{"b":[[],{}]}}`, `"\u0041"`, ` [ 1 , 2 ] `} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if !json.Valid(body) {
			return
		}
		d := json.NewDecoder(strings.NewReader(string(body)))
		values := int64(0)
		for {
			tok, err := d.Token()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%q: %v", body, err)
			}
			if delim, ok := tok.(json.Delim); !ok || delim == '{' || delim == '[' {
				values++
			}
		}
		if got, want := mcpserver.RequestWeight(body), mcpserver.RequestBodyCopies*int64(len(body))+mcpserver.RequestValueWeight*values; got < want {
			t.Errorf("%q weighs %d, less than %d (%d values)", body, got, want, values)
		}
	})
}
