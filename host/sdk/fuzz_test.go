package sdk

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/contract/sdkcall"
	"github.com/toolscript/toolscript/host/sdk/sdkargs"
)

// FuzzParameterEncoding: whatever the value, a path parameter stays one
// segment that decodes back to the value, and a query parameter decodes
// back to the value under its own name, in every style.
func FuzzParameterEncoding(f *testing.F) {
	for _, s := range []string{"a/b?c", "..", ".", "x y&z=1#f", "%2F", "é\x00\xff", "[]", "a|b", ""} {
		f.Add(s, "other")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		for _, style := range []string{"simple", "label", "matrix"} {
			p := &catalog.Param{Name: "id", In: "path", Style: style}
			text, err := pathValue(p, a)
			if err != nil {
				if a == "" {
					continue
				}
				t.Fatal(err)
			}
			if strings.ContainsAny(text, "/?#") || text == "." || text == ".." {
				t.Fatalf("%s %q: %q can change the path", style, a, text)
			}
			switch style {
			case "label":
				text = strings.TrimPrefix(text, ".")
			case "matrix":
				text = strings.TrimPrefix(text, ";id=")
			}
			if got, err := url.PathUnescape(text); err != nil || got != a {
				t.Fatalf("%s %q: encoded %q decodes to %q (%v)", style, a, text, got, err)
			}
		}
		for _, tc := range []struct {
			style   string
			explode bool
			v       any
			want    []string
		}{
			{"form", true, a, []string{a}},
			{"form", true, []any{a, b}, []string{a, b}},
			{"form", false, []any{a, b}, []string{a + "," + b}},
			{"spaceDelimited", false, []any{a, b}, []string{a + " " + b}},
			{"pipeDelimited", false, []any{a, b}, []string{a + "|" + b}},
		} {
			var q strings.Builder
			p := &catalog.Param{Name: "q", In: "query", Style: tc.style, Explode: tc.explode}
			if err := queryValue(&q, p, tc.v); err != nil {
				t.Fatal(err)
			}
			values, err := url.ParseQuery(q.String())
			if err != nil {
				t.Fatalf("%s: %q does not parse: %v", tc.style, q.String(), err)
			}
			if len(values) != 1 || strings.Join(values["q"], "\x00") != strings.Join(tc.want, "\x00") {
				t.Fatalf("%s %v: %q parses to %v", tc.style, tc.v, q.String(), values)
			}
		}
		var q strings.Builder
		if err := queryValue(&q, &catalog.Param{Name: "f", In: "query", Style: "deepObject", Explode: true}, map[string]any{"k": a}); err != nil {
			t.Fatal(err)
		}
		if values, err := url.ParseQuery(q.String()); err != nil || values.Get("f[k]") != a || len(values) != 1 {
			t.Fatalf("deepObject %q: %q → %v %v", a, q.String(), values, err)
		}
		h, err := headerValue(&catalog.Param{Name: "X", In: "header", Style: "simple"}, a)
		if err == nil && (strings.ContainsAny(h, "\r\n\x00") || h != a) {
			t.Fatalf("header %q → %q", a, h)
		}
		c, err := cookieValue(&catalog.Param{Name: "c", In: "cookie", Style: "form"}, a)
		if err != nil || strings.ContainsAny(c, "; \r\n") {
			t.Fatalf("cookie %q → %q %v", a, c, err)
		}
	})
}

// TestHeaderAndCookieValues: a header (style simple) and a cookie (style
// form) write lists and objects comma-separated, an exploded header's
// object as key=value pairs.
func TestHeaderAndCookieValues(t *testing.T) {
	list, object := []any{"a", "b"}, map[string]any{"n": "1", "k": "v"}
	for _, tt := range []struct {
		name           string
		v              any
		explode        bool
		header, cookie string
	}{
		{"scalar", "x y", false, "x y", "c=x%20y"},
		{"list", list, false, "a,b", "c=a%2Cb"},
		{"object", object, false, "k,v,n,1", "c=k%2Cv%2Cn%2C1"},
		{"exploded object", object, true, "k=v,n=1", "c=k%2Cv%2Cn%2C1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h, err := headerValue(&catalog.Param{Name: "X", In: "header", Style: "simple", Explode: tt.explode}, tt.v)
			if err != nil || h != tt.header {
				t.Errorf("header %q, %v; want %q", h, err, tt.header)
			}
			c, err := cookieValue(&catalog.Param{Name: "c", In: "cookie", Style: "form", Explode: tt.explode}, tt.v)
			if err != nil || c != tt.cookie {
				t.Errorf("cookie %q, %v; want %q", c, err, tt.cookie)
			}
		})
	}
}

