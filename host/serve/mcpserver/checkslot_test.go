package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/sdk/sdkdocs"
	"github.com/toolscript/toolscript/host/serve/mcpserver"
	"github.com/toolscript/toolscript/host/serve/metrics"
	"github.com/toolscript/toolscript/internal/testrpc"
)

// heldChecker is a checker whose checks say they started, then wait until
// released (or their context ends).
type heldChecker struct{ started, release chan struct{} }

func (c heldChecker) CheckScript(ctx context.Context, _ *sdkdocs.Docs, _ []byte, _ bool) (*mcpserver.CheckReport, error) {
	c.started <- struct{}{}
	select {
	case <-c.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &mcpserver.CheckReport{}, nil
}

func (heldChecker) MaxTypedBytes() int { return 1 << 16 }

// checkCall is a tools/call request of check_script.
func checkCall(id, script string) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
		"params": map[string]any{"name": mcpserver.ToolCheckScript, "arguments": map[string]any{"script": script}}})
	return string(b)
}

// TestHTTPCheckHoldsASlot: in hosted mode a check holds one of its user's
// slots as an execution does: with alice's one slot taken by a check, her
// execution is refused, and with it taken by an execution, her check is;
// both refusals are the JSON-RPC error of a busy user, counted; bob is
// served meanwhile.
func TestHTTPCheckHoldsASlot(t *testing.T) {
	checker := heldChecker{started: make(chan struct{}, 4), release: make(chan struct{})}
	h := startHosted(t, hostedOptions{stateless: true, maxRunning: 4, perUser: 1, queueWait: 100 * time.Millisecond, checker: checker})
	refused := func(who string, m map[string]any) {
		t.Helper()
		e, _ := m["error"].(map[string]any)
		if e == nil || !strings.Contains(fmt.Sprint(e["message"]), "too many executions at once for this user") {
			t.Errorf("%s: %v, want the JSON-RPC error of a busy user", who, m)
		}
	}

	// The check's answer has no headers before it ends: posted aside.
	checked := make(chan map[string]any, 1)
	go func() {
		checked <- response(t, testrpc.Messages(h.post(t, "alice", "", checkCall("check", "return 1"))))
	}()
	<-checker.started // alice's slot is taken by her check
	refused("alice's execution beside her check", response(t, testrpc.Messages(h.post(t, "alice", "", testrpc.ToolCall("run", "return 1")))))
	close(checker.release)
	if m := <-checked; m["error"] != nil {
		t.Fatalf("alice's check: %v", m)
	}

	running := testrpc.Messages(h.post(t, "alice", "", testrpc.ToolCall("long", busy)))
	testrpc.Next(t, running) // alice's slot is taken by her execution
	refused("alice's check beside her execution", response(t, testrpc.Messages(h.post(t, "alice", "", checkCall("check2", "return 1")))))
	if m := response(t, testrpc.Messages(h.post(t, "bob", "", checkCall("b", "return 1")))); m["error"] != nil {
		t.Errorf("bob's check: %v", m)
	}
	if got := counter(t, h.metrics, "toolscript_limit_refusals_total", "limit", metrics.LimitUserSlots); got != 2 {
		t.Errorf("%v user_slots refusals counted, want 2", got)
	}
	h.post(t, "alice", "", cancel("long"))
	ended(t, running)
}
