package sdk

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/toolscript/toolscript/host/contract/redact"
	"github.com/toolscript/toolscript/host/contract/sdkcall"
	"github.com/toolscript/toolscript/host/sdk/openapi/openapitest"
	"github.com/toolscript/toolscript/host/sdk/upstream"
	"github.com/toolscript/toolscript/internal/testapi"
	"github.com/toolscript/toolscript/internal/testecho"
	"github.com/toolscript/toolscript/internal/testupstreams"
)

// echoSecret is the credential the echo API reflects; mixed case, digits,
// and characters that escapes change ('/', '+', '=').
const echoSecret = "Zq7s/K2m+Xw9PbT4=vLr8Nc"

// newEchoClient makes a client of the echo API (as "echo") with cred.
func newEchoClient(t testing.TB, e *testecho.Server, cfg Config, cred *Credential) *Client {
	t.Helper()
	api := openapitest.Load(t, "echo", testecho.SpecPath())
	cfg.APIs = append(cfg.APIs, APIConfig{Name: "echo", BaseURL: e.URL, Auth: cred})
	return clientOf(t, cfg, api)
}

// decodeAll undoes, as a script could, every escape the echo API uses:
// percent-encoding, HTML character references, JSON escapes and UTF-16,
// twice over; in lower case.
func decodeAll(s string) string {
	for range 2 {
		if strings.Count(s, "\x00") > len(s)/4 {
			u := make([]uint16, len(s)/2)
			for i := range u {
				u[i] = uint16(s[2*i]) | uint16(s[2*i+1])<<8
			}
			s = string(utf16.Decode(u))
		}
		if q, err := strconv.Unquote(`"` + strings.ReplaceAll(strings.ReplaceAll(s, `\/`, "/"), `"`, `\"`) + `"`); err == nil {
			s = q
		}
		s = html.UnescapeString(s)
		if q, err := url.PathUnescape(s); err == nil {
			s = q
		}
	}
	return strings.ToLower(s)
}

// leaks is what of the secret shows in what the script got: the longest
// prefix of the secret that follows "bearer " (or "api_key=", "sid=") in
// any decoded form, or the whole secret anywhere.
func leaks(r *sdkcall.Response) string {
	parts := []string{r.Message, string(r.JSON), string(r.Text)}
	for k, v := range r.Headers {
		parts = append(parts, k, v)
	}
	secret := strings.ToLower(echoSecret)
	longest := ""
	for _, p := range parts {
		for _, text := range []string{strings.ToLower(p), decodeAll(p)} {
			if strings.Contains(text, secret) {
				return echoSecret
			}
			for _, before := range []string{"bearer ", "api_key=", "sid="} {
				for rest := text; ; {
					i := strings.Index(rest, before)
					if i < 0 {
						break
					}
					rest = rest[i+len(before):]
					n := 0
					for n < len(rest) && n < len(secret) && rest[n] == secret[n] {
						n++
					}
					if n > len(longest) {
						longest = echoSecret[:n]
					}
				}
			}
		}
	}
	return longest
}

// TestErrorMessageCut: an error page that quotes the request, padded so
// that the message's 512-byte cut falls at every place in the echoed
// credential (and a little before and after), shows none of it: not in
// the message, the body or the headers, whatever the page's escapes.
func TestErrorMessageCut(t *testing.T) {
	e := testecho.New(t)
	for _, cred := range []*Credential{
		{Token: echoSecret},
		{Type: AuthAPIKey, Name: "api_key", In: "query", Value: echoSecret},
	} {
		s := newEchoClient(t, e, Config{MaxCalls: 1 << 20}, cred).Session(nil)
		for _, format := range []string{"text", "json", "html", "percent"} {
			// Where the secret starts in the body, without padding.
			r := callEcho(t, s, "status", `[{"code":400,"format":"`+format+`"}]`)
			body := string(r.Text) + string(r.JSON)
			at := strings.Index(body, Redacted)
			if r.Fail != sdkcall.Upstream || r.Status != 400 || at < 0 {
				t.Fatalf("%s: %+v", format, r)
			}
			// The cut is at messageBodyBytes of the body: pad so that it
			// falls from before the secret to past its end (in the
			// escaped forms a character takes up to 6 bytes).
			for pad := messageBodyBytes - at - 8*len(echoSecret); pad <= messageBodyBytes-at+8; pad++ {
				if pad < 0 {
					continue
				}
				r := callEcho(t, s, "status", `[{"code":400,"format":"`+format+`","pad":"`+strings.Repeat("x", pad)+`"}]`)
				if r.Fail != sdkcall.Upstream {
					t.Fatalf("%s pad %d: %+v", format, pad, r)
				}
				if got := leaks(r); got != "" {
					t.Fatalf("%s, %s, pad %d: %q of the secret shows in %q", format, cred.Type, pad, got, r.Message)
				}
				if strings.HasSuffix(r.Message, "...") && strings.Contains(r.Message[len(r.Message)-3-len(Redacted):], "[RED") && !strings.Contains(r.Message[len(r.Message)-3-len(Redacted):], Redacted) {
					t.Fatalf("the cut splits the marker: %q", r.Message)
				}
			}
		}
	}
}

