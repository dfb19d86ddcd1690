package tests

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// The performance targets of `toolscript serve`: a client calling
// execute_script with `return 1` over stdio gets its answer in at most 1 ms
// (median), and with 8 calls in flight the server completes at least 1,000
// per second. Run with:
//
//	go test ./tests -run '^$' -bench MCP -benchtime 3000x

var return1 = mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "execute_script", Arguments: map[string]any{"script": "return 1"}}}

func benchClient(b *testing.B, args ...string) *client.Client {
	b.Helper()
	c, _ := mcpClient(b, b.TempDir(), "", args...)
	// Warm up: the compilation cache, the instance pool, the goroutines.
	for range 200 {
		if err := call1(c); err != nil {
			b.Fatal(err)
		}
	}
	return c
}

func call1(c *client.Client) error {
	res, err := c.CallTool(context.Background(), return1)
	if err != nil {
		return fmt.Errorf("execute_script: %w", err)
	}
	if res.IsError {
		return fmt.Errorf("execute_script failed: %+v", res.Content)
	}
	return nil
}

// BenchmarkMCPRoundTrip measures one call at a time and reports the median.
func BenchmarkMCPRoundTrip(b *testing.B) {
	c := benchClient(b)
	latencies := make([]time.Duration, 0, b.N)
	for b.Loop() {
		start := time.Now()
		if err := call1(c); err != nil {
			b.Fatal(err)
		}
		latencies = append(latencies, time.Since(start))
	}
	slices.Sort(latencies)
	median := latencies[len(latencies)/2]
	p99 := latencies[len(latencies)*99/100]
	b.ReportMetric(float64(median.Microseconds()), "median-µs")
	b.ReportMetric(float64(p99.Microseconds()), "p99-µs")
	if b.N < 100 {
		return // the benchmark's trial run
	}
	b.Logf("execute_script `return 1` over stdio, one at a time: median round trip %s, p99 %s (%d calls; target: median <= 1ms)",
		median.Round(time.Microsecond), p99.Round(time.Microsecond), len(latencies))
}

// BenchmarkMCPThroughput8 keeps 8 calls in flight and reports executions per
// second.
func BenchmarkMCPThroughput8(b *testing.B) {
	c := benchClient(b, "--max-concurrent", "8")
	const inFlight = 8
	b.ResetTimer()
	elapsed := pipelined(b, c, inFlight, b.N)
	b.StopTimer()
	perSecond := float64(b.N) / elapsed.Seconds()
	b.ReportMetric(perSecond, "calls/s")
	if b.N < 100 {
		return // the benchmark's trial run
	}
	b.Logf("execute_script `return 1` over stdio, 8 in flight: %.0f executions per second (%d calls in %s; target: >= 1000/s)",
		perSecond, b.N, elapsed.Round(time.Millisecond))
}
