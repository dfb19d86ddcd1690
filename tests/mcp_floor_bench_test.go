package tests

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolscript/toolscript/internal/syncbuf"
)

// BenchmarkMCPFloor compares `toolscript serve` with its floor, a bare
// mcp-go server whose execute_script returns the same result without
// running anything (internal/testmcpfloor), in the same run: each server
// is a real process on the other end of a pipe, driven by mcp-go's client
// as an MCP client drives it. What toolscript takes beyond the floor is
// its own cost per call; the client's and the pipes' costs are in both.
//
//   - roundtrip: one call at a time, alternating between the two servers
//     so that both see the same load; the median round trip of each
//     (µs), and toolscript's as a multiple of the floor's (x-floor).
//   - pipelined-N: N calls in flight; the calls per second of each, in
//     alternating batches, and toolscript's time per call as a multiple of
//     the floor's (x-floor).
//
// The targets: a round trip at most 2× the floor's, and at least 3,000
// calls per second pipelined, on 2 cores. Run with:
//
//	go test ./tests -run '^$' -bench MCPFloor -benchtime 3000x
func BenchmarkMCPFloor(b *testing.B) {
	ts, _, tsProcess := mcpClientProcess(b, b.TempDir(), "")
	floor, floorProcess := floorClient(b)
	// Warm up (the compilation cache, the instance pool, the goroutines),
	// and check that both answer the same.
	for _, c := range []*client.Client{ts, floor} {
		for range 200 {
			if err := call1(c); err != nil {
				b.Fatal(err)
			}
		}
	}
	tsResult, err := ts.CallTool(context.Background(), return1)
	if err != nil {
		b.Fatal(err)
	}
	floorResult, err := floor.CallTool(context.Background(), return1)
	if err != nil {
		b.Fatal(err)
	}
	if !bytes.Equal(tsResult.RawStructuredContent, floorResult.RawStructuredContent) || len(floorResult.Content) != 1 {
		b.Fatalf("the floor answers %s, toolscript %s", floorResult.RawStructuredContent, tsResult.RawStructuredContent)
	}

	b.Run("roundtrip", func(b *testing.B) {
		var tsLatency, floorLatency []time.Duration
		for b.Loop() {
			for _, s := range []struct {
				c         *client.Client
				latencies *[]time.Duration
			}{{ts, &tsLatency}, {floor, &floorLatency}} {
				start := time.Now()
				if err := call1(s.c); err != nil {
					b.Fatal(err)
				}
				*s.latencies = append(*s.latencies, time.Since(start))
			}
		}
		tsMedian, floorMedian := median(tsLatency), median(floorLatency)
		b.ReportMetric(float64(tsMedian.Nanoseconds())/1e3, "toolscript-µs")
		b.ReportMetric(float64(floorMedian.Nanoseconds())/1e3, "floor-µs")
		b.ReportMetric(float64(tsMedian)/float64(floorMedian), "x-floor")
		b.ReportMetric(0, "ns/op") // both servers in one op: not meaningful
	})

	for _, inFlight := range []int{16, 64} {
		b.Run(fmt.Sprintf("pipelined-%d", inFlight), func(b *testing.B) {
			// Alternating batches, so that a change of the machine's load
			// falls on both.
			const batch = 500
			var tsTime, floorTime, tsCPU, floorCPU time.Duration
			cpuKnown := true
			for done := 0; done < b.N; done += batch {
				n := min(batch, b.N-done)
				for _, s := range []struct {
					c        *client.Client
					pid      int
					wall, cp *time.Duration
				}{{ts, tsProcess.Process.Pid, &tsTime, &tsCPU}, {floor, floorProcess.Process.Pid, &floorTime, &floorCPU}} {
					before, err := processCPU(s.pid)
					*s.wall += pipelined(b, s.c, inFlight, n)
					after, err2 := processCPU(s.pid)
					cpuKnown = cpuKnown && err == nil && err2 == nil
					*s.cp += after - before
				}
			}
			tsRate, floorRate := float64(b.N)/tsTime.Seconds(), float64(b.N)/floorTime.Seconds()
			b.ReportMetric(tsRate, "toolscript-calls/s")
			b.ReportMetric(floorRate, "floor-calls/s")
			b.ReportMetric(floorRate/tsRate, "x-floor")
			if cpuKnown {
				b.ReportMetric(float64(tsCPU.Microseconds())/float64(b.N), "toolscript-cpu-µs/call")
				b.ReportMetric(float64(floorCPU.Microseconds())/float64(b.N), "floor-cpu-µs/call")
			}
			b.ReportMetric(0, "ns/op")
		})
	}
}

// pipelined makes n calls with inFlight of them in flight at any time,
// and returns how long they took.
func pipelined(b *testing.B, c *client.Client, inFlight, n int) time.Duration {
	var next atomic.Int64
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	start := time.Now()
	for range min(inFlight, n) {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if err := call1(c); err != nil {
					failed.CompareAndSwap(nil, &err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := failed.Load(); err != nil {
		b.Fatal(*err)
	}
	return elapsed
}

var (
	floorOnce   sync.Once
	floorBinary string
	floorErr    error
)

// floorClient starts the floor server (internal/testmcpfloor, built once
// per run beside the toolscript binary) and returns an initialized client
// of it, and its process.
func floorClient(b *testing.B) (*client.Client, *exec.Cmd) {
	b.Helper()
	floorOnce.Do(func() {
		floorBinary = filepath.Join(filepath.Dir(binary), "testmcpfloor")
		build := exec.Command("go", "build", "-o", floorBinary, "../internal/testmcpfloor")
		var out bytes.Buffer
		build.Stdout, build.Stderr = &out, &out
		if err := build.Run(); err != nil {
			floorErr = fmt.Errorf("building internal/testmcpfloor: %w\n%s", err, out.String())
		}
	})
	if floorErr != nil {
		b.Fatal(floorErr)
	}
	stderr := &syncbuf.Buffer{}
	var floor *exec.Cmd
	c := client.NewClient(transport.NewStdioWithOptions(floorBinary, os.Environ(), nil,
		transport.WithCommandFunc(func(ctx context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
			floor = exec.CommandContext(ctx, command, args...)
			floor.Env = env
			return floor, nil
		}),
		transport.WithCommandStderrWriter(stderr)))
	if err := c.Start(context.Background()); err != nil {
		b.Fatalf("starting the floor server: %v", err)
	}
	b.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ClientInfo: mcp.Implementation{Name: "toolscript-tests", Version: "1"},
	}}); err != nil {
		b.Fatalf("initialize: %v (stderr %s)", err, stderr.String())
	}
	return c, floor
}
