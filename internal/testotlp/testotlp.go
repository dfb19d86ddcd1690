// Package testotlp runs a real OTLP receiver for tests: the OpenTelemetry
// Collector's otlpreceiver, built from tests/otlpsink (a module of its
// own, so that the collector stays out of toolscript's go.mod) and
// started on loopback over gRPC and HTTP. The spans it receives come
// back to the test decoded from OTLP JSON.
package testotlp

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"

	"github.com/toolscript/toolscript/internal/testupstreams"
	"github.com/toolscript/toolscript/internal/testwait"
)

// Span is one span the receiver got: its ids in hex, name, kind (OTLP's
// numbers: 1 internal, 2 server, 3 client), attributes as text and
// status.
type Span struct {
	TraceID, SpanID, ParentSpanID string
	Name                          string
	Kind                          int
	Attributes                    map[string]string
	StatusCode                    int
	StatusMessage                 string
	// Service is the resource's service.name.
	Service string
}

// Receiver is a running OTLP receiver.
type Receiver struct {
	// HTTPEndpoint and GRPCEndpoint are the base URLs an exporter is
	// given (OTEL_EXPORTER_OTLP_ENDPOINT).
	HTTPEndpoint, GRPCEndpoint string

	mu      sync.Mutex
	spans   []Span
	changed chan struct{} // closed and replaced when spans change
	failed  error
}

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// build builds tests/otlpsink once per test binary.
func build(tb testing.TB) string {
	buildOnce.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		dir := filepath.Join(filepath.Dir(file), "..", "..", "tests", "otlpsink")
		out, err := os.MkdirTemp("", "otlpsink")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(out, "otlpsink")
		cmd := exec.Command("go", "build", "-o", binary, ".")
		cmd.Dir = dir
		if msg, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build tests/otlpsink: %v\n%s", err, msg)
		}
	})
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
	return binary
}

// Start builds and starts a receiver; the test's end stops it.
func Start(tb testing.TB) *Receiver {
	tb.Helper()
	bin := build(tb)
	grpcPort, httpPort := testupstreams.FreePort(tb), testupstreams.FreePort(tb)
	cmd := exec.Command(bin, strconv.Itoa(grpcPort), strconv.Itoa(httpPort))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	lines := bufio.NewReader(stdout)
	if line, err := lines.ReadString('\n'); err != nil || line != "ready\n" {
		tb.Fatalf("otlpsink did not start: %q %v", line, err)
	}
	r := &Receiver{
		HTTPEndpoint: fmt.Sprintf("http://127.0.0.1:%d", httpPort),
		GRPCEndpoint: fmt.Sprintf("http://127.0.0.1:%d", grpcPort),
		changed:      make(chan struct{}),
	}
	go r.read(lines)
	return r
}

// read decodes the receiver's lines until it ends.
func (r *Receiver) read(lines *bufio.Reader) {
	for {
		line, err := lines.ReadBytes('\n')
		if len(line) > 0 {
			spans, derr := decode(line)
			r.mu.Lock()
			r.spans = append(r.spans, spans...)
			if derr != nil && r.failed == nil {
				r.failed = derr
			}
			close(r.changed)
			r.changed = make(chan struct{})
			r.mu.Unlock()
		}
		if err != nil {
			if err != io.EOF {
				r.mu.Lock()
				r.failed = err
				r.mu.Unlock()
			}
			return
		}
	}
}

// Spans returns the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// WaitFor waits, as long as the test's context lives, until done holds
// of the spans received, and returns them.
func (r *Receiver) WaitFor(t testing.TB, what string, done func([]Span) bool) []Span {
	t.Helper()
	testwait.OnChange(t, what, func() <-chan struct{} {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.changed
	}, func() bool {
		r.mu.Lock()
		failed := r.failed
		r.mu.Unlock()
		if failed != nil {
			t.Fatalf("otlpsink: %v", failed)
		}
		return done(r.Spans())
	})
	return r.Spans()
}

// The OTLP JSON of a batch, as far as tests read it.
type (
	batch struct {
		ResourceSpans []struct {
			Resource struct {
				Attributes []keyValue `json:"attributes"`
			} `json:"resource"`
			ScopeSpans []struct {
				Spans []struct {
					TraceID      string     `json:"traceId"`
					SpanID       string     `json:"spanId"`
					ParentSpanID string     `json:"parentSpanId"`
					Name         string     `json:"name"`
					Kind         int        `json:"kind"`
					Attributes   []keyValue `json:"attributes"`
					Status       struct {
						Code    int    `json:"code"`
						Message string `json:"message"`
					} `json:"status"`
				} `json:"spans"`
			} `json:"scopeSpans"`
		} `json:"resourceSpans"`
	}
	keyValue struct {
		Key   string          `json:"key"`
		Value json.RawMessage `json:"value"`
	}
)

func decode(line []byte) ([]Span, error) {
	var b batch
	if err := json.Unmarshal(line, &b); err != nil {
		return nil, fmt.Errorf("decoding %q: %w", line, err)
	}
	var out []Span
	for _, rs := range b.ResourceSpans {
		service := attributes(rs.Resource.Attributes)["service.name"]
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				out = append(out, Span{TraceID: s.TraceID, SpanID: s.SpanID, ParentSpanID: s.ParentSpanID, Name: s.Name, Kind: s.Kind,
					Attributes: attributes(s.Attributes), StatusCode: s.Status.Code, StatusMessage: s.Status.Message, Service: service})
			}
		}
	}
	return out, nil
}

// attributes are OTLP key-values as text: a string as it is, any other
// value as its JSON.
func attributes(kvs []keyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		var v map[string]json.RawMessage
		if json.Unmarshal(kv.Value, &v) != nil {
			continue
		}
		for kind, raw := range v {
			var s string
			if kind == "stringValue" && json.Unmarshal(raw, &s) == nil {
				m[kv.Key] = s
			} else {
				var text string
				if json.Unmarshal(raw, &text) == nil {
					m[kv.Key] = text // intValue is a JSON string
				} else {
					m[kv.Key] = string(raw)
				}
			}
		}
	}
	return m
}
