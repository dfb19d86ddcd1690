// Command otlpsink is a real OTLP receiver for toolscript's trace tests:
// the OpenTelemetry Collector's otlpreceiver (its Go modules, one
// release), listening on loopback over gRPC and HTTP, which writes every
// batch of spans it receives as one line of OTLP JSON on standard output.
// It is a module of its own so that the collector's dependencies stay out
// of toolscript's go.mod; internal/testotlp builds and runs it.
//
//	otlpsink GRPC_PORT HTTP_PORT
//
// It prints "ready" once both listen, and runs until its standard input
// closes.
package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"sync"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "otlpsink:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) != 3 {
		return fmt.Errorf("usage: otlpsink GRPC_PORT HTTP_PORT")
	}
	ctx := context.Background()
	factory := otlpreceiver.NewFactory()
	cfg := factory.CreateDefaultConfig().(*otlpreceiver.Config)
	cfg.Protocols.GRPC.GetOrInsertDefault().NetAddr.Endpoint = "127.0.0.1:" + os.Args[1]
	cfg.Protocols.HTTP.GetOrInsertDefault().ServerConfig.NetAddr.Endpoint = "127.0.0.1:" + os.Args[2]
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	var marshaler ptrace.JSONMarshaler
	sink, err := consumer.NewTraces(func(_ context.Context, td ptrace.Traces) error {
		b, err := marshaler.MarshalTraces(td)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		out.Write(b)
		out.WriteByte('\n')
		return out.Flush()
	})
	if err != nil {
		return err
	}
	recv, err := factory.CreateTraces(ctx, receivertest.NewNopSettings(factory.Type()), cfg, sink)
	if err != nil {
		return err
	}
	if err := recv.Start(ctx, componenttest.NewNopHost()); err != nil {
		return err
	}
	defer recv.Shutdown(ctx)
	mu.Lock()
	fmt.Fprintln(out, "ready")
	out.Flush()
	mu.Unlock()
	io.Copy(io.Discard, os.Stdin)
	return nil
}