func callEcho(t testing.TB, s *Session, name, args string) *sdkcall.Response {
	t.Helper()
	return s.Call(context.Background(), fnID(t, s.c, name), json.RawMessage(args))
}

// TestEscapedEchoes: an echo whose JSON writes "/" as "\/", every
// character as \u00XX, in upper case or in UTF-16, a redirect's Location
// with the query percent-encoded in lower case: the credential (bearer,
// api_key in the query, in a cookie) shows in none of them, decoded as the
// script would.
func TestEscapedEchoes(t *testing.T) {
	e := testecho.New(t)
	for _, cred := range []*Credential{
		{Token: echoSecret},
		{Type: AuthAPIKey, Name: "api_key", In: "query", Value: echoSecret},
		{Type: AuthAPIKey, Name: "sid", In: "cookie", Value: echoSecret},
	} {
		s := newEchoClient(t, e, Config{}, cred).Session(nil)
		for _, escape := range []string{"none", "slash", "unicode", "upper", "utf16"} {
			r := callEcho(t, s, "anything", `[{"escape":"`+escape+`"}]`)
			if r.Fail != sdkcall.OK {
				t.Fatalf("%s: %+v", escape, r)
			}
			if got := leaks(r); got != "" {
				t.Errorf("%s, %s: %q of the secret shows in %s%s", cred.Type, escape, got, r.JSON, r.Text)
			}
			if !strings.Contains(string(r.JSON)+string(r.Text), Redacted) {
				t.Errorf("%s, %s: no redaction in %s%s", cred.Type, escape, r.JSON, r.Text)
			}
			if _, ok := r.Headers["content-length"]; ok {
				t.Errorf("%s, %s: the length of the body before redaction (the secret's length) is shown: %v", cred.Type, escape, r.Headers)
			}
			if escape == "none" && cred.In == "" && !strings.Contains(string(r.JSON), `"authorization":"Bearer [REDACTED]"`) {
				t.Errorf("the JSON is not redacted value by value: %s", r.JSON)
			}
		}
		r := callEcho(t, s, "location", `[]`)
		if r.Status != 302 || r.Headers["location"] == "" {
			t.Fatalf("location: %+v", r)
		}
		if got := leaks(r); got != "" {
			t.Errorf("%s: %q of the secret shows in the Location %q", cred.Type, got, r.Headers["location"])
		}
		// A transport error quoting a Location it cannot follow.
		r = callEcho(t, s, "location", `[{"broken":true}]`)
		if r.Fail != sdkcall.Upstream || r.Status != 0 || !strings.Contains(r.Message, "Location") {
			t.Fatalf("broken location: %+v", r)
		}
		if got := leaks(r); got != "" || (cred.In == "query" && !strings.Contains(r.Message, Redacted)) {
			t.Errorf("%s: %q of the secret shows in the transport error %q", cred.Type, got, r.Message)
		}
	}
}

// TestContentEncodings: the host asks for gzip, deflate, br and zstd and
// decodes them (one, or two stacked; deflate with or without zlib's
// wrapper), redacting the decoded body; it refuses a coding it did not ask
// for, and a script cannot choose Accept-Encoding.
func TestContentEncodings(t *testing.T) {
	e := testecho.New(t)
	s := newEchoClient(t, e, Config{}, &Credential{Token: echoSecret}).Session(nil)
	for _, coding := range []string{"identity", "gzip", "x-gzip", "deflate", "raw-deflate", "br", "zstd", "gzip,br", "zstd,deflate"} {
		r := callEcho(t, s, "encoded", `[{"coding":"`+coding+`"}]`)
		if r.Fail != sdkcall.OK || r.JSON == nil {
			t.Errorf("%s: %d %s %q", coding, r.Fail, r.Message, r.Text)
			continue
		}
		var got struct{ Headers map[string]string }
		if err := json.Unmarshal(r.JSON, &got); err != nil {
			t.Fatal(err)
		}
		if got.Headers["accept-encoding"] != "gzip, deflate, br, zstd" || got.Headers["authorization"] != "Bearer "+Redacted {
			t.Errorf("%s: the request had %v", coding, got.Headers)
		}
		if _, ok := r.Headers["content-encoding"]; ok && coding != "identity" {
			t.Errorf("%s: the decoded body still says it is encoded: %v", coding, r.Headers)
		}
		if _, ok := r.Headers["content-length"]; ok {
			t.Errorf("%s: a length that is not the body's: %v", coding, r.Headers)
		}
	}
	// An error body is decoded and redacted too.
	r := callEcho(t, s, "encoded", `[{"coding":"br","status":403}]`)
	if r.Fail != sdkcall.Upstream || r.Status != 403 || !strings.Contains(r.Message, `"authorization":"Bearer [REDACTED]"`) || leaks(r) != "" {
		t.Errorf("an encoded error: %+v", r)
	}
	for _, coding := range []string{"compress", "gzip,compress"} {
		r := callEcho(t, s, "encoded", `[{"coding":"`+coding+`"}]`)
		if r.Fail != sdkcall.Upstream || !strings.Contains(r.Message, `Content-Encoding "compress" is not one the host asked for (gzip, deflate, br, zstd)`) || r.JSON != nil || r.Text != nil {
			t.Errorf("%s: %+v", coding, r)
		}
	}
	before := e.Requests.Load()
	r = callEcho(t, s, "anything", `[{"Accept-Encoding":"identity"}]`)
	if r.Fail != sdkcall.Argument || !strings.Contains(r.Message, "parameter 'Accept-Encoding': the host sets Accept-Encoding itself") || e.Requests.Load() != before {
		t.Errorf("a script's Accept-Encoding: %+v", r)
	}
}

