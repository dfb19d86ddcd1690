package app_test

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolscript/toolscript/host/app"
	"github.com/toolscript/toolscript/host/config"
	"github.com/toolscript/toolscript/host/contract/telemetry"
	"github.com/toolscript/toolscript/host/serve/mcpserver"
	"github.com/toolscript/toolscript/internal/testapi"
	"github.com/toolscript/toolscript/internal/testclient"
	"github.com/toolscript/toolscript/internal/testotlp"
	"github.com/toolscript/toolscript/internal/testupstreams"
	"github.com/toolscript/toolscript/internal/testwait"
)

// The client's span: its trace and span ids, as a traced client sends
// them (W3C traceparent).
const (
	clientTrace  = "0af7651916cd43dd8448eb211c80319c"
	clientSpan   = "b7ad6b7169203331"
	clientParent = "00-" + clientTrace + "-" + clientSpan + "-01"
	traceToken   = "tok-trace-SECRET-4242"
)

// traceScript makes one OpenAPI call and one MCP upstream call, prints
// the traceparent each upstream saw, and fails with a long message that
// holds the API's credential.
const traceScript = `
local e = sdk.pets.echo({value = "v", q = "query-` + traceToken + `"})
print("api:" .. (e.headers.traceparent or "none"))
print("meta:" .. sdk.py.echo_meta())
error("failed " .. "` + traceToken + `" .. string.rep("x", 5000))
`

// TestTracesReachAnOTLPReceiver: a script with two calls, served over
// stdio (the client's traceparent in _meta, OTLP over http/protobuf, the
// API with propagate_trace) and hosted (the traceparent in the HTTP
// headers, OTLP over gRPC, the API without it), gives a real OTLP
// receiver the tree tools/call execute_script > toolscript.execute >
// {GET /echo/{value}, tools/call echo_meta} under the client's span; the
// API sees the traceparent only with propagate_trace, the MCP upstream
// in its _meta always; no attribute holds the credential or is longer
// than telemetry.MaxValueBytes.
func TestTracesReachAnOTLPReceiver(t *testing.T) {
	for _, c := range []struct {
		name, protocol string
		hosted         bool
		propagate      bool
	}{
		{"stdio over http/protobuf", "http/protobuf", false, true},
		{"hosted over grpc", "grpc", true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			recv := testotlp.Start(t)
			endpoint := recv.HTTPEndpoint
			if c.protocol == "grpc" {
				endpoint = recv.GRPCEndpoint
			}
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", c.protocol)
			t.Setenv("OTEL_TRACES_SAMPLER", "parentbased_always_on")
			t.Setenv("TRACE_TEST_TOKEN", traceToken)
			file := tracedConfig(t, testapi.New(t), c.propagate)
			var logs []string
			if c.hosted {
				logs = callHosted(t, file)
			} else {
				logs = callStdio(t, file)
			}
			spans := recv.WaitFor(t, "the four spans of the call", func(s []testotlp.Span) bool { return len(s) >= 4 })
			checkTree(t, spans, logs, c.propagate)
		})
	}
}

// tracedConfig is the test API (its bearer token from TRACE_TEST_TOKEN)
// and pyserver.
func tracedConfig(t *testing.T, api *testapi.Server, propagate bool) *config.File {
	t.Helper()
	python := testupstreams.Python(t)
	return configFile(t, fmt.Sprintf("[apis.pets]\nspec = %q\nbase_url = %q\nauth_env = \"TRACE_TEST_TOKEN\"\npropagate_trace = %v\n\n"+
		"[mcp_servers.py]\ncommand = %q\nargs = [%q, \"stdio\"]\n", testapi.SpecPath(), api.URL, propagate, python[0], python[1]))
}

// callStdio serves file on stdio, calls traceScript with the client's
// traceparent in _meta, ends the server (which flushes its spans) and
// returns the result's logs.
func callStdio(t *testing.T, file *config.File) []string {
	c, _, stop := startStdio(t, file)
	req := mcp.CallToolRequest{Params: mcp.CallToolParams{Name: mcpserver.ToolName, Arguments: map[string]any{"script": traceScript}}}
	req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{"traceparent": clientParent, "tracestate": "client=1"}}
	logs := callLogs(t, c, req)
	if err := stop(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	return logs
}

// callHosted serves file in the hosted mode, calls traceScript with the
// client's traceparent in the HTTP request's headers, stops the server
// and returns the result's logs.
func callHosted(t *testing.T, file *config.File) []string {
	base, _, stop := startHosted(t, file)
	c, err := testclient.HTTP(t, base+"/mcp", "", transport.WithHTTPHeaders(map[string]string{"traceparent": clientParent}))
	if err != nil {
		t.Fatal(err)
	}
	logs := callLogs(t, c, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: mcpserver.ToolName, Arguments: map[string]any{"script": traceScript}}})
	c.Close()
	if err := stop(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	return logs
}

