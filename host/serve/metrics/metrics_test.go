package metrics_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/toolscript/toolscript/host/runtime/result"
	"github.com/toolscript/toolscript/host/serve/metrics"
)

func TestMetrics(t *testing.T) {
	m := metrics.New([]string{"missing", "expired"})
	done := m.Start()
	if got := gauge(t, m, "toolscript_executions_in_flight"); got != 1 {
		t.Errorf("in flight %v during an execution, want 1", got)
	}
	done(&result.Result{})
	m.Start()(&result.Result{Error: &result.Error{Kind: result.Timeout, Message: "x"}})
	m.Start()(&result.Result{Error: &result.Error{Kind: result.Timeout, Message: "x"}})
	m.Start()(&result.Result{Error: &result.Error{Kind: "made-up", Message: "x"}})
	m.Start()(&result.Result{Error: &result.Error{Kind: "made-up", Message: "x"}})
	m.Start()(nil) // paused for a person's answer
	m.Execution(&result.Result{}, 3*time.Second)
	m.UpstreamCall("github", metrics.HTTPStatus(404))
	m.UpstreamCall("github", metrics.HTTPStatus(0))
	m.UpstreamCall("search", "tool_error")
	m.AuthFailure("expired")
	m.AuthFailure("expired")
	m.Refused(metrics.LimitRate)

	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type %q", ct)
	}
	body, _ := io.ReadAll(resp.Body)
	text := string(body)

	want := []string{
		`toolscript_executions_total{kind="",outcome="ok"} 2`,
		`toolscript_executions_total{kind="timeout",outcome="error"} 2`,
		`toolscript_executions_total{kind="internal",outcome="error"} 2`,
		`toolscript_executions_in_flight 0`,
		`toolscript_execution_duration_seconds_count{outcome="ok"} 2`,
		`toolscript_execution_duration_seconds_count{outcome="error"} 4`,
		`toolscript_executions_total{kind="",outcome="input_required"} 1`,
		`toolscript_execution_duration_seconds_bucket{outcome="ok",le="5"} 2`,
		`toolscript_execution_duration_seconds_bucket{outcome="ok",le="2.5"} 1`,
		`toolscript_upstream_calls_total{source="github",status="4xx"} 1`,
		`toolscript_upstream_calls_total{source="github",status="error"} 1`,
		`toolscript_upstream_calls_total{source="search",status="tool_error"} 1`,
		`toolscript_auth_failures_total{reason="expired"} 2`,
		`toolscript_auth_failures_total{reason="missing"} 0`,
		`toolscript_limit_refusals_total{limit="rate"} 1`,
		`toolscript_limit_refusals_total{limit="user_slots"} 0`,
		`go_goroutines `,
		`process_resident_memory_bytes `,
	}
	// Every error kind has its series from the start: the kinds come from
	// result.Kinds, the one list.
	for _, k := range result.Kinds {
		want = append(want, `toolscript_executions_total{kind="`+string(k)+`",outcome="error"} `)
	}
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("the metrics lack %q", w)
		}
	}
	if strings.Contains(text, "made-up") {
		t.Error("an unknown kind became a label value")
	}
}

// TestOwnRegistry: two Metrics do not share series, and the global
// registry is untouched.
func TestOwnRegistry(t *testing.T) {
	a, b := metrics.New(nil), metrics.New(nil)
	a.AuthFailure("x")
	if n := testutil.CollectAndCount(b.Registry(), "toolscript_auth_failures_total"); n != 0 {
		t.Errorf("b has %d auth failure series", n)
	}
	if n := testutil.CollectAndCount(a.Registry(), "toolscript_auth_failures_total"); n != 1 {
		t.Errorf("a has %d auth failure series, want 1", n)
	}
}

func TestNil(t *testing.T) {
	var m *metrics.Metrics
	m.Start()(&result.Result{})
	m.Execution(nil, 0)
	m.UpstreamCall("a", "b")
	m.AuthFailure("a")
	m.Refused("rate")
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 404 {
		t.Errorf("nil Metrics' handler: %d", rec.Code)
	}
}

func TestHTTPStatus(t *testing.T) {
	for code, want := range map[int]string{0: "error", 99: "error", 100: "1xx", 200: "2xx", 204: "2xx", 301: "3xx", 404: "4xx", 599: "5xx", 600: "error", -1: "error"} {
		if got := metrics.HTTPStatus(code); got != want {
			t.Errorf("HTTPStatus(%d) = %q, want %q", code, got, want)
		}
	}
}

func gauge(t *testing.T, m *metrics.Metrics, name string) float64 {
	t.Helper()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}