// TestDecompressionBomb: a body that decodes to far more than
// max_response_bytes fails with kind limit, and decoding stops at the
// cap: what the call allocates stays a few times the cap, not the 96 MiB
// the body decodes to.
func TestDecompressionBomb(t *testing.T) {
	e := testecho.New(t)
	const max = 1 << 20
	s := newEchoClient(t, e, Config{MaxResponseBytes: max, MaxCalls: 100}, nil).Session(nil)
	for _, coding := range []string{"gzip", "deflate", "raw-deflate", "br", "zstd", "gzip,gzip"} {
		args := `[{"coding":"` + coding + `","mb":96}]`
		callEcho(t, s, "bomb", args) // the server makes the bomb once
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		r := callEcho(t, s, "bomb", args)
		runtime.ReadMemStats(&after)
		if r.Fail != sdkcall.Limit || !strings.Contains(r.Message, "than max_response_bytes") {
			t.Errorf("%s: %d %s (%d bytes)", coding, r.Fail, r.Message, len(r.Text))
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 32<<20 {
			t.Errorf("%s: the call allocated %d MiB", coding, n>>20)
		}
	}
}

// TestToolResultsRedacted: an MCP server inherits toolscript's
// environment, where auth_env puts an API's credential; its get-env tool
// prints that environment. The script gets the result without the
// credential (the server here has it as PETS_TOKEN, as auth_env would).
func TestToolResultsRedacted(t *testing.T) {
	argv := testupstreams.Everything(t)
	a := newTestAPI(t)
	c, err := open(context.Background(), Config{
		APIs: []APIConfig{{Name: "pets", Spec: testapi.SpecPath(), BaseURL: a.srv.URL, Auth: &Credential{Token: echoSecret}}},
	}, testSources{
		upstreams: []upstream.Config{{Name: "ev", Command: argv[0], Args: argv[1:], Env: map[string]string{"PETS_TOKEN": echoSecret}}},
		stderr:    io.Discard,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := call(t, c.Session(nil), "get_env", `[]`)
	if r.Fail != sdkcall.OK || !strings.Contains(string(r.Text)+string(r.JSON), `"PETS_TOKEN": "[REDACTED]"`) {
		t.Fatalf("get-env: %d %s %.300s%.300s", r.Fail, r.Message, r.Text, r.JSON)
	}
	if got := leaks(r); got != "" {
		t.Errorf("%q of the credential shows in the tool's result", got)
	}
	if strings.Contains(string(r.Text)+string(r.JSON), strings.ReplaceAll(echoSecret, "/", `\/`)) || strings.Contains(string(r.Text)+string(r.JSON), echoSecret) {
		t.Error("the credential shows in the tool's result")
	}
}

// TestToolErrorCut: an MCP tool's error message, cut (by the upstream
// client) through a secret its text echoes, is cut again from the
// redacted text: none of the secret shows, at any cut.
func TestToolErrorCut(t *testing.T) {
	r := redact.New(redact.NewSecret(echoSecret))
	const head = "sdk.ev.fail: "
	text := "denied for Bearer " + echoSecret + " (try again)"
	for n := 1; n < len(text); n++ {
		blocks, _ := json.Marshal([]map[string]string{{"type": "text", "text": text}})
		out := &sdkcall.Response{Fail: sdkcall.Upstream, Message: head + text[:n] + "...", Content: blocks}
		r.Tool(out, "sdk.ev.fail")
		if got := leaks(out); got != "" {
			t.Fatalf("cut at %d: %q of the secret shows in %q", n, got, out.Message)
		}
		if strings.Contains(string(out.Content), echoSecret) || !strings.Contains(string(out.Content), Redacted) {
			t.Fatalf("content %s", out.Content)
		}
	}
}
