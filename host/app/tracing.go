package app

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/toolscript/toolscript/host/contract/redact"
	"github.com/toolscript/toolscript/host/contract/telemetry"
)

// OpenTelemetry traces (host/contract/telemetry): the one provider of a
// process, made from the standard OTEL_* environment, and its flush.
//
// Tracing is on when OTEL_SDK_DISABLED is not "true" and either
// OTEL_TRACES_EXPORTER is "otlp", or OTEL_TRACES_EXPORTER is unset and
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is
// set. OTEL_TRACES_EXPORTER=none is off; another exporter is an error.
// The protocol is OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else
// OTEL_EXPORTER_OTLP_PROTOCOL: http/protobuf (the default) or grpc. The
// OpenTelemetry SDK reads the rest itself: the endpoint, headers,
// timeout and TLS of the exporter, the sampler (OTEL_TRACES_SAMPLER and
// its argument), the batching (OTEL_BSP_*), the resource
// (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES).

// Span bounds of the provider: no attribute value longer than
// telemetry.MaxValueBytes (whatever the environment asks), at most
// maxSpanAttributes attributes and maxSpanEvents events a span.
const (
	maxSpanAttributes = 32
	maxSpanEvents     = 16
)

// spanLimits are the SDK's limits from the environment
// (OTEL_SPAN_*_LIMIT), none above toolscript's bounds: a negative value
// (no limit) is the bound too.
func spanLimits() sdktrace.SpanLimits {
	limits := sdktrace.NewSpanLimits()
	limits.AttributeValueLengthLimit = bounded(limits.AttributeValueLengthLimit, telemetry.MaxValueBytes)
	limits.AttributeCountLimit = bounded(limits.AttributeCountLimit, maxSpanAttributes)
	limits.EventCountLimit = bounded(limits.EventCountLimit, maxSpanEvents)
	limits.LinkCountLimit = bounded(limits.LinkCountLimit, maxSpanEvents)
	limits.AttributePerEventCountLimit = bounded(limits.AttributePerEventCountLimit, maxSpanAttributes)
	limits.AttributePerLinkCountLimit = bounded(limits.AttributePerLinkCountLimit, maxSpanAttributes)
	return limits
}

// bounded is n at most bound, bound when n is negative (unlimited).
func bounded(n, bound int) int {
	if n < 0 || n > bound {
		return bound
	}
	return n
}

// flushTimeout bounds the export of the spans left when a command ends.
const flushTimeout = 5 * time.Second

// tracing is a process's traces: its Tracer (nil when tracing is off)
// and the provider that exports them.
type tracing struct {
	tracer   *telemetry.Tracer
	provider *sdktrace.TracerProvider
}

// tracingEnabled reads the rule above: whether tracing is on, and the
// OTLP protocol.
func tracingEnabled(getenv func(string) string) (on bool, protocol string, err error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false, "", nil
	}
	switch exporter := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))); exporter {
	case "none":
		return false, "", nil
	case "":
		if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
			return false, "", nil
		}
	case "otlp":
	default:
		return false, "", fmt.Errorf("OTEL_TRACES_EXPORTER=%s: toolscript exports traces over OTLP only: set it to otlp or none", exporter)
	}
	variable := "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	protocol = strings.TrimSpace(getenv(variable))
	if protocol == "" {
		variable = "OTEL_EXPORTER_OTLP_PROTOCOL"
		protocol = strings.TrimSpace(getenv(variable))
	}
	switch protocol {
	case "", "http/protobuf":
		return true, "http/protobuf", nil
	case "grpc":
		return true, "grpc", nil
	}
	return false, "", fmt.Errorf("%s=%s: toolscript exports OTLP over http/protobuf or grpc", variable, protocol)
}

// openTracing makes the process's tracing from the environment: off (a
// zero tracing) unless it asks for it. Every attribute value passes
// redactor.
func openTracing(ctx context.Context, getenv func(string) string, version string, redactor *redact.Redactor) (tracing, error) {
	on, protocol, err := tracingEnabled(getenv)
	if err != nil || !on {
		return tracing{}, err
	}
	var exporter *otlptrace.Exporter
	if protocol == "grpc" {
		exporter, err = otlptracegrpc.New(ctx)
	} else {
		exporter, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return tracing{}, fmt.Errorf("OpenTelemetry exporter (%s): %w", protocol, err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName("toolscript"), semconv.ServiceVersion(version)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return tracing{}, fmt.Errorf("OpenTelemetry resource (OTEL_RESOURCE_ATTRIBUTES): %w", err)
	}
	provider := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res), sdktrace.WithRawSpanLimits(spanLimits()))
	return tracing{tracer: telemetry.New(provider, redactor, version), provider: provider}, nil
}

// shutdown exports the spans not yet exported and stops the provider,
// within flushTimeout.
func (t tracing) shutdown() {
	if t.provider == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	_ = t.provider.Shutdown(ctx) // what cannot be exported by then is lost: the command's result is not
}

// exporterHeaderVariables are the variables whose headers the trace
// exporter sends to its receiver: the receiver's credentials, commonly.
var exporterHeaderVariables = []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"}

// exporterSecrets treats the trace exporter's headers as the
// configuration's own credentials: their variables are withheld from the
// MCP servers toolscript starts, and each header's value (as written and
// as decoded) is a secret of the redactor.
func exporterSecrets(getenv func(string) string, setup *sdkSetup) {
	for _, name := range exporterHeaderVariables {
		text := getenv(name)
		if text == "" {
			continue
		}
		setup.withheldEnv = append(setup.withheldEnv, name)
		for _, pair := range strings.Split(text, ",") {
			_, value, ok := strings.Cut(pair, "=")
			if !ok {
				continue
			}
			value = strings.TrimSpace(value)
			setup.cfg.Secrets = append(setup.cfg.Secrets, redact.NewSecret(value))
			if decoded, err := url.PathUnescape(value); err == nil && decoded != value {
				setup.cfg.Secrets = append(setup.cfg.Secrets, redact.NewSecret(decoded))
			}
		}
	}
}
