package tests

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolscript/toolscript/internal/testclient"
	"github.com/toolscript/toolscript/internal/testfile"
	"github.com/toolscript/toolscript/internal/testupstreams"
	"github.com/toolscript/toolscript/internal/testwait"
)

// gatewayClient starts `toolscript serve ARGS` (over stdio, or hosted
// HTTP) and returns an initialized mcp-go client made with opts, on
// protocol 2025-11-25: the last revision with requests from server to
// client.
func gatewayClient(t *testing.T, over string, opts []client.ClientOption, args ...string) *client.Client {
	t.Helper()
	opts = append(opts, client.WithProtocolVersion("2025-11-25"))
	var tr transport.Interface
	if over == "stdio" {
		tr = newStdioServe(t, t.TempDir(), nil, args...).transport
	} else {
		var err error
		tr, err = transport.NewStreamableHTTP(startServe(t, t.TempDir(), args...).url)
		if err != nil {
			t.Fatal(err)
		}
	}
	c := client.NewClient(tr, opts...)
	if _, err := testclient.Start(t, c, ""); err != nil {
		t.Fatal(err)
	}
	return c
}

// sampler answers sampling requests like a client with a model would,
// repeating the prompt it got, and counts them.
type sampler struct{ calls atomic.Int32 }

func (s *sampler) CreateMessage(_ context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	s.calls.Add(1)
	prompt := ""
	if len(req.Messages) > 0 {
		if tc, ok := req.Messages[0].Content.(mcp.TextContent); ok {
			prompt = tc.Text
		}
	}
	return &mcp.CreateMessageResult{
		SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent("the test client sampled: " + prompt)},
		Model:           "test-model",
		StopReason:      "endTurn",
	}, nil
}

type elicitor struct{}

func (elicitor) Elicit(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
		Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"name": "Ada Lovelace"}}}, nil
}

type rooter struct{}

func (rooter) ListRoots(context.Context, mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	return &mcp.ListRootsResult{Roots: []mcp.Root{{URI: "file:///srv/toolscript-test-root", Name: "test root"}}}, nil
}

// relayScript runs a script through execute_script and returns its result
// or error message.
func relayScript(t *testing.T, c *client.Client, script string) (result, errMessage string) {
	t.Helper()
	_, out := callScript(t, testwait.Context(t), c, map[string]any{"script": script})
	if out.Error != nil {
		return "", out.Error.Message
	}
	return string(out.Result), ""
}

// TestGatewayRelaysRequests: server-everything's sampling, elicitation and
// roots tools are listed under serve, and their requests reach the client
// whose execute_script call runs the tool, which answers them: the
// upstream's result carries the client's answer. Over stdio and hosted
// HTTP, from a stdio upstream and a streamable HTTP one (whose requests
// arrive on the stream of the tools/call they serve).
func TestGatewayRelaysRequests(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	for _, tc := range []struct{ over, upstream string }{{"stdio", "stdio"}, {"http", "stdio"}, {"stdio", "http"}} {
		t.Run(tc.over+" client, "+tc.upstream+" upstream", func(t *testing.T) {
			over := tc.over
			ev := "--mcp=ev=" + testupstreams.Shell(testupstreams.Everything(t))
			if tc.upstream == "http" {
				ev = "--mcp=ev=" + testupstreams.EverythingHTTP(t)
			}
			s := &sampler{}
			c := gatewayClient(t, over, []client.ClientOption{
				client.WithSamplingHandler(s), client.WithElicitationHandler(elicitor{}), client.WithRootsHandler(rooter{}),
			}, "--no-io", ev)
			res, msg := relayScript(t, c, `return sdk.ev.trigger_sampling_request({ prompt = "hello from a script" })`)
			if !strings.Contains(res, "the test client sampled: Resource trigger-sampling-request context: hello from a script") {
				t.Errorf("sampling: result %s, error %q", res, msg)
			}
			if s.calls.Load() != 1 {
				t.Errorf("the client was asked %d times for sampling", s.calls.Load())
			}
			res, msg = relayScript(t, c, `return sdk.ev.trigger_elicitation_request()`)
			if !strings.Contains(res, "Ada Lovelace") {
				t.Errorf("elicitation: result %s, error %q", res, msg)
			}
			res, msg = relayScript(t, c, `return sdk.ev.get_roots_list()`)
			if !strings.Contains(res, "file:///srv/toolscript-test-root") {
				t.Errorf("roots: result %s, error %q", res, msg)
			}
		})
	}
}

// TestGatewayClientWithoutCapabilities: a client that declared none of
// sampling, elicitation and roots gets a clear error in the script, at
// once, not a hang.
func TestGatewayClientWithoutCapabilities(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	ev := "--mcp=ev=" + testupstreams.Shell(testupstreams.Everything(t))
	for _, over := range []string{"stdio", "http"} {
		t.Run(over, func(t *testing.T) {
			c := gatewayClient(t, over, nil, "--no-io", ev)
			for fn, want := range map[string]string{
				"trigger_sampling_request":    "the client of this call does not support sampling",
				"trigger_elicitation_request": "the client of this call does not support elicitation",
			} {
				res, msg := relayScript(t, c, `local ok, err = pcall(sdk.ev.`+fn+`, {`+map[bool]string{true: `prompt = "x"`}[fn == "trigger_sampling_request"]+`}) return { ok, tostring(err) }`)
				if !strings.Contains(res, `[false,`) || !strings.Contains(res, want) {
					t.Errorf("%s: result %s, error %q; want an error saying %q", fn, res, msg, want)
				}
			}
		})
	}
}

