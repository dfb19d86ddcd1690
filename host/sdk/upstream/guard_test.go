package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/toolscript/toolscript/internal/testpieces"
)

// nesting is how deep a JSON text nests, the plain way (with
// encoding/json's tokens): the most containers that hold one value.
func nesting(t *testing.T, msg []byte) int {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(msg))
	type frame struct{ object, wantKey bool }
	var stack []*frame
	deepest := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return deepest
		}
		if err != nil {
			t.Fatalf("%q: %v", msg, err)
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if tok == json.Delim('}') || tok == json.Delim(']') {
			stack = stack[:len(stack)-1]
			continue
		}
		if top != nil && top.wantKey {
			top.wantKey = false // a key; its value comes next
			continue
		}
		deepest = max(deepest, len(stack))
		if top != nil && top.object {
			top.wantKey = true
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, wantKey: true})
		case json.Delim('['):
			stack = append(stack, &frame{})
		}
	}
}

// reference is what a scan should find in a valid message: its id (as
// encoding/json keeps it: the last "id" key), whether it has a method,
// how many content blocks its result has.
func reference(t *testing.T, msg []byte) (id json.RawMessage, method bool, blocks int) {
	t.Helper()
	var m struct {
		ID     json.RawMessage  `json:"id"`
		Method *json.RawMessage `json:"method"`
		Result json.RawMessage  `json:"result"`
	}
	if err := json.Unmarshal(msg, &m); err != nil {
		return nil, false, 0
	}
	var r struct {
		Content []json.RawMessage `json:"content"`
	}
	if bytes.HasPrefix(bytes.TrimSpace(m.Result), []byte("{")) {
		_ = json.Unmarshal(m.Result, &r)
	}
	for _, b := range r.Content {
		if bytes.HasPrefix(bytes.TrimSpace(b), []byte("{")) {
			blocks++
		}
	}
	return m.ID, m.Method != nil, blocks
}

// compact removes the white space outside strings (a scan keeps an id
// without it).
func compact(raw []byte) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// checkScan scans msg in pieces of the sizes given and compares what it
// finds with encoding/json's reading of it.
func checkScan(t *testing.T, msg []byte, sizes []byte) {
	t.Helper()
	if !json.Valid(msg) || bytes.ContainsAny(msg, "\n") {
		return
	}
	var s scan
	for _, piece := range testpieces.Cut(msg, sizes) {
		if got, _ := s.feed(piece, false); got != len(piece) {
			t.Fatalf("%q: scanned %d of %d bytes", msg, got, len(piece))
		}
	}
	if d := nesting(t, msg); s.depth != 0 || s.deepest != d {
		t.Errorf("%q: depth %d at the end, deepest %d; want 0, %d", msg, s.depth, s.deepest, d)
	}
	id, method, blocks := reference(t, msg)
	got := s.answers()
	var obj map[string]json.RawMessage
	isObject := json.Unmarshal(msg, &obj) == nil
	want := ""
	if isObject && !method && len(id) > 0 && len(compact(id)) <= maxIDBytes {
		switch compact(id)[0] {
		case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', 'n', 't', 'f':
			want = compact(id)
		}
	}
	// A key written with escapes ("\u0069d") is not recognised: such a
	// message's call is left to its timeout.
	if strings.Contains(string(msg), `\u`) && want != string(got) {
		return
	}
	if string(got) != want {
		t.Errorf("%q: id %q, want %q", msg, got, want)
	}
	// Every "content" array of every "result" counts (a key given twice
	// is decoded twice), so a scan may count more blocks than there are.
	if isObject && s.blocks < blocks {
		t.Errorf("%q: %d blocks, want %d or more", msg, s.blocks, blocks)
	}
}

func TestScan(t *testing.T) {
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}}`,
		`{"result":{"content":[{"type":"text","text":"}\"]{"}],"structuredContent":{"id":3}},"jsonrpc":"2.0","id":12}`,
		`{"jsonrpc":"2.0","id":"ab\"c","error":{"code":1,"message":"x"}}`,
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
		`{"jsonrpc":"2.0","id":4,"method":"sampling/createMessage","params":{}}`,
		`{"id":{"a":1},"result":{}}`,
		`{"id":[1],"result":{}}`,
		`{ "id" : 5 , "result" : { "content" : [ { } , { } , 3 ] } }`,
		`{"id":1,"id":2,"result":{"content":[{}],"content":[{},{}]}}`,
		`{"result":{"content":[[{}]],"x":{"content":[{}]}},"id":-1.5e3}`,
		`{"idx":1,"result":{}}`,
		`[{"id":1}]`,
		`[[[]]]`, `[[[1]]]`, `{"a":{"b":{}}}`, `{"a":{"b":{"c":"d"}}}`, `3`, `[]`, `{"k":[{},[[]]],"l":[1,[2,[3]]]}`,
		`{"id":"` + strings.Repeat("x", 100) + `","result":{}}`,
	} {
		for _, sizes := range [][]byte{nil, {0}, {2, 5}} {
			checkScan(t, []byte(msg), sizes)
		}
	}
}

func FuzzScan(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"a\\\"b"}]}}`), []byte{3})
	f.Add([]byte(`{"result":{"content":[{}]},"id":"x"}`), []byte{0, 1})
	f.Add([]byte(`{"method":"m","id":1}`), []byte{})
	f.Fuzz(func(t *testing.T, msg, sizes []byte) {
		checkScan(t, msg, sizes)
	})
}

