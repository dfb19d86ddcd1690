package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolscript/toolscript/host/luau"
	"github.com/toolscript/toolscript/internal/testruntime"
)

// BenchmarkMessageOverhead measures what the core adds to one tools/call
// round trip around mcp-go: decoding the line, the request table, and
// writing the response (here a ready one, to io.Discard).
func BenchmarkMessageOverhead(b *testing.B) {
	s, _, _ := testStdio(b)
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
// 256 ahead).
func BenchmarkServe(b *testing.B) {
	for _, pipelined := range []bool{false, true} {
		b.Run(map[bool]string{false: "round-trip", true: "pipelined"}[pipelined], func(b *testing.B) {
			s, err := New(Config{Runtime: testruntime.New(b, luau.Config{PoolSize: 4}), ErrorLog: io.Discard}) // PoolSize as serve
			if err != nil {
				b.Fatal(err)
			}
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			served := make(chan error, 1)
			go func() { served <- s.Serve(context.Background(), inR, outW) }()
			lines := bufio.NewScanner(outR)
			lines.Buffer(make([]byte, 1<<20), 1<<20)
			id := 0
			send := func() {
				id++
				fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"execute_script","arguments":{"script":"return 1"}}}`+"\n", id)
			}
			call := func() {
				send()
				if !lines.Scan() {
					b.Fatal("no response")
				}
			}
			for range 200 { // warm up
				call()
			}
			b.ResetTimer()
			if pipelined {
				go func() {
					for range b.N {
						send()
					}
				}()
				for range b.N {
					if !lines.Scan() {
						b.Fatal("no response")
					}
				}
			} else {
				for range b.N {
					call()
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
			inW.Close()
			go io.Copy(io.Discard, outR)
			<-served
		})
	}
}
