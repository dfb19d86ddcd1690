package tests

import (
	"context"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolscript/toolscript/internal/testspecs"
)

// BenchmarkServeStartGitHub: how long `toolscript serve --api gh=<GitHub's
// spec>` takes, from the process's start to its answer to initialize:
// cold (empty cache directory: the spec parsed, the module compiled) and
// warm (both cached). Targets: ≤ 3 s cold, ≤ 300 ms warm. Each iteration
// starts two processes.
//
//	go test ./tests -run '^$' -bench ServeStartGitHub -benchtime 3x
func BenchmarkServeStartGitHub(b *testing.B) {
	spec := testspecs.GitHub(b)
	start := func(cache string) time.Duration {
		began := time.Now()
		c := client.NewClient(newStdioServe(b, b.TempDir(), []string{"XDG_CACHE_HOME=" + cache}, "--no-io", "--api", "gh="+spec).transport)
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.Start(ctx); err != nil {
			b.Fatal(err)
		}
		if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
			ProtocolVersion: "2025-11-25", ClientInfo: mcp.Implementation{Name: "bench", Version: "1"}}}); err != nil {
			b.Fatal(err)
		}
		return time.Since(began)
	}
	var cold, warm []time.Duration
	for b.Loop() {
		cache := b.TempDir()
		cold = append(cold, start(cache))
		warm = append(warm, start(cache))
	}
	b.ReportMetric(float64(median(cold).Milliseconds()), "cold-ms")
	b.ReportMetric(float64(median(warm).Milliseconds()), "warm-ms")
}
