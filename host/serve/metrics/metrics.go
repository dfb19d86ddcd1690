// Package metrics holds the hosted mode's Prometheus metrics (docs/hosted.md:
// executions by outcome and error kind, their duration, how many are in
// flight, upstream calls by source and status, authentication failures,
// and refusals by the limits) and serves them at /metrics in the
// Prometheus text format, with github.com/prometheus/client_golang.
//
// A Metrics has a registry of its own (never the library's global one),
// which also holds the Go runtime and process collectors. Every method
// does nothing on a nil *Metrics, so callers need no checks when metrics
// are off.
package metrics

import (
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/toolscript/toolscript/host/runtime/result"
)

// Namespace prefixes every metric's name.
const Namespace = "toolscript"

// The outcomes of an execution (label "outcome"); a failure's kind is
// label "kind", one of result.Kinds ("" for ok).
const (
	OutcomeOK    = "ok"
	OutcomeError = "error"
	// OutcomePaused: the call ended with input_required, its execution
	// waiting for a person's answer (a rule asked); the retry that
	// carries the answer counts as an execution of its own.
	OutcomePaused = "input_required"
)

// The limits a request can be refused by (label "limit").
const (
	LimitRate         = "rate"
	LimitUserSlots    = "user_slots"
	LimitOverallSlots = "overall_slots"
	// LimitConnections and LimitClientConnections refuse connections (with
	// 503) over the cap on open connections, in all and of one client.
	LimitConnections       = "connections"
	LimitClientConnections = "client_connections"
	// LimitUnwrittenBytes drops an execution's result whose response
	// its user's unwritten responses leave no room for.
	LimitUnwrittenBytes = "unwritten_bytes"
	// LimitRequestBytes refuses a request (429, 413 or 503) that the
	// weight of its user's requests being handled, or of everyone's,
	// leaves no room for.
	LimitRequestBytes = "request_bytes"
	// LimitAuthFailures refuses a request (429) from a client address
	// past its bound on failed authentications, before its token is
	// checked.
	LimitAuthFailures = "auth_failures"
)

// durationBuckets are the upper bounds, in seconds, of the execution
// duration histogram: from a warm `return 1` (about 100 µs) to the longest
// timeout (5 minutes).
var durationBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// Metrics are the hosted mode's metrics.
type Metrics struct {
	registry     *prometheus.Registry
	executions   *prometheus.CounterVec
	duration     *prometheus.HistogramVec
	inFlight     prometheus.Gauge
	upstream     *prometheus.CounterVec
	authFailures *prometheus.CounterVec
	refusals     *prometheus.CounterVec
}

// New returns Metrics in a registry of their own. authReasons are the
// reasons authentication can fail (auth.Reasons), whose series start at
// zero.
func New(authReasons []string) *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		executions: counter("executions_total",
			"Script executions finished, by outcome (ok, error) and error kind.", "outcome", "kind"),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "execution_duration_seconds",
			Help:    "Wall-clock time of script executions, by outcome.",
			Buckets: durationBuckets,
		}, []string{"outcome"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "executions_in_flight",
			Help: "Script executions running now.",
		}),
		upstream: counter("upstream_calls_total",
			"Calls scripts made to upstream APIs and MCP servers, by source and status.", "source", "status"),
		authFailures: counter("auth_failures_total",
			"Requests refused by authentication, by reason.", "reason"),
		refusals: counter("limit_refusals_total",
			"Requests refused by a limit: the rate per user, execution slots per user or overall, open connections overall or per client, failed authentications per client, or the bytes of requests and responses.", "limit"),
	}
	m.registry.MustRegister(
		m.executions, m.duration, m.inFlight, m.upstream, m.authFailures, m.refusals,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	// Series that exist from the start, so that rates and alerts see zeros
	// rather than nothing.
	m.executions.WithLabelValues(OutcomeOK, "")
	m.duration.WithLabelValues(OutcomeOK)
	m.duration.WithLabelValues(OutcomeError)
	for _, k := range result.Kinds {
		m.executions.WithLabelValues(OutcomeError, string(k))
	}
	for _, r := range authReasons {
		m.authFailures.WithLabelValues(r)
	}
	for _, l := range []string{LimitRate, LimitUserSlots, LimitOverallSlots, LimitConnections, LimitClientConnections, LimitUnwrittenBytes, LimitRequestBytes, LimitAuthFailures} {
		m.refusals.WithLabelValues(l)
	}
	return m
}

// counter is a counter of the namespace named name, with help and labels.
func counter(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}, labels)
}

// Registry returns the registry, to add collectors to it (nil for nil
// Metrics).
func (m *Metrics) Registry() *prometheus.Registry {
	if m == nil {
		return nil
	}
	return m.registry
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	if m == nil {
		return http.NotFoundHandler()
	}
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry})
}

// Start counts an execution in flight and returns the function that ends
// it with its result (nil: it paused for a person's answer,
// OutcomePaused).
func (m *Metrics) Start() (done func(*result.Result)) {
	if m == nil {
		return func(*result.Result) {}
	}
	start := time.Now()
	m.inFlight.Inc()
	return func(res *result.Result) {
		m.inFlight.Dec()
		m.Execution(res, time.Since(start))
	}
}

// Execution counts a finished execution that took d (nil: one that
// paused for a person's answer).
func (m *Metrics) Execution(res *result.Result, d time.Duration) {
	if m == nil {
		return
	}
	outcome, kind := OutcomeOK, ""
	switch {
	case res == nil:
		outcome = OutcomePaused
	case res.Failed():
		outcome, kind = OutcomeError, string(res.Error.Kind)
		if !slices.Contains(result.Kinds, res.Error.Kind) {
			kind = string(result.Internal) // keeps the label's values to the known kinds
		}
	}
	m.executions.WithLabelValues(outcome, kind).Inc()
	m.duration.WithLabelValues(outcome).Observe(d.Seconds())
}

// UpstreamCall counts a call to an upstream: source is the name of the
// API or MCP server it was configured with; status is HTTPStatus of the
// response, or for an MCP upstream "ok", "tool_error" or "error".
func (m *Metrics) UpstreamCall(source, status string) {
	if m == nil {
		return
	}
	m.upstream.WithLabelValues(source, status).Inc()
}

// HTTPStatus is the status label of an HTTP upstream call: the status
// code's class ("2xx" ... "5xx"), or "error" when no response came (code
// 0) or the code is out of range.
func HTTPStatus(code int) string {
	if code < 100 || code > 599 {
		return "error"
	}
	return strconv.Itoa(code/100) + "xx"
}

// AuthFailure counts a request refused by authentication.
func (m *Metrics) AuthFailure(reason string) {
	if m == nil {
		return
	}
	m.authFailures.WithLabelValues(reason).Inc()
}

// Refused counts a request refused by a limit (LimitRate,
// LimitUserSlots, LimitOverallSlots, LimitUnwrittenBytes,
// LimitRequestBytes, LimitAuthFailures), or a
// connection (LimitConnections, LimitClientConnections).
func (m *Metrics) Refused(limit string) {
	if m == nil {
		return
	}
	m.refusals.WithLabelValues(limit).Inc()
}
