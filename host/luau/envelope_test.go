package luau

import (
	"encoding/binary"
	"encoding/json"
	"maps"
	"strings"
	"testing"
)

// FuzzAppendHeaders: the headers of a response envelope read back as
// json.Marshal's text of them does.
func FuzzAppendHeaders(f *testing.F) {
	f.Add("content-type", "application/json; charset=utf-8")
	f.Add("x-odd", "a\"b\\c\x00\x1f\x7f\n\r\té€\xff\xfe\xed\xa0\x80")
	f.Add("\xc3", "")
	f.Fuzz(func(t *testing.T, k, v string) {
		headers := map[string]string{k: v}
		if strings.ToValidUTF8(k, "\uFFFD") != "x-fixed" {
			headers["x-fixed"] = "1"
		}
		var got, want map[string]string
		text := appendHeaders(nil, headers)
		if err := json.Unmarshal(text, &got); err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		ref, _ := json.Marshal(headers)
		json.Unmarshal(ref, &want)
		if !maps.Equal(got, want) {
			t.Fatalf("%q reads as %q, json.Marshal's %q as %q", text, got, ref, want)
		}
	})
}

// TestEnvelope: the words and parts of an envelope are where the shim
// reads them.
func TestEnvelope(t *testing.T) {
	r := &SDKResponse{Fail: SDKUpstream, Status: 404, Message: "sdk.x: HTTP 404", Headers: map[string]string{"a": "1"},
		JSON: json.RawMessage(`{"m":1}`), Content: json.RawMessage(`[1]`)}
	e := r.envelope()
	var words [7]uint32
	for i := range words {
		words[i] = binary.LittleEndian.Uint32(e[4*i:])
	}
	rest := string(e[28:])
	want := [7]uint32{2, 404, 1, uint32(len(r.Message)), uint32(len(`{"a":"1"}`)), 7, 3}
	if words != want || rest != `sdk.x: HTTP 404{"a":"1"}{"m":1}[1]` {
		t.Fatalf("envelope %v %q", words, rest)
	}
	if e := (&SDKResponse{Status: 204}).envelope(); len(e) != 28 || binary.LittleEndian.Uint32(e[4:]) != 204 {
		t.Fatalf("empty envelope %q", e)
	}
}
