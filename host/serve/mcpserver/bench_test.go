package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolscript/toolscript/host/contract/telemetry"
	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/host/runtime/result"
	"github.com/toolscript/toolscript/internal/testruntime"
)

// BenchmarkMessageOverhead measures what the core adds to one tools/call
// round trip around mcp-go: decoding the line, the request table, and
// writing the response (here a ready one, to io.Discard).
func BenchmarkMessageOverhead(b *testing.B) {
	s, _, _ := testStdio(b, Config{})
	w := &lineWriter{w: io.Discard}
	line := []byte(`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"execute_script","arguments":{"script":"return 1"}}}`)
	resp := mcp.NewJSONRPCResultResponse(mcp.NewRequestId(12), mcp.NewToolResultText(`{"result":1,"logs":[],"files_touched":[]}`))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		raw := append(json.RawMessage(nil), line...)
		var msg envelope
		if err := json.Unmarshal(raw, &msg); err != nil {
			b.Fatal(err)
		}
		c := s.receive(incoming{ctx: ctx, msg: &msg, raw: raw, conn: w})
		s.respond(c, resp)
		c.cancel()
	}
}

// BenchmarkServe measures Serve over pipes, as a client process sees it
// minus the process boundary: execute_script `return 1` one at a time
// (round-trip), and all sent at once (pipelined; the server reads up to
// 256 ahead). The floor beside it (bare) is mcp-go's own stdio server with
// a tool that returns the same result without running anything.
func BenchmarkServe(b *testing.B) {
	for _, bare := range []bool{false, true} {
		for _, pipelined := range []bool{false, true} {
			name := map[bool]string{false: "toolscript", true: "bare"}[bare] + "/" + map[bool]string{false: "round-trip", true: "pipelined"}[pipelined]
			b.Run(name, func(b *testing.B) { benchServe(b, bare, pipelined, nil) })
		}
	}
}

// benchServe serves (bare: mcp-go's floor) with tracer (nil: tracing
// off) and measures the calls.
func benchServe(b *testing.B, bare, pipelined bool, tracer *telemetry.Tracer) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	if bare {
		s := server.NewMCPServer("bare", "1")
		s.AddTool(mcp.NewTool(ToolName), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return toolResult(&result.Result{Value: json.RawMessage("1")}), nil
		})
		stdio := server.NewStdioServer(s)
		stdio.SetErrorLogger(log.New(io.Discard, "", 0))
		go func() { served <- stdio.Listen(context.Background(), inR, outW) }()
	} else {
		s, err := New(Config{Runtime: testruntime.New(b, luau.Config{PoolSize: 4, Tracer: tracer}), ErrorLog: io.Discard, Tracer: tracer}) // PoolSize as serve
		if err != nil {
			b.Fatal(err)
		}
		go func() { served <- s.Serve(context.Background(), inR, outW) }()
	}
	lines := bufio.NewScanner(outR)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	id := 0
	send := func() {
		id++
		fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"execute_script","arguments":{"script":"return 1"}}}`+"\n", id)
	}
	receive := func() {
		if !lines.Scan() {
			b.Fatal("no response")
		}
		if !bytes.Contains(lines.Bytes(), []byte(`\"result\":1`)) {
			b.Fatalf("response %s", lines.Bytes())
		}
	}
	for range 200 { // warm up
		send()
		receive()
	}
	latencies := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	if pipelined {
		go func() {
			for range b.N {
				send()
			}
		}()
		for range b.N {
			receive()
		}
	} else {
		for range b.N {
			start := time.Now()
			send()
			receive()
			latencies = append(latencies, time.Since(start))
		}
	}
	b.StopTimer()
	if pipelined {
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
	} else {
		slices.Sort(latencies)
		b.ReportMetric(float64(latencies[len(latencies)/2].Microseconds()), "median-µs")
	}
	inW.Close()
	go func() { _, _ = io.Copy(io.Discard, outR) }()
	<-served
}

// BenchmarkArgumentsPath: what a tools/call's arguments cost from mcp-go's
// decoding of the request to the checked arguments.
func BenchmarkArgumentsPath(b *testing.B) {
	for _, n := range []int{8, 64 << 10} {
		line := []byte(`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"execute_script","arguments":{"script":"return 1 --` + strings.Repeat("x", n) + `","timeout_ms":1000}}}`)
		b.Run(map[int]string{8: "small", 64 << 10: "64KiB"}[n], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var req mcp.CallToolRequest
				if err := json.Unmarshal(line, &req); err != nil {
					b.Fatal(err)
				}
				if _, err := parseArguments(req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