// FuzzConvert: any status, media type and body give a well-formed
// response: JSON for a JSON media type (the shim passes it on as text when
// it does not parse) or for a valid object or array without one, at most
// one body form, an upstream error exactly for non-2xx with a bounded
// message.
func FuzzConvert(f *testing.F) {
	f.Add(200, "application/json", []byte(`{"a":1}`))
	f.Add(404, "application/problem+json", []byte(`{"title":"x"}`))
	f.Add(500, "text/plain", []byte("boom"))
	f.Add(204, "", []byte(""))
	f.Add(200, "", []byte("[1,2"))
	f.Add(302, "application/json; charset=utf-8", []byte(strings.Repeat("é", 400)))
	f.Add(999, "bad;;type", []byte("\xff\xfe"))
	f.Fuzz(func(t *testing.T, status int, contentType string, body []byte) {
		h := http.Header{}
		h.Set("Content-Type", contentType)
		h.Set("X-Mixed-Case", "v")
		r := Convert(status, h, body)
		if r.JSON != nil && r.Text != nil {
			t.Fatal("both JSON and text")
		}
		if r.JSON != nil && contentType == "" && !json.Valid(r.JSON) {
			t.Fatalf("invalid JSON without a media type passed on as JSON: %q", r.JSON)
		}
		if r.JSON != nil && string(r.JSON) != string(body) {
			t.Fatal("JSON body changed")
		}
		if r.Text != nil && string(r.Text) != string(body) {
			t.Fatal("text body changed")
		}
		if len(body) > 0 && r.JSON == nil && r.Text == nil && status != 204 && status != 205 && status != 304 {
			t.Fatal("body lost")
		}
		if ok := status >= 200 && status <= 299; ok != (r.Fail == sdkcall.OK) {
			t.Fatalf("status %d: fail %d", status, r.Fail)
		}
		if r.Fail == sdkcall.Upstream {
			if !strings.HasPrefix(r.Message, "HTTP ") || len(r.Message) > 3*messageBodyBytes+64 || !utf8.ValidString(r.Message) {
				t.Fatalf("message %q", r.Message)
			}
		}
		if r.Headers["x-mixed-case"] != "v" {
			t.Fatalf("headers %v", r.Headers)
		}
	})
}

// FuzzQuickCheck: a parameter's quick check never accepts a value the
// JSON Schema validator refuses, whatever the schema's types, format and
// enum.
func FuzzQuickCheck(f *testing.F) {
	f.Add(uint8(1<<2), uint8(0), `[]`, []byte(`7`))
	f.Add(uint8(1<<2), uint8(1), `[]`, []byte(`2147483648`))
	f.Add(uint8(1<<0|1<<4), uint8(0), `["a","b"]`, []byte(`null`))
	f.Add(uint8(1<<3), uint8(2), `[1,2.0,"x",true,null]`, []byte(`2.0`))
	f.Add(uint8(1<<0), uint8(3), `[]`, []byte(`"not-a-uuid"`))
	f.Add(uint8(0), uint8(0), `[false]`, []byte(`true`))
	types := []string{"string", "integer", "number", "boolean", "null", "object", "array"}
	formats := []string{"", "int32", "int64", "uuid", "date-time", "email", "uri"}
	f.Fuzz(func(t *testing.T, typeMask, format uint8, enum string, value []byte) {
		s := &catalog.Schema{Format: formats[int(format)%len(formats)]}
		for i, name := range types {
			if typeMask&(1<<i) != 0 {
				s.Type = append(s.Type, name)
			}
		}
		var list []json.RawMessage
		if json.Unmarshal([]byte(enum), &list) == nil {
			s.Enum = list
		}
		v, err := sdkargs.Parse(value)
		if err != nil {
			return
		}
		api := &catalog.API{}
		q, full := newQuickCheck(api, s), newChecker(api, s)
		if q == nil {
			t.Fatalf("no quick check for %+v", s)
		}
		if q.accepts(v) {
			if err := full.check(v, sdkargs.Place{Value: "value"}); err != nil {
				t.Fatalf("schema %+v: the quick check accepts %s, the validator says %v", s, value, err)
			}
		}
	})
}

