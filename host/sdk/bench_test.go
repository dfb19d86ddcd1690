package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/contract/redact"
	"github.com/toolscript/toolscript/internal/testrules"
)

// BenchmarkCall compares one sdk call (argument checks, encoding, auth,
// the request, reading and converting the response) with the same request
// made by a plain net/http loop, against one local keep-alive server: the
// difference is what the sdk adds per call (the target for the
// whole script path is 30 µs).
func BenchmarkCall(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`[{"id":1,"name":"Rex","tag":null},{"id":2,"name":"Tom"}]`))
	}))
	defer srv.Close()

	b.Run("net-http", func(b *testing.B) {
		client := &http.Client{Transport: newTransport(MaxHeaderBytes)}
		defer client.CloseIdleConnections()
		b.ReportAllocs()
		for b.Loop() {
			ctx, cancel := context.WithTimeout(context.Background(), DefaultTimeout)
			req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/pets?limit=5&status=available", nil)
			req.Header.Set("Authorization", "Bearer benchmark-token")
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			cancel()
			if !json.Valid(data) {
				b.Fatal("bad body")
			}
		}
	})
	// The sdk's call, and the same call decided by 100 rules, one naming
	// effect.safe (so that this GET is decided too), none matching.
	for _, tc := range []struct {
		name string
		fx   func() *effects.Run
	}{{"sdk", func() *effects.Run { return nil }}, {"sdk-100-rules", func() *effects.Run { return testrules.HundredRun(b) }}} {
		b.Run(tc.name, func(b *testing.B) {
			c := newClient(b, &testAPI{srv: srv}, Config{MaxCalls: 1 << 30}, APIConfig{BaseURL: srv.URL, Auth: &Credential{Token: "benchmark-token"}})
			s := c.Session(nil).WithEffects(tc.fx())
			id := fnID(b, c, "list_pets")
			args := json.RawMessage(`[{"limit":5,"status":"available"}]`)
			b.ReportAllocs()
			for b.Loop() {
				r := s.Call(context.Background(), id, args)
				if r.Fail != 0 || r.JSON == nil {
					b.Fatal(r.Message)
				}
				r.Release() // as the runtime does once the guest has the bytes
			}
		})
	}
}

// BenchmarkCallWork is the sdk's own work per call, without the network:
// checking and encoding a request (request), and converting a response
// (convert).
func BenchmarkCallWork(b *testing.B) {
	c := newClient(b, &testAPI{}, Config{}, APIConfig{BaseURL: "http://127.0.0.1:9", Auth: &Credential{Token: "benchmark-token"}})
	s := c.Session(nil)
	f := c.funcs[fnID(b, c, "list_pets")]
	args := json.RawMessage(`[{"limit":5,"status":"available"}]`)
	b.Run("request", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.request(f, args); err != nil {
				b.Fatal(err)
			}
		}
	})
	h := http.Header{"Content-Type": {"application/json"}, "Date": {"Mon, 23 Nov 2026 08:00:00 GMT"}, "Content-Length": {"57"}}
	body := []byte(`[{"id":1,"name":"Rex","tag":null},{"id":2,"name":"Tom"}]`)
	b.Run("convert", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s.redact.Response(Convert(200, h, body))
		}
	})
}

// BenchmarkRedact is the redaction of a converted response: without
// credentials (nothing to do), and with one whose secret is absent (the
// common case: every response is scanned) or echoed, for a small JSON
// body, a 64 KiB one dense with escapes (quotes, newlines, slashes,
// percent-encoding: one every 11 bytes) and a 64 KiB one without.
func BenchmarkRedact(b *testing.B) {
	h := http.Header{"Content-Type": {"application/json"}, "Date": {"Mon, 23 Nov 2026 08:00:00 GMT"}, "Content-Length": {"57"}}
	small := []byte(`[{"id":1,"name":"Rex","tag":null},{"id":2,"name":"Tom"}]`)
	var big bytes.Buffer
	big.WriteByte('[')
	for i := 0; big.Len() < 64<<10; i++ {
		if i > 0 {
			big.WriteByte(',')
		}
		fmt.Fprintf(&big, `{"id":%d,"name":"pet \"%d\"","url":"https:\/\/example.com\/pets\/%d?a=1&b=%%2F","notes":"line\nline"}`, i, i, i)
	}
	big.WriteByte(']')
	var plain bytes.Buffer // the same without escapes
	plain.WriteByte('[')
	for i := 0; plain.Len() < 64<<10; i++ {
		if i > 0 {
			plain.WriteByte(',')
		}
		fmt.Fprintf(&plain, `{"id":%d,"name":"pet %d","status":"available","owner":{"id":%d,"email":"owner-%d@example.com"},"notes":"a line of text"}`, i, i, i, i)
	}
	plain.WriteByte(']')
	const secret = "benchmark-token-0123456789"
	echoed := []byte(`{"headers":{"authorization":"Bearer ` + secret + `"}}`)
	for _, tc := range []struct {
		name    string
		secrets []string
		body    []byte
	}{
		{"none/small", nil, small},
		{"none/64KiB", nil, big.Bytes()},
		{"absent/small", []string{secret}, small},
		{"absent/64KiB", []string{secret}, big.Bytes()},
		{"absent/64KiB-plain", []string{secret}, plain.Bytes()},
		{"echoed/small", []string{secret}, echoed},
	} {
		r := redact.New(redact.Secrets(tc.secrets...)...)
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(tc.body)))
			for b.Loop() {
				r.Response(Convert(200, h, tc.body))
			}
		})
	}
}
