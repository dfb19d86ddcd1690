package luau

import (
	"encoding/binary"
	"encoding/json"
	"maps"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/contract/sdkcall"
)

// readHeaders reads an envelope's headers block as the shim does
// (sdk.cpp, pushHeaders).
func readHeaders(t *testing.T, block []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	if len(block) == 0 {
		return out
	}
	count := binary.LittleEndian.Uint32(block)
	block = block[4:]
	for range count {
		var kv [2]string
		for i := range kv {
			n := binary.LittleEndian.Uint32(block)
			kv[i], block = string(block[4:4+n]), block[4+n:]
		}
		out[kv[0]] = kv[1]
	}
	if len(block) != 0 {
		t.Fatalf("%d bytes after the headers", len(block))
	}
	return out
}

// FuzzEnvelopeHeaders: an envelope's headers read back as json.Marshal's
// text of them does (what the shim was given before: invalid UTF-8 as
// U+FFFD, byte by byte).
func FuzzEnvelopeHeaders(f *testing.F) {
	f.Add("content-type", "application/json; charset=utf-8")
	f.Add("x-odd", "a\"b\\c\x00\x1f\x7f\n\r\té€\xff\xfe\xed\xa0\x80\xef\xbf\xbd")
	f.Add("\xc3", "")
	f.Fuzz(func(t *testing.T, k, v string) {
		headers := map[string]string{k: v, "x-fixed": "1"}
		if strings.ToValidUTF8(k, "") == "x-fixed" {
			return // two names that read the same
		}
		e := (&envelope{Status: 200, Message: "m", Headers: headers}).bytes()
		msgLen, headersLen := binary.LittleEndian.Uint32(e[12:]), binary.LittleEndian.Uint32(e[16:])
		got := readHeaders(t, e[28+msgLen:28+msgLen+headersLen])
		var want map[string]string
		ref, _ := json.Marshal(headers)
		json.Unmarshal(ref, &want)
		if !maps.Equal(got, want) {
			t.Fatalf("headers %q read as %q, json.Marshal's as %q", headers, got, want)
		}
	})
}

// TestEnvelope: the words and parts of an envelope are where the shim
// reads them.
func TestEnvelope(t *testing.T) {
	r := &sdkcall.Response{Fail: sdkcall.Upstream, Status: 404, Message: "sdk.x: HTTP 404", Headers: map[string]string{"a": "1"},
		JSON: json.RawMessage(`{"m":1}`), Content: json.RawMessage(`[1]`)}
	e := (*envelope)(r).bytes()
	var words [7]uint32
	for i := range words {
		words[i] = binary.LittleEndian.Uint32(e[4*i:])
	}
	headers := "\x01\x00\x00\x00" + "\x01\x00\x00\x00a" + "\x01\x00\x00\x001"
	want := [7]uint32{2, 404, 1, uint32(len(r.Message)), uint32(len(headers)), 7, 3}
	if rest := string(e[28:]); words != want || rest != `sdk.x: HTTP 404`+headers+`{"m":1}[1]` {
		t.Fatalf("envelope %v %q", words, rest)
	}
	if e := (&envelope{Status: 204}).bytes(); len(e) != 28 || binary.LittleEndian.Uint32(e[4:]) != 204 || binary.LittleEndian.Uint32(e[16:]) != 0 {
		t.Fatalf("empty envelope %q", e)
	}
}