// FuzzNewRequest: a request addressed from its parts has the URL that
// parsing the whole of it gives (what http.NewRequest does).
func FuzzNewRequest(f *testing.F) {
	for _, base := range []string{"http://127.0.0.1:8080", "https://api.example.com/v1", "http://h/a%20b", "http://h:/x", "http://u:p@h", "http://h/b?x=1", "HTTP://H", "http://[::1]:9/"} {
		f.Add(base, "/pets/7", "limit=5&q=a%20b")
		f.Add(base, "/a%2Fb/%E2%82%AC;x=1,2", "")
		f.Add(base, "/search?type=x", "q=1")
		f.Add(base, "/x y/%zz", "")
	}
	f.Fuzz(func(t *testing.T, base, path, query string) {
		st := &apiState{baseURL: base, base: plainBase(base)}
		got, err := st.newRequest("GET", path, query, nil)
		target := base + path
		if query != "" {
			target += "?" + query
		}
		want, wantErr := http.NewRequest("GET", target, nil)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%q: error %v, http.NewRequest's %v", target, err, wantErr)
		}
		if err != nil {
			return
		}
		if got.URL.String() != want.URL.String() || got.URL.RequestURI() != want.URL.RequestURI() || got.Host != want.Host ||
			got.URL.Path != want.URL.Path || got.URL.RawQuery != want.URL.RawQuery || got.URL.Host != want.URL.Host {
			t.Fatalf("%q: %q %q (host %q), http.NewRequest gives %q %q (host %q)", target,
				got.URL.String(), got.URL.RequestURI(), got.Host, want.URL.String(), want.URL.RequestURI(), want.Host)
		}
	})
}

// FuzzReadBody: reading a response body gives what
// io.ReadAll(io.LimitReader(body, max+1)) gives, whatever size the
// response announced (right, wrong or none) and however the reader
// splits its data.
func FuzzReadBody(f *testing.F) {
	f.Add(uint16(57), int64(57), int64(100), uint8(7))
	f.Add(uint16(1000), int64(-1), int64(999), uint8(0))
	f.Add(uint16(0), int64(0), int64(10), uint8(1))
	f.Add(uint16(600), int64(10), int64(600), uint8(255))
	f.Fuzz(func(t *testing.T, n uint16, size, max int64, chunk uint8) {
		if max < 0 || max > 1<<20 {
			return
		}
		data := bytes.Repeat([]byte("abcdefg"), int(n)/7+1)[:n]
		reader := func() io.Reader {
			if chunk == 0 {
				return bytes.NewReader(data)
			}
			return &chunkReader{data: data, n: int(chunk)}
		}
		got, err := readBody(reader(), size, max)
		want, _ := io.ReadAll(io.LimitReader(reader(), max+1))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("n %d size %d max %d: %d bytes (%v), want %d", n, size, max, len(got), err, len(want))
		}
	})
}

// chunkReader hands out its data n bytes at a time.
type chunkReader struct {
	data []byte
	n    int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	k := min(len(p), r.n, len(r.data))
	copy(p, r.data[:k])
	r.data = r.data[k:]
	return k, nil
}

// FuzzDecoded: any body under any Content-Encoding either is refused, or
// fails to decode, or decodes to at most max+1 bytes (what tells the
// caller it is past the cap), reading at most wireCap(max) bytes of it.
func FuzzDecoded(f *testing.F) {
	for _, coding := range []string{"gzip", "deflate", "br", "zstd", "gzip, br", "identity", "compress", "gzip, gzip, gzip"} {
		f.Add(coding, []byte("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"))
		f.Add(coding, []byte{0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01})
	}
	f.Fuzz(func(t *testing.T, coding string, body []byte) {
		const max = 4096
		h := http.Header{"Content-Encoding": {coding}}
		list, err := codings(h)
		if err != nil || list == nil {
			return
		}
		wire := bytes.NewReader(body)
		r, _, closeAll, err := decoded(wire, list, max)
		if err != nil {
			return
		}
		defer closeAll()
		data, _ := readBody(r, -1, max)
		if len(data) > max+1 {
			t.Fatalf("decoded %d bytes past the cap", len(data))
		}
		if read := int64(len(body)) - int64(wire.Len()); read > wireCap(max)+1 {
			t.Fatalf("read %d bytes of the wire", read)
		}
	})
}
