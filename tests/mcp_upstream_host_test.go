package tests

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolscript/toolscript/host/app"
	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/host/runtime/result"
	"github.com/toolscript/toolscript/host/sdk"
	"github.com/toolscript/toolscript/host/sdk/upstream"
	"github.com/toolscript/toolscript/internal/testruntime"
	"github.com/toolscript/toolscript/internal/testupstreams"
)

// openUpstreams opens an sdk client with one stdio upstream and a runtime
// whose sdk table has its tools.
func openUpstreams(tb testing.TB, name string, argv []string) (*sdk.Client, *luau.Runtime) {
	tb.Helper()
	ctx := context.Background()
	c, err := app.NewSDK(ctx, sdk.Config{MaxCalls: 100000}, []upstream.Config{{Name: name, Command: argv[0], Args: argv[1:]}}, app.SDKOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Close)
	m := c.Manifest()
	return c, testruntime.New(tb, luau.Config{SDK: &m, PoolSize: 8})
}

func TestUpstreamConcurrentExecutions(t *testing.T) {
	// 8 executions, each with its own session, call one upstream at once:
	// each call waits until all 8 are in flight, which a connection
	// serialised per server would never deliver.
	c, rt := openUpstreams(t, "py", testupstreams.Python(t))
	results := make([]*result.Result, 8)
	var wg sync.WaitGroup
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = rt.Execute(context.Background(), luau.Script{
				Source: []byte(`return sdk.py.gather({ key = "k", n = 8 })`),
				SDK:    c.Session(nil),
			})
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r.Error != nil || string(r.Value) != `"8 together"` {
			t.Errorf("execution %d: %s %+v", i, r.Value, r.Error)
		}
	}
}

// BenchmarkUpstreamCalls compares a script making 1,000 sequential calls
// to server-everything's echo (stdio) with 1,000 calls of the same tool
// made directly with mcp-go's client from Go, against two instances of the
// same server. Reported: the median over iterations of the cost per call
// of each, and of the difference (what toolscript adds per call).
func BenchmarkUpstreamCalls(b *testing.B) {
	const calls = 1000
	argv := testupstreams.Everything(b)
	c, rt := openUpstreams(b, "ev", argv)
	ctx := context.Background()
	direct, err := client.NewStdioMCPClient(argv[0], nil, argv[1:]...)
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()
	if _, err := direct.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		b.Fatal(err)
	}
	script := []byte(fmt.Sprintf(`for i = 1, %d do sdk.ev.echo({ message = "x" }) end`, calls))
	req := mcp.CallToolRequest{}
	req.Params.Name = "echo"
	req.Params.Arguments = map[string]any{"message": "x"}
	var directs, scripts, added []float64
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		for range calls {
			if _, err := direct.CallTool(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
		d := float64(time.Since(start).Microseconds()) / calls
		start = time.Now()
		r := rt.Execute(ctx, luau.Script{Source: script, SDK: c.Session(nil)})
		s := float64(time.Since(start).Microseconds()) / calls
		if r.Error != nil {
			b.Fatal(r.Error)
		}
		directs, scripts, added = append(directs, d), append(scripts, s), append(added, s-d)
	}
	b.ReportMetric(median(directs), "direct-µs/call")
	b.ReportMetric(median(scripts), "script-µs/call")
	b.ReportMetric(median(added), "added-µs/call")
}
