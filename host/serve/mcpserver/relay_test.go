package mcpserver

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolscript/toolscript/internal/testrpc"
)

// relayServer is a Server with a tool, ask_roots, that asks the client of
// its call for its roots (a request of the server's) and returns the
// answer as text.
func relayServer(t *testing.T) *Server {
	t.Helper()
	s := newServer(t, Config{})
	s.mcp.AddTool(mcp.NewTool("ask_roots"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := s.request(ctx, callFrom(ctx), string(mcp.MethodListRoots), nil)
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		return mcp.NewToolResultText(string(res)), nil
	})
	return s
}

const askRoots = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ask_roots"}}`

// TestRelayStdio: a request of the server's goes out on the connection of
// the call it serves, and the client's answer, found by its id, completes
// the call; an answer to nothing is ignored.
func TestRelayStdio(t *testing.T) {
	inW, lines, end := servePipes(relayServer(t))
	next := func() map[string]any {
		t.Helper()
		if !lines.Scan() {
			t.Fatal("no message")
		}
		var m map[string]any
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	io.WriteString(inW, `{"jsonrpc":"2.0","id":"nobody","result":{}}`+"\n"+askRoots+"\n")
	req := next()
	if req["method"] != "roots/list" || req["id"] == nil {
		t.Fatalf("request %v", req)
	}
	id, _ := json.Marshal(req["id"])
	io.WriteString(inW, `{"jsonrpc":"2.0","id":`+string(id)+`,"result":{"roots":[{"uri":"file:///work"}]}}`+"\n")
	resp := next()
	if text, _ := json.Marshal(resp["result"]); resp["id"] != 7.0 || !strings.Contains(string(text), `file:///work`) {
		t.Errorf("response %v", resp)
	}
	end()
}

// TestRelayHTTP: over HTTP the request goes out on the call's stream of
// events, and the client answers it with a POST of its own, in the same
// scope.
func TestRelayHTTP(t *testing.T) {
	s := relayServer(t)
	h, err := s.HTTPHandler(HTTPConfig{Stateless: true})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	defer ts.Close()
	post := func(body string) *http.Response {
		t.Helper()
		resp, err := http.Post(ts.URL, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	call := post(askRoots)
	defer call.Body.Close()
	msgs := testrpc.Messages(call)
	req := testrpc.Next(t, msgs)
	if req["method"] != "roots/list" {
		t.Fatalf("request %v", req)
	}
	id, _ := json.Marshal(req["id"])
	if answer := post(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"roots":[{"uri":"file:///work"}]}}`); answer.StatusCode != http.StatusAccepted {
		t.Errorf("the answer got %d", answer.StatusCode)
	}
	resp := testrpc.Next(t, msgs)
	if text, _ := json.Marshal(resp["result"]); resp["id"] != 7.0 || !strings.Contains(string(text), `file:///work`) {
		t.Errorf("response %v", resp)
	}
}