// guard reads in through a lineGuard (cap max) in reads of the sizes
// given, and returns what it passed, with refusals written as
// "<refused ID WHY>\n".
func guard(t *testing.T, in io.Reader, max int64, readSize int) string {
	t.Helper()
	g := newLineGuard(in, max, func(id []byte, why overKind) []byte {
		return fmt.Appendf(nil, "<refused %s %d>\n", id, why)
	})
	var out bytes.Buffer
	buf := make([]byte, readSize)
	for {
		n, err := g.Read(buf)
		out.Write(buf[:n])
		if err == io.EOF {
			return out.String()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestLineGuard(t *testing.T) {
	deep := strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1)
	manyBlocks := `{"result":{"content":[` + strings.Repeat(`{},`, maxBlocks) + `{}]},"id":9}`
	big := `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", 100) + `"}]}}`
	bigLast := `{"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", 100) + `"}]},"id":"z"}`
	for _, tc := range []struct {
		name string
		in   string
		max  int64
		out  string
	}{
		{"within", "{\"id\":1}\n\n{\"id\":2}\n", 10, "{\"id\":1}\n\n{\"id\":2}\n"},
		{"no cap", big + "\n", 0, big + "\n"},
		{"over the cap, id first", "{\"id\":1}\n" + big + "\n{\"id\":2}\n", 50,
			"{\"id\":1}\n" + big[:50] + "\x00\n<refused 3 1>\n{\"id\":2}\n"},
		{"over the cap, id last", bigLast + "\n{\"id\":2}\n", 50, bigLast[:50] + "\x00\n<refused \"z\" 1>\n{\"id\":2}\n"},
		{"over the cap, unterminated", big, 50, big[:50] + "\x00\n"},
		{"at the cap", "{\"id\":1}\n", 8, "{\"id\":1}\n"},
		{"a byte over the cap", "{\"id\":12}\n", 8, "{\"id\":12\x00\n<refused 12 1>\n"},
		{"too deep", `{"id":4,"result":` + deep + "}\n{}\n", 0,
			`{"id":4,"result":` + deep[:maxDepth] + "\x00\n<refused 4 2>\n{}\n"},
		{"too many blocks", manyBlocks + "\n", 0, manyBlocks[:22+3*maxBlocks+1] + "\x00\n<refused 9 3>\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, readSize := range []int{1, 7, 4096} {
				for _, r := range []io.Reader{strings.NewReader(tc.in), iotest.OneByteReader(strings.NewReader(tc.in))} {
					if got := guard(t, r, tc.max, readSize); got != tc.out {
						t.Errorf("read %d: passed %.300q, want %.300q", readSize, got, tc.out)
					}
				}
			}
		})
	}
}

// FuzzLineGuard checks that a lineGuard passes lines within the cap as
// they are, and that it passes a prefix of an over-cap line ended by a
// NUL byte, then the refusal, whatever the read sizes.
func FuzzLineGuard(f *testing.F) {
	f.Add([]byte("{\"id\":1}\n{\"id\":22222}\n"), []byte{1, 3}, uint8(8))
	f.Add([]byte("\n\n{\"result\":\"xxxxxxxx\",\"id\":5}"), []byte{}, uint8(3))
	f.Fuzz(func(t *testing.T, in, sizes []byte, max uint8) {
		if bytes.IndexByte(in, 0) >= 0 || bytes.Contains(in, []byte("<refused")) {
			return
		}
		got := guard(t, &chunks{in: in, sizes: sizes}, int64(max), 1+int(max)%5)
		var want strings.Builder
		for i, line := range bytes.Split(in, []byte("\n")) {
			if i > 0 {
				want.WriteString("\n")
			}
			if max == 0 || len(line) <= int(max) {
				want.Write(line)
				continue
			}
			var s scan
			s.feed(line, false)
			want.Write(line[:max])
			want.WriteString("\x00\n")
			if i < bytes.Count(in, []byte("\n")) {
				fmt.Fprintf(&want, "<refused %s %d>", s.answers(), overSize)
			}
		}
		// Lines over the bounds of a scan are not generated here
		// (TestLineGuard has them).
		if got != want.String() && !strings.Contains(got, " 2>") && !strings.Contains(got, " 3>") {
			t.Fatalf("cap %d: passed %q, want %q", max, got, want.String())
		}
	})
}
