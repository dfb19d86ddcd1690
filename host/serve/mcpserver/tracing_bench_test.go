package mcpserver

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/toolscript/toolscript/host/contract/redact"
	"github.com/toolscript/toolscript/host/contract/telemetry"
	"github.com/toolscript/toolscript/internal/testotlp"
)

// BenchmarkTracing measures an execute_script round trip over Serve
// (`return 1`, one call at a time) with tracing off (no Tracer), on with
// a sampler that drops every span (NeverSample: spans are started, not
// recorded), and on with every span exported over OTLP/HTTP in batches to
// a real receiver (the Collector's otlpreceiver).
func BenchmarkTracing(b *testing.B) {
	b.Run("off", func(b *testing.B) { benchServe(b, false, false, nil) })
	b.Run("dropped", func(b *testing.B) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()))
		defer tp.Shutdown(context.Background())
		benchServe(b, false, false, telemetry.New(tp, redact.New(), "bench"))
	})
	b.Run("exported", func(b *testing.B) {
		recv := testotlp.Start(b)
		exporter, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(recv.HTTPEndpoint+"/v1/traces"))
		if err != nil {
			b.Fatal(err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter))
		defer tp.Shutdown(context.Background())
		benchServe(b, false, false, telemetry.New(tp, redact.New(), "bench"))
	})
}
