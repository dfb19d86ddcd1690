package hosted_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/tests/loadgen"
)

// TestLoad drives /mcp with many authenticated users at once through the
// whole chain (access log, authentication, body cap, rate, a real mcp-go
// server): no request fails, and every response carries its own user.
func TestLoad(t *testing.T) {
	f := newFixture(t, true, 100000, nil)
	const clients = 32
	tokens := make([]string, clients)
	for i := range tokens {
		tokens[i] = f.token(t, fmt.Sprint("user", i%8)) // 8 users, 4 clients each
	}
	rep, err := loadgen.Run(context.Background(), loadgen.Config{
		Target: f.server.URL, Clients: clients, Total: 3000,
		NewClient: func(_ context.Context, c *loadgen.Client) (loadgen.Op, error) {
			want := fmt.Sprintf(`"text":"u.user%d.`, c.ID%8)
			return loadgen.Request(c, func(ctx context.Context, seq int) (*http.Request, error) {
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.BaseURL+"/mcp", strings.NewReader(callWhoami))
				if err != nil {
					return nil, err
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
				req.Header.Set("Authorization", "Bearer "+tokens[c.ID])
				return req, nil
			}, func(resp *http.Response, body []byte) error {
				if resp.StatusCode != 200 {
					return fmt.Errorf("HTTP status %d", resp.StatusCode)
				}
				if !strings.Contains(string(body), want) {
					return fmt.Errorf("response of another user: %.200s", body)
				}
				return nil
			}), nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep)
	if rep.Failed != 0 || rep.Operations != 3000 {
		t.Errorf("%s; errors %v", rep, rep.Errors)
	}
}

// BenchmarkRoundTrip measures one tools/call round trip over loopback
// HTTP from one client: to the mcp-go server alone, and through the whole
// hosted chain with a (cached) token: the difference is what the chain
// costs a request.
func BenchmarkRoundTrip(b *testing.B) {
	f := newFixture(b, true, 1<<30, nil)
	bare := httptest.NewServer(mcpHandler())
	b.Cleanup(bare.Close)
	token := f.token(b, "alice")
	for _, target := range []struct {
		name, url, token string
	}{{"mcp-go", bare.URL, ""}, {"hosted", f.server.URL, token}} {
		b.Run(target.name, func(b *testing.B) {
			client := bare.Client()
			for b.Loop() {
				req, _ := http.NewRequest(http.MethodPost, target.url+"/mcp", strings.NewReader(callWhoami))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
				if target.token != "" {
					req.Header.Set("Authorization", "Bearer "+target.token)
				}
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
		})
	}
}