// TestGatewayUnattributableRequest: over a stdio upstream nothing in a
// request says which call it serves. While a call of another execution is
// in flight on the same server, a sampling request is refused with an
// error saying why, and the client is not asked: toolscript does not
// guess.
func TestGatewayUnattributableRequest(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	ev := "--mcp=ev=" + testupstreams.Shell(testupstreams.Everything(t))
	s := &sampler{}
	c := gatewayClient(t, "stdio", []client.ClientOption{client.WithSamplingHandler(s)}, "--no-io", ev)
	ctx := testwait.Context(t)
	// A long operation, in flight on the upstream once the upstream has
	// reported its first step.
	longCtx, stopLong := context.WithCancel(ctx)
	defer stopLong()
	stepped := make(chan struct{})
	var once sync.Once
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if m, _ := n.Params.AdditionalFields["message"].(string); strings.HasPrefix(m, "sdk.ev.trigger_long_running_operation: ") {
			once.Do(func() { close(stepped) })
		}
	})
	go c.CallTool(longCtx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "execute_script", Meta: &mcp.Meta{ProgressToken: "long"},
		Arguments: map[string]any{"script": `return sdk.ev.trigger_long_running_operation({ duration = 60, steps = 60 })`, "timeout_ms": 120000}}})
	select {
	case <-stepped:
	case <-ctx.Done():
		t.Fatal("the long operation reported no step")
	}
	res, msg := relayScript(t, c, `local ok, err = pcall(sdk.ev.trigger_sampling_request, { prompt = "x" }) return { ok, tostring(err) }`)
	if !strings.Contains(res, "[false,") || !strings.Contains(res, "calls of different scripts are in flight on its stdio connection") {
		t.Errorf("result %s, error %q: want a refusal", res, msg)
	}
	if n := s.calls.Load(); n != 0 {
		t.Errorf("the client was asked %d times", n)
	}
}

// countingElicitor answers elicitations like elicitor and counts them.
type countingElicitor struct{ calls atomic.Int32 }

func (e *countingElicitor) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	e.calls.Add(1)
	return elicitor{}.Elicit(ctx, req)
}

// hostedGatewayClient is an initialized mcp-go client, made with opts, of
// the hosted server at url as the user of token, on protocol 2025-11-25.
func hostedGatewayClient(t *testing.T, url, token string, opts ...client.ClientOption) *client.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, append(opts, client.WithProtocolVersion("2025-11-25"))...)
	if _, err := testclient.Start(t, c, ""); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestGatewayRelayStaysWithItsUser: hosted, one stdio upstream shared by
// Alice and Bob. Bob's slow call is in flight; Alice's tool answers at
// once and asks for input a moment later, outside any call. Nothing in
// the request says whose it is, so it is refused: Bob's client (whose
// execution is the only one in flight) is never asked, nor Alice's, and
// the upstream gets toolscript's error, not Bob's answer.
func TestGatewayRelayStaysWithItsUser(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	upstreamLog := filepath.Join(t.TempDir(), "pyserver.log")
	t.Setenv("PYSERVER_LOG", upstreamLog)
	iss, auth := issuerArgs(t)
	p := startServe(t, t.TempDir(), append(auth, "--no-io", "--mcp=py="+testupstreams.Shell(testupstreams.Python(t)))...)
	aliceAsked, bobAsked := &countingElicitor{}, &countingElicitor{}
	alice := hostedGatewayClient(t, p.url, iss.Token(t, "ES256", "alice"), client.WithElicitationHandler(aliceAsked))
	bob := hostedGatewayClient(t, p.url, iss.Token(t, "ES256", "bob"), client.WithElicitationHandler(bobAsked))
	ctx := testwait.Context(t)
	logHas := func(prefix string) string {
		b, _ := os.ReadFile(upstreamLog)
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, prefix) {
				return line
			}
		}
		return ""
	}

	bobCtx, stopBob := context.WithCancel(ctx)
	defer stopBob()
	go bob.CallTool(bobCtx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "execute_script",
		Arguments: map[string]any{"script": `return sdk.py.sleep({ seconds = 60, tag = "bob" })`, "timeout_ms": 120000}}})
	testwait.Until(t, "bob's sleep started", func() bool { return logHas("started sleep bob") != "" })

	signal := filepath.Join(t.TempDir(), "ask-now")
	if res, msg := relayScript(t, alice, `return sdk.py.late_elicit({ signal = `+luauString(signal)+` })`); res != `"answered"` {
		t.Fatalf("Alice's call: result %s, error %q", res, msg)
	}
	testfile.Write(t, signal, "")
	testwait.Until(t, "the late elicitation logged", func() bool { return logHas("late_elicit ") != "" })
	outcome := logHas("late_elicit ")
	if !strings.HasPrefix(outcome, "late_elicit refused ") || !strings.Contains(outcome, "which has carried calls of more than one client") {
		t.Errorf("the upstream's elicitation: %q; want toolscript's refusal", outcome)
	}
	if n := bobAsked.calls.Load(); n != 0 {
		t.Errorf("Bob's client was asked Alice's question %d times", n)
	}
	if n := aliceAsked.calls.Load(); n != 0 {
		t.Errorf("Alice's client was asked %d times, for a request nothing ties to her", n)
	}
}
