package app

import (
	"strings"
	"testing"
)

// TestTracingEnabled: tracing is off unless the OTEL_* environment asks
// for it; OTEL_SDK_DISABLED wins; an exporter or protocol toolscript
// cannot use is an error that names it.
func TestTracingEnabled(t *testing.T) {
	for _, c := range []struct {
		name     string
		env      map[string]string
		on       bool
		protocol string
		err      string
	}{
		{"unset", nil, false, "", ""},
		{"endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true, "http/protobuf", ""},
		{"traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true, "http/protobuf", ""},
		{"exporter otlp", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true, "http/protobuf", ""},
		{"grpc", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, true, "grpc", ""},
		{"traces protocol wins", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, true, "http/protobuf", ""},
		{"none", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}, false, "", ""},
		{"disabled wins", map[string]string{"OTEL_SDK_DISABLED": "TRUE", "OTEL_TRACES_EXPORTER": "otlp"}, false, "", ""},
		{"disabled false", map[string]string{"OTEL_SDK_DISABLED": "false", "OTEL_TRACES_EXPORTER": "otlp"}, true, "http/protobuf", ""},
		{"console", map[string]string{"OTEL_TRACES_EXPORTER": "console"}, false, "", "OTEL_TRACES_EXPORTER=console"},
		{"http/json", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, false, "", "http/protobuf or grpc"},
		{"http/json for traces", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"}, false, "", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/json"},
	} {
		t.Run(c.name, func(t *testing.T) {
			on, protocol, err := tracingEnabled(func(k string) string { return c.env[k] })
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want one naming %q", err, c.err)
				}
				return
			}
			if err != nil || on != c.on || protocol != c.protocol {
				t.Errorf("got %v %q %v, want %v %q", on, protocol, err, c.on, c.protocol)
			}
		})
	}
}

// TestSpanLimitsBounded: the environment may lower the span limits, never
// lift them past toolscript's bounds (-1, no limit, included).
func TestSpanLimitsBounded(t *testing.T) {
	for _, c := range []struct {
		value     string
		length    int
		attrCount int
	}{
		{"", 1024, maxSpanAttributes},
		{"-1", 1024, maxSpanAttributes},
		{"100000", 1024, maxSpanAttributes},
		{"10", 10, 10},
	} {
		t.Run(c.value, func(t *testing.T) {
			t.Setenv("OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", c.value)
			t.Setenv("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", c.value)
			l := spanLimits()
			if l.AttributeValueLengthLimit != c.length || l.AttributeCountLimit != c.attrCount {
				t.Errorf("limits %+v, want length %d count %d", l, c.length, c.attrCount)
			}
		})
	}
}