// callLogs makes the call and returns its result's logs.
func callLogs(t *testing.T, c *client.Client, req mcp.CallToolRequest) []string {
	t.Helper()
	res, err := c.CallTool(testwait.Context(t), req)
	if err != nil {
		t.Fatalf("tools/call: %v", err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out struct {
		Logs  []string `json:"logs"`
		Error struct {
			Kind string `json:"kind"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &out); err != nil || out.Error.Kind != "runtime" || len(out.Logs) != 2 {
		t.Fatalf("result %s, want the two lines and the runtime error", b)
	}
	return out.Logs
}

// checkTree checks the spans of traceScript's call and what the
// upstreams saw.
func checkTree(t *testing.T, spans []testotlp.Span, logs []string, propagate bool) {
	t.Helper()
	byName := map[string]testotlp.Span{}
	for _, s := range spans {
		byName[s.Name] = s
		if s.TraceID != clientTrace {
			t.Errorf("span %s is in trace %s, want the client's %s", s.Name, s.TraceID, clientTrace)
		}
		if s.Service != "toolscript" {
			t.Errorf("span %s of service %q", s.Name, s.Service)
		}
		for k, v := range s.Attributes {
			if strings.Contains(v, traceToken) || len(v) > telemetry.MaxValueBytes {
				t.Errorf("span %s attribute %s = %.100q... (%d bytes): a secret or unbounded", s.Name, k, v, len(v))
			}
		}
		if strings.Contains(s.StatusMessage, traceToken) || len(s.StatusMessage) > telemetry.MaxValueBytes {
			t.Errorf("span %s status %.100q (%d bytes): a secret or unbounded", s.Name, s.StatusMessage, len(s.StatusMessage))
		}
	}
	call, exec := byName[telemetry.SpanExecuteScript], byName[telemetry.SpanExecution]
	api, tool := byName["GET /echo/{value}"], byName["tools/call echo_meta"]
	for _, c := range []struct {
		span   testotlp.Span
		name   string
		parent string
		kind   int
		attrs  map[string]string
	}{
		{call, telemetry.SpanExecuteScript, clientSpan, 2, map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "execute_script",
			"error.type": "runtime", "toolscript.outcome": "error"}},
		{exec, telemetry.SpanExecution, call.SpanID, 1, map[string]string{"toolscript.execution.kind": "run", "error.type": "runtime"}},
		{api, "GET /echo/{value}", exec.SpanID, 3, map[string]string{"http.request.method": "GET", "url.template": "/echo/{value}",
			"http.response.status_code": "200", "server.address": "127.0.0.1", "toolscript.sdk.function": "sdk.pets.echo"}},
		{tool, "tools/call echo_meta", exec.SpanID, 3, map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "echo_meta",
			"toolscript.mcp.server": "py"}},
	} {
		if c.span.SpanID == "" {
			t.Errorf("no span %s among %v", c.name, names(spans))
			continue
		}
		if c.span.ParentSpanID != c.parent || c.span.Kind != c.kind {
			t.Errorf("span %s: parent %s kind %d, want parent %s kind %d", c.name, c.span.ParentSpanID, c.span.Kind, c.parent, c.kind)
		}
		for k, want := range c.attrs {
			if got := c.span.Attributes[k]; got != want {
				t.Errorf("span %s: %s = %q, want %q", c.name, k, got, want)
			}
		}
	}
	if u := api.Attributes["url.full"]; strings.Contains(u, "?") || strings.Contains(u, "query-") || !strings.HasSuffix(u, "/echo/v") {
		t.Errorf("url.full %q, want the URL without its query", u)
	}
	if call.Attributes["jsonrpc.request.id"] == "" {
		t.Errorf("tools/call span without jsonrpc.request.id: %v", call.Attributes)
	}
	wantAPI := "api:none"
	if propagate {
		wantAPI = "api:00-" + clientTrace + "-" + api.SpanID + "-01"
	}
	if logs[0] != wantAPI {
		t.Errorf("the API saw %q, want %q", logs[0], wantAPI)
	}
	if want := "00-" + clientTrace + "-" + tool.SpanID + "-01"; !strings.Contains(logs[1], want) {
		t.Errorf("the MCP upstream's _meta %q, want traceparent %s", logs[1], want)
	}
}

func names(spans []testotlp.Span) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name+"("+s.ParentSpanID+")")
	}
	return out
}

// TestTracesOfRun: `toolscript run` gives the same tree with the
// execution as its root, exported before Run returns; the environment's
// exporter that toolscript cannot use is a usage error.
func TestTracesOfRun(t *testing.T) {
	recv := testotlp.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.HTTPEndpoint)
	t.Setenv("TRACE_TEST_TOKEN", traceToken)
	file := tracedConfig(t, testapi.New(t), true)
	res, err := app.Run(testwait.Context(t), app.RunConfig{File: file, Settings: settings(t, file, config.Run),
		SDK: app.SDKOptions{Stderr: io.Discard}, Source: []byte(traceScript), Version: "test"})
	if err != nil || res.Error == nil || res.Error.Kind != "runtime" || len(res.Logs) != 2 {
		t.Fatalf("result %+v, error %v", res, err)
	}
	spans := recv.WaitFor(t, "the three spans of the run", func(s []testotlp.Span) bool { return len(s) >= 3 })
	var root testotlp.Span
	for _, s := range spans {
		if s.Name == telemetry.SpanExecution {
			root = s
		}
	}
	if root.SpanID == "" || root.ParentSpanID != "" {
		t.Fatalf("execution span %+v, want a root among %v", root, names(spans))
	}
	for _, s := range spans {
		if s.SpanID != root.SpanID && (s.ParentSpanID != root.SpanID || s.TraceID != root.TraceID) {
			t.Errorf("span %s is not the execution's child", s.Name)
		}
		for k, v := range s.Attributes {
			if strings.Contains(v, traceToken) {
				t.Errorf("span %s attribute %s holds the credential", s.Name, k)
			}
		}
	}
	if want := "api:00-" + root.TraceID; !strings.HasPrefix(res.Logs[0], want) {
		t.Errorf("the API saw %q, want the run's trace", res.Logs[0])
	}

	t.Setenv("OTEL_TRACES_EXPORTER", "console")
	_, err = app.Run(testwait.Context(t), app.RunConfig{File: &config.File{}, Settings: settings(t, &config.File{}, config.Run), Source: []byte(`return 1`)})
	if !app.IsUsage(err) || !strings.Contains(err.Error(), "OTEL_TRACES_EXPORTER=console") {
		t.Errorf("error %v, want a usage error naming the exporter", err)
	}
}
